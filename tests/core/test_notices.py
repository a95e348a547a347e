"""Specs for the notices askvault adds to its own answer notes (pure text)."""

from __future__ import annotations

from askvault.core.answer_note import AnswerNote, render_answer_note
from askvault.core.notices import (
    ARCHIVE_WARNING_TITLE,
    what_it_says,
    with_archive_warning,
    without_archive_warning,
)

NOTE = render_answer_note(
    AnswerNote(
        question="What is it?",
        status="answered",
        asked="2026-01-01",
        answer="It is [[A]].",
        trace=("1 page(s) retrieved", "time: retrieval 3 ms"),
    )
)


def test_archive_warning_goes_after_the_question_and_round_trips() -> None:
    warned = with_archive_warning(NOTE, "Operation not permitted\n(queries/archive)")
    assert (
        warned.index("> What is it?")
        < warned.index(ARCHIVE_WARNING_TITLE)
        < warned.index("It is [[A]].")
    )
    assert "could not archive the question: Operation not permitted (queries/archive)" in warned
    assert without_archive_warning(warned) == NOTE


def test_a_new_archive_reason_replaces_the_old_one() -> None:
    twice = with_archive_warning(with_archive_warning(NOTE, "first"), "second")
    assert twice.count(ARCHIVE_WARNING_TITLE) == 1 and "second" in twice
    assert "first" not in twice
    assert without_archive_warning(NOTE) == NOTE


def test_what_it_says_ignores_only_the_timing_line() -> None:
    other_time = NOTE.replace("time: retrieval 3 ms", "time: retrieval 9 ms")
    assert what_it_says(other_time) == what_it_says(NOTE)
    assert what_it_says(NOTE.replace("It is", "It was")) != what_it_says(NOTE)
