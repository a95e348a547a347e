"""Which notes Obsidian shows, read from its workspace file (pure).

Obsidian keeps its layout in `.obsidian/workspace.json` (`workspace-mobile.json` on a phone
or tablet) and rewrites it whenever a note is opened, closed or focused: a tree of splits,
tabs and leaves under `main` (also `left`, `right` and popped-out `floating` windows), each
leaf `{"id": ..., "type": "leaf", "state": {"type": "markdown", "state": {"file":
"<vault path>"}}}`, and `active`, the id of the focused leaf. Nothing here trusts the file:
what is not that shape is left out, and a file that is not JSON tells nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Deeper trees than this are not a layout (Obsidian nests a few levels).
MAX_DEPTH = 64


@dataclass(frozen=True)
class WorkspaceFocus:
    """The vault path of the note in the focused leaf (None: no note focused) and of every
    note shown in a leaf."""

    active: str | None
    shown: frozenset[str]


def workspace_focus(data: bytes) -> WorkspaceFocus | None:
    """The notes a workspace file shows, or None when `data` is not a workspace."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    files: dict[str, str] = {}  # leaf id -> its file
    shown: set[str] = set()
    _leaves(doc, files, shown, 0)
    active = doc.get("active")
    return WorkspaceFocus(files.get(active) if isinstance(active, str) else None, frozenset(shown))


def _leaves(node: Any, files: dict[str, str], shown: set[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(node, list):
        for item in node:
            _leaves(item, files, shown, depth + 1)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "leaf":
        state = node.get("state")
        inner = state.get("state") if isinstance(state, dict) else None
        file = inner.get("file") if isinstance(inner, dict) else None
        if isinstance(file, str) and file:
            shown.add(file)
            if isinstance(node.get("id"), str):
                files[node["id"]] = file
        return
    for value in node.values():
        if isinstance(value, dict | list):
            _leaves(value, files, shown, depth + 1)
