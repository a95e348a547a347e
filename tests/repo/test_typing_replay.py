"""The typing replay's model of Obsidian (tests/support/typing_replay.py): what a session's
steps write into the vault, and when."""

from __future__ import annotations

import pytest

from support.typing_replay import Action, Session, timeline_of


def _session(*steps: dict[str, object]) -> Session:
    return Session("t", "a test session", list(steps), 10.0)


def test_typed_text_is_autosaved_and_the_workspace_written_after_the_focus_moves() -> None:
    timeline = timeline_of(
        _session(
            {"focus": "Welcome.md"},
            {"create": "Q.md"},
            {"type": "Hi?", "cps": 10},
            {"pause": 5},
        )
    )
    assert [(a.kind, a.name, a.text, a.active) for a in timeline.actions] == [
        ("workspace", "", "", "Welcome.md"),  # `focus`: written at once
        ("save", "Q.md", "", None),  # the new, empty note
        ("workspace", "", "", "queries/inbox/Q.md"),  # 2 s after the focus moved
        ("save", "Q.md", "Hi?", None),  # 2 s after the first keystroke
    ]
    assert [a.at for a in timeline.actions] == pytest.approx([0.0, 0.0, 2.0, 2.1])
    assert timeline.finished_at == pytest.approx(0.3) and timeline.end == pytest.approx(5.3)
    assert timeline.final_question == "Hi?"


def test_leaving_the_note_saves_it_at_once() -> None:
    timeline = timeline_of(
        _session({"create": "Q.md"}, {"type": "Why", "cps": 10}, {"switch": "Welcome.md"})
    )
    saves = [a for a in timeline.actions if a.kind == "save"]
    assert saves[-1] == Action(pytest.approx(0.3), "save", "Q.md", "Why")  # type: ignore[arg-type]


def test_a_synced_note_arrives_whole_with_an_older_file_time() -> None:
    """A `sync` step also holds a `name`: it is a sync, not another kind of step."""
    timeline = timeline_of(
        _session({"pause": 4}, {"sync": "Is it done?", "name": "Phone.md", "age": 30})
    )
    assert timeline.actions == [
        Action(4.0, "save", "Phone.md", "Is it done?", mtime_at=-26.0),
    ]
    assert timeline.final_question == "Is it done?"


def test_an_unknown_step_is_refused_with_the_session_named() -> None:
    with pytest.raises(ValueError, match=r"^t: unknown step \{'dance': 1\}"):
        timeline_of(_session({"create": "Q.md"}, {"dance": 1}))
