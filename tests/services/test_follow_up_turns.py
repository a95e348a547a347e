"""Where a follow-up's turn goes in the note's bytes, and which thread it has."""

from __future__ import annotations

from askvault.core.followup import next_follow_up, thread_of
from askvault.services.inbox.follow_up_turns import with_turn

NOTE = (
    '---\nquestion: "How do I hide the ribbon?"\nstatus: answered\n---\n'
    "> [!question]\n> q\n\nAnswer.\n"
)


def test_the_turn_goes_right_after_the_follow_up_and_nothing_else_moves() -> None:
    data = (NOTE + "## Follow-up\nand on mobile?\n## Mine\nkeep\n").encode()
    follow_up = next_follow_up(data.decode())
    assert follow_up is not None
    new = with_turn(data, follow_up, "%% askvault: turn 2 %%\n\nT.\n")
    before, _, after = new.partition(b"%% askvault: turn 2 %%")
    assert before.rstrip(b"\n") + b"\n" == data[: data.index(b"## Mine")]
    assert after.endswith(b"\n## Mine\nkeep\n")


def test_a_follow_up_with_no_final_newline_or_crlf_lines_keeps_its_bytes() -> None:
    data = (NOTE + "## Follow-up\r\nand on mobile?").encode()
    follow_up = next_follow_up(data.decode())
    assert follow_up is not None
    new = with_turn(data, follow_up, "%% askvault: turn 2 %%\n")
    assert new.startswith(data)


def test_the_thread_is_the_first_question_then_the_earlier_follow_ups() -> None:
    text = (
        NOTE + "## Follow-up\nand on mobile?\n%% askvault: turn 2 %%\nA.\n## Follow-up\nand iPad?\n"
    )
    thread = thread_of("a.md", text)
    assert thread is not None
    assert thread.earlier == ["How do I hide the ribbon?", "and on mobile?"]
    assert thread.number == 3 and thread.follow_up.question == "and iPad?"
    assert thread_of("a.md", NOTE) is None


def test_a_follow_up_under_an_unfinished_answer_waits_for_it() -> None:
    for status in ("answering", "waiting", "failed"):
        text = NOTE.replace("status: answered", f"status: {status}") + "## Follow-up\nand?\n"
        assert thread_of("a.md", text) is None
    assert thread_of("a.md", NOTE.replace("answered", "stale") + "## Follow-up\nand?\n")
