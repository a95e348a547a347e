"""When a question note is finished: how it ends, where the user is, how long it is quiet."""

from __future__ import annotations

import pytest

from askvault.core.settling import NoteVersion, SettleTimes, ending_of, settle_wait_s

TIMES = SettleTimes(settle_s=3.0, unfinished_settle_s=60.0)


@pytest.mark.parametrize(
    ("question", "ending"),
    [
        ("How do embeds work?", "question"),
        ("Comment afficher le nombre de mots ?", "question"),  # French spacing
        ("ブロックを埋め込むには？", "question"),  # full-width
        ("كيف أضيف وسمًا؟", "question"),  # Arabic
        ("Πώς λειτουργούν οι ενσωματώσεις;", "question"),  # Greek question mark
        ('Is it "pinned?"', "question"),  # closing quote after the mark
        ("What does **embed** mean?**", "question"),  # closing emphasis
        ("(How do I pin a tab?)", "question"),
        ("Explain how embeds work.", "sentence"),
        ("Fix my note!", "sentence"),
        ("ノートを埋め込む。", "sentence"),
        ("How do I embed", "open"),
        ("how to hide the ribbon on mobile", "open"),
        ("How is rhubarb forced? (Q before)", "open"),
        ("", "open"),
        ("  \n", "open"),
    ],
)
def test_ending_of_tells_a_question_mark_a_sentence_end_and_an_open_end(
    question: str, ending: str
) -> None:
    assert ending_of(question) == ending


def test_a_question_mark_at_the_end_settles_in_seconds_wherever_the_user_is() -> None:
    for focus in ("editing", "elsewhere", "unknown"):
        assert settle_wait_s(NoteVersion("Why?", 3.0, focus), TIMES) <= 0  # type: ignore[arg-type]
    assert settle_wait_s(NoteVersion("Why?", 1.0, "editing"), TIMES) == 2.0


def test_a_full_stop_settles_in_seconds_only_once_the_user_is_not_on_the_note() -> None:
    done = "I keep one daily note per day."
    assert settle_wait_s(NoteVersion(done, 10.0, "editing"), TIMES) == 50.0
    assert settle_wait_s(NoteVersion(done, 3.0, "elsewhere"), TIMES) <= 0
    assert settle_wait_s(NoteVersion(done, 3.0, "unknown"), TIMES) <= 0


def test_an_open_end_waits_the_long_quiet_even_when_the_user_left_the_note() -> None:
    fragment = "Which core plugin shows"
    assert settle_wait_s(NoteVersion(fragment, 40.0, "elsewhere"), TIMES) == 20.0
    assert settle_wait_s(NoteVersion(fragment, 60.0, "editing"), TIMES) <= 0


def test_removing_draft_true_says_the_question_is_finished() -> None:
    released = NoteVersion("list my notes about sourdough", 3.0, "editing", was_draft=True)
    assert settle_wait_s(released, TIMES) <= 0


def test_the_long_quiet_is_never_shorter_than_the_short_one() -> None:
    times = SettleTimes(settle_s=5.0, unfinished_settle_s=1.0)
    assert settle_wait_s(NoteVersion("How do I", 4.0, "editing"), times) == 1.0
