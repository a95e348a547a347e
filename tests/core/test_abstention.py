"""Refusals as small models write them, in their paraphrases and in other languages."""

from __future__ import annotations

import pytest

from askvault.core.abstention import (
    CALIBRATION_MIN,
    CALIBRATION_SAMPLE,
    MEASURED_MAX_DISTANCE,
    Calibration,
    Cutoff,
    calibrated_cutoff,
    calibration_due,
    calibration_sample,
    cutoff_in_force,
    distance_cutoff,
    is_no_answer,
    is_refusal,
    too_far,
)
from askvault.core.prompt import NO_ANSWER_SENTENCE

REFUSALS = [
    NO_ANSWER_SENTENCE,
    "The notes provided do not contain the answer to this question.",
    "  the excerpts do not contain an answer.",
    "The wifi password is not mentioned in the provided excerpts.",
    "I couldn't find any information about your dentist appointment in the notes.",
    "There is no information about Jupiter's moons in the excerpts.",
    "The excerpts don't say how much Sync costs in euros.",
    "I don't know, the notes do not cover this.",
    "Die Notizen enthalten keine Antwort auf diese Frage.",
    "Les notes ne contiennent pas la réponse.",
    "Las notas no contienen la respuesta.",
    "As notas não contêm a resposta.",
    "Gli appunti non contengono la risposta.",
    "De notities bevatten geen antwoord.",
    "笔记中没有提到这个问题的答案。",
]
ANSWERS = [
    "The notes contain the answer: embeds show a note inline [[Embeds]].",
    "Nested properties are not supported; use source mode to edit them.",
    "Obsidian does not sync your .git folder because hidden folders are skipped.",
    "Fine-grained permissions are not supported yet, every member can edit.",
]


@pytest.mark.parametrize("sentence", REFUSALS)
def test_refusals_are_recognised(sentence: str) -> None:
    assert is_refusal(sentence) and is_no_answer(sentence)


@pytest.mark.parametrize("sentence", ANSWERS)
def test_answers_with_a_negation_are_not_refusals(sentence: str) -> None:
    assert not is_no_answer(sentence)


def test_a_reply_with_an_answer_beside_a_refusal_is_not_a_no_answer() -> None:
    assert not is_no_answer("Embeds show a note inline. The notes do not contain the answer to X.")


def test_an_empty_reply_is_not_a_refusal() -> None:
    assert not is_no_answer("")


def test_distance_cut_off_is_the_setting_when_set() -> None:
    assert distance_cutoff(0.4, "nomic-embed-text") == 0.4
    assert distance_cutoff(0.4, "all-minilm") == 0.4


def test_distance_cut_off_defaults_to_the_measured_value_of_the_model_any_tag() -> None:
    assert distance_cutoff(0.0, "all-minilm") == MEASURED_MAX_DISTANCE["all-minilm"]
    assert distance_cutoff(0.0, "all-minilm:latest") == MEASURED_MAX_DISTANCE["all-minilm"]
    assert distance_cutoff(0.0, "All-MiniLM:l6-v2") == MEASURED_MAX_DISTANCE["all-minilm"]


def test_nomic_embed_text_has_its_measured_cut_off_under_any_tag() -> None:
    # Chosen on six read answer sets (docs/decisions.md, "nomic-embed-text's cut-off: 0.31").
    assert MEASURED_MAX_DISTANCE["nomic-embed-text"] == 0.31
    for name in ("nomic-embed-text", "nomic-embed-text:latest", "Nomic-Embed-Text:v1.5"):
        assert distance_cutoff(0.0, name) == 0.31
        assert cutoff_in_force(0.0, name) == Cutoff(
            0.31, "measured", "measured for nomic-embed-text"
        )


def test_no_distance_cut_off_for_a_model_never_measured_nor_calibrated() -> None:
    assert distance_cutoff(0.0, "fake-embed") is None
    cutoff = cutoff_in_force(0.0, "mxbai-embed-large")
    assert (cutoff.value, cutoff.source) == (None, "none")
    assert cutoff.detail.startswith("none yet")


def _calibration(cutoff: float | None, titles: int = 120) -> Calibration:
    return Calibration("m:sha:384", cutoff, titles, notes=173, chunking="v5")


def test_a_calibrated_cut_off_applies_to_a_model_never_measured() -> None:
    assert cutoff_in_force(0.0, "mxbai-embed-large", _calibration(0.4123)) == Cutoff(
        0.4123, "calibrated", "calibrated from 120 note titles"
    )


def test_a_calibration_that_found_too_few_titles_is_no_cut_off_and_says_why() -> None:
    cutoff = cutoff_in_force(0.0, "mxbai-embed-large", _calibration(None, titles=7))
    assert (cutoff.value, cutoff.source) == (None, "none")
    assert f"7 note titles to calibrate from, {CALIBRATION_MIN} are needed" in cutoff.detail


def test_the_setting_wins_over_the_measured_value_and_the_measured_over_a_calibration() -> None:
    assert cutoff_in_force(0.42, "all-minilm", _calibration(0.9)).source == "setting"
    assert cutoff_in_force(0.42, "mxbai-embed-large", _calibration(0.9)).value == 0.42
    measured = cutoff_in_force(0.0, "all-minilm", _calibration(0.9))
    assert (measured.value, measured.source) == (0.58, "measured")


def test_a_withheld_answer_names_where_its_cut_off_comes_from() -> None:
    assert cutoff_in_force(0.3, "x").reason_words == "of `queries.max_distance`"
    assert cutoff_in_force(0.0, "all-minilm").reason_words == (
        "measured for all-minilm (`queries.max_distance` sets another)"
    )
    assert cutoff_in_force(0.0, "x", _calibration(0.5)).reason_words == (
        "calibrated from 120 note titles (`queries.max_distance` sets another)"
    )


def test_the_calibration_sample_is_the_same_for_the_same_notes_in_any_order() -> None:
    paths = [f"n{i:03}.md" for i in range(200)]
    sample = calibration_sample(paths)
    assert len(sample) == CALIBRATION_SAMPLE == len(set(sample))
    assert set(sample) <= set(paths)
    assert calibration_sample(list(reversed(paths)) + paths[:5]) == sample  # order, repeats
    assert sample != sorted(sample)  # drawn, not the first in order
    assert calibration_sample(paths, seed=23) != sample


def test_a_small_vault_s_sample_is_every_note() -> None:
    assert sorted(calibration_sample(["b.md", "a.md", "c.md"])) == ["a.md", "b.md", "c.md"]
    assert calibration_sample([]) == []


def test_a_calibration_is_due_when_missing_or_made_for_other_vectors_or_chunks() -> None:
    stored = _calibration(0.5)
    assert calibration_due(None, fingerprint="m:sha:384", chunking="v5", notes=173)
    assert calibration_due(stored, fingerprint="m:other:384", chunking="v5", notes=173)
    assert calibration_due(stored, fingerprint="m:sha:384", chunking="v6", notes=173)
    assert not calibration_due(stored, fingerprint="m:sha:384", chunking="v5", notes=173)


def test_a_calibration_is_not_due_on_every_edit_only_when_the_notes_grow_or_shrink_a_lot() -> None:
    stored = _calibration(0.5)  # made with 173 notes: a quarter is 43.25
    for notes in (173, 174, 130, 216):
        assert not calibration_due(stored, fingerprint="m:sha:384", chunking="v5", notes=notes)
    for notes in (129, 217, 0):
        assert calibration_due(stored, fingerprint="m:sha:384", chunking="v5", notes=notes)
    tiny = Calibration("m:sha:384", None, 3, notes=3, chunking="v5")
    assert calibration_due(tiny, fingerprint="m:sha:384", chunking="v5", notes=4)
    assert not calibration_due(tiny, fingerprint="m:sha:384", chunking="v5", notes=3)


def test_too_far_only_beyond_a_known_cut_off() -> None:
    assert too_far(0.61, 0.58)
    assert not too_far(0.58, 0.58)  # at the cut-off is still close
    assert not too_far(0.2, 0.58)
    assert not too_far(None, 0.58)  # words-only search: no distance
    assert not too_far(0.99, None)  # no cut-off in force


def test_calibrated_cut_off_is_the_quantile_of_the_held_out_distances() -> None:
    held_out = [i / 100 for i in range(101)]  # 0.00 .. 1.00
    assert calibrated_cutoff(held_out, quantile=0.95) == pytest.approx(0.95)
    assert calibrated_cutoff(held_out, quantile=0.5) == pytest.approx(0.5)


def test_calibrated_cut_off_interpolates_between_neighbours() -> None:
    held_out = [0.2] * 10 + [0.6] * 11  # 21 values: position 19.5 of 20 at quantile 0.975
    assert calibrated_cutoff(held_out, quantile=0.975) == pytest.approx(0.6)
    assert calibrated_cutoff([0.0, 1.0] * 10 + [1.0], quantile=0.5) == pytest.approx(1.0)


def test_calibrated_cut_off_ignores_order_and_non_finite_distances() -> None:
    values = [0.1 * (i % 7) for i in range(CALIBRATION_MIN)]
    shuffled = list(reversed(values)) + [float("nan"), float("inf")]
    assert calibrated_cutoff(shuffled) == calibrated_cutoff(values)


def test_calibrated_cut_off_needs_enough_distances() -> None:
    assert calibrated_cutoff([0.5] * (CALIBRATION_MIN - 1)) is None
    assert calibrated_cutoff([0.5] * (CALIBRATION_MIN - 1) + [float("nan")]) is None
    assert calibrated_cutoff([0.5] * CALIBRATION_MIN) == pytest.approx(0.5)


def test_the_distance_gate_applies_once_nearly_every_chunk_has_a_vector() -> None:
    from askvault.core.abstention import GATE_MIN_SHARE, gate_applies

    assert GATE_MIN_SHARE == 0.95
    assert gate_applies(None) and gate_applies(1.0) and gate_applies(0.95)
    assert not gate_applies(0.949) and not gate_applies(0.0)
