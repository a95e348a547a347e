"""Which notes Obsidian shows, from its workspace file."""

from __future__ import annotations

import json

from askvault.core.workspace import WorkspaceFocus, workspace_focus


def _leaf(leaf_id: str, file: str, kind: str = "markdown") -> dict:
    return {"id": leaf_id, "type": "leaf", "state": {"type": kind, "state": {"file": file}}}


# The shape Obsidian 1.x writes: splits, tabs and leaves, sidebars, a popped-out window.
WORKSPACE = {
    "main": {
        "id": "m",
        "type": "split",
        "children": [
            {
                "id": "t1",
                "type": "tabs",
                "children": [_leaf("a", "Welcome.md"), _leaf("b", "queries/inbox/Q.md")],
            },
            {"id": "t2", "type": "tabs", "children": [_leaf("c", "Links.md")]},
        ],
        "direction": "vertical",
    },
    "left": {
        "id": "l",
        "type": "split",
        "children": [
            {
                "id": "t3",
                "type": "tabs",
                "children": [
                    {
                        "id": "e",
                        "type": "leaf",
                        "state": {"type": "file-explorer", "state": {"sortOrder": "alphabetical"}},
                    }
                ],
            }
        ],
    },
    "right": {
        "id": "r",
        "type": "split",
        "children": [_leaf("o", "Welcome.md", "outline")],
    },
    "floating": {
        "id": "f",
        "type": "floating",
        "children": [{"id": "w", "type": "window", "children": [_leaf("p", "Popped.md")]}],
    },
    "active": "b",
    "lastOpenFiles": ["queries/inbox/Q.md", "Old.md"],
}


def test_the_focused_note_and_every_note_shown_are_read_from_obsidians_layout() -> None:
    focus = workspace_focus(json.dumps(WORKSPACE).encode("utf-8"))
    assert focus == WorkspaceFocus(
        "queries/inbox/Q.md",
        frozenset({"Welcome.md", "queries/inbox/Q.md", "Links.md", "Popped.md"}),
    )


def test_a_focused_sidebar_or_a_missing_active_leaf_focuses_no_note() -> None:
    for active in ("e", "gone", None, 3):
        doc = {**WORKSPACE, "active": active}
        focus = workspace_focus(json.dumps(doc).encode("utf-8"))
        assert focus is not None and focus.active is None


def test_what_is_not_a_workspace_tells_nothing() -> None:
    assert workspace_focus(b"") is None
    assert workspace_focus(b"{not json") is None
    assert workspace_focus(b"[1, 2]") is None
    assert workspace_focus(b"\xff\xfe") is None
    deep = b'{"main": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert workspace_focus(deep) in (None, WorkspaceFocus(None, frozenset()))
    odd = {"main": {"type": "leaf", "id": 1, "state": {"state": {"file": ["x"]}}}, "active": 1}
    assert workspace_focus(json.dumps(odd).encode()) == WorkspaceFocus(None, frozenset())
