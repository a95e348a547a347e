"""Refusals as small models write them, in their paraphrases and in other languages."""

from __future__ import annotations

import pytest

from askvault.core.abstention import (
    CALIBRATION_MIN,
    MEASURED_MAX_DISTANCE,
    calibrated_cutoff,
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


def test_no_distance_cut_off_for_a_model_never_measured() -> None:
    assert distance_cutoff(0.0, "nomic-embed-text") is None


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
