"""core/verification.py: the request that asks whether the quoted passages answer the
question, and reading the verdict."""

from __future__ import annotations

import pytest

from askvault.core.citations import CitationReport, ClaimCheck
from askvault.core.verification import (
    JUDGE_SYSTEM_PROMPT,
    judge_messages,
    judged_claims,
    read_verdict,
    same_ground,
    same_values,
)

RIGHT = ClaimCheck(
    "Press Ctrl+Shift+T to reopen the tab.",
    "supported",
    1.0,
    source="Tabs#Reopen a closed tab",
    span="To close the active tab, press Ctrl+W. To reopen the tab you closed last, press Ctrl+Shift+T.",
    quote="To reopen the tab you closed last, press Ctrl+Shift+T.",
)
WEAK = ClaimCheck(
    "It also works on the tab menu.",
    "weak",
    0.5,
    source="Tabs#Reopen a closed tab",
    span="To reopen the tab you closed last, press Ctrl+Shift+T.",
)
UNSUPPORTED = ClaimCheck("Tabs are kept for ever.", "unsupported", 0.0)


def test_the_judge_sees_the_question_the_quote_the_note_holds_and_the_answer() -> None:
    system, user = judge_messages("how do i get a closed tab back", [RIGHT])
    assert system == {"role": "system", "content": JUDGE_SYSTEM_PROMPT}
    text = user["content"]
    assert text.startswith("Question: how do i get a closed tab back")
    # The quote copied from the note, not the window around it, nor the model's words.
    assert "> To reopen the tab you closed last, press Ctrl+Shift+T." in text
    assert "press Ctrl+W" not in text
    assert "Answer: Press Ctrl+Shift+T to reopen the tab." in text


def test_a_weak_claim_is_judged_on_its_closest_window_and_an_unsupported_one_not_at_all() -> None:
    assert judged_claims([RIGHT, WEAK, UNSUPPORTED]) == (RIGHT, WEAK)
    (_, user) = judge_messages("q", [WEAK])
    assert "> To reopen the tab you closed last, press Ctrl+Shift+T." in user["content"]


def test_one_passage_shared_by_two_claims_is_shown_once() -> None:
    twin = ClaimCheck("Ctrl+Shift+T reopens it.", "supported", 1.0, quote=RIGHT.quote)
    (_, user) = judge_messages("q", [RIGHT, twin])
    assert user["content"].count("> To reopen the tab") == 1


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ('{"verdict": "yes"}', "yes"),
        ('{"verdict":"no"}', "no"),
        ('  {"verdict": "NO"} ', "no"),
        ("yes", "yes"),
        ("No.", "no"),
        ('{"verdict": "yes", "why": "..."', "yes"),  # cut off by the token cap
        ('{"verdict": "maybe"}', None),
        ("", None),
        ("I think the passage is about closing tabs.", None),
    ],
)
def test_a_verdict_is_read_from_the_schema_s_json_or_a_bare_word(reply: str, verdict: str) -> None:
    assert read_verdict(reply).verdict == verdict


def _report(*quotes: str | None, verdict: str = "supported") -> CitationReport:
    return CitationReport(
        claims=tuple(
            ClaimCheck(f"claim {chr(97 + i)}", verdict, 0.9, quote=q, span=q)
            for i, q in enumerate(quotes)
        )
    )


def test_two_replies_on_the_same_sentence_of_the_notes_stand_on_the_same_ground() -> None:
    fit = "Zoom to fit: Shift+1."
    assert same_ground(_report(fit), _report("Zoom to  fit: shift+1."))  # space, case
    assert same_ground(_report(fit), _report(f"{fit} Zoom to selection: Shift+2."))
    assert same_ground(_report("other", fit), _report(fit))


def test_other_lines_or_nothing_supported_is_not_the_same_ground() -> None:
    assert not same_ground(_report("Zoom to fit: Shift+1."), _report("Shift+2 zooms in."))
    assert not same_ground(_report("Zoom to fit: Shift+1."), CitationReport())
    assert not same_ground(
        _report("Zoom to fit: Shift+1."), _report("Zoom to fit: Shift+1.", verdict="weak")
    )
    assert not same_ground(_report(None), _report(None))  # no quote is no ground


def _lead(sentence: str, verdict: str = "supported") -> CitationReport:
    return CitationReport(claims=(ClaimCheck(sentence, verdict, 0.9, quote=None, span=None),))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("The maximum file size on the Standard plan is 5 MB.", "You can sync up to 5 MB."),
        ("It is `Cmd + ;`.", "Press `Cmd/Ctrl+;` to add one."),  # spaces, Obsidian's either key
        ("Use `![[File.base#View]]`.", "Embed it as `![[file.base#view]]`."),  # case
    ],
)
def test_answering_claims_with_the_same_values_stand_on_the_same_ground(
    first: str, second: str
) -> None:
    """The same value taken from another sentence or a table row of the notes."""
    assert same_values(_lead(first).lead, _lead(second).lead)
    assert same_ground(_lead(first), _lead(second))


@pytest.mark.parametrize(
    ("first", "second", "verdict"),
    [
        ("You have 7 days to get a refund.", "You have 30 days to get a refund.", "supported"),
        ("Press `Shift+1`.", "Press `Shift+1` or `Shift+2`.", "supported"),  # one value more
        ("Press `Cmd+;`.", "Press `Ctrl+;`.", "supported"),  # another platform's key
        ("It is encrypted end to end.", "It is encrypted end to end.", "supported"),  # no value
        ("The limit is 5 MB.", "The limit is 5 MB.", "unsupported"),  # the second has no ground
    ],
)
def test_other_values_no_values_or_an_unsupported_second_claim_do_not_agree(
    first: str, second: str, verdict: str
) -> None:
    assert not same_values(_lead(first).lead, _lead(second, verdict).lead)
    assert not same_ground(_lead(first), _lead(second, verdict))


def test_a_weak_second_claim_agrees_but_a_weak_first_one_does_not() -> None:
    assert same_values(_lead("It is 5 MB.").lead, _lead("It is 5 MB.", "weak").lead)
    assert not same_values(_lead("It is 5 MB.", "weak").lead, _lead("It is 5 MB.").lead)
    assert not same_values(None, _lead("It is 5 MB.").lead)
