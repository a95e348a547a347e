"""Where the user is in Obsidian: the focused note of its workspace files (core/workspace).

Obsidian rewrites `.obsidian/workspace.json` (`workspace-mobile.json` on a phone, when the
vault syncs it) whenever a note is opened, closed or focused; each file is read again only
when its size, time or inode change, and one that cannot be read, or is not a workspace,
tells nothing.
"""

from __future__ import annotations

import os

from askvault.adapters.vault import read_small_file, resolve_inside
from askvault.core.settling import Focus
from askvault.core.workspace import WorkspaceFocus, workspace_focus
from askvault.errors import AskvaultError
from askvault.settings import Settings

WORKSPACE_FILES = (".obsidian/workspace.json", ".obsidian/workspace-mobile.json")
# A workspace file is a few kilobytes; anything near this is not one.
WORKSPACE_MAX_BYTES = 1 << 20


class ObsidianFocus:
    """The notes Obsidian focuses in one vault, from its workspace files."""

    def __init__(self, settings: Settings) -> None:
        self.root = settings.vault_path
        self._read: dict[str, tuple[tuple[int, int, int], WorkspaceFocus | None]] = {}

    def current(self) -> list[WorkspaceFocus]:
        """What each workspace file of the vault says now (none: Obsidian is not used
        here, or its files cannot be read)."""
        found = []
        for rel in WORKSPACE_FILES:
            focus = self._focus_of(rel)
            if focus is not None:
                found.append(focus)
        return found

    def _focus_of(self, rel: str) -> WorkspaceFocus | None:
        try:
            st = os.stat(resolve_inside(self.root, rel))
        except (OSError, AskvaultError):
            self._read.pop(rel, None)
            return None
        stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
        known = self._read.get(rel)
        if known is not None and known[0] == stamp:
            return known[1]
        data = read_small_file(self.root, rel, WORKSPACE_MAX_BYTES)
        focus = workspace_focus(data) if data is not None else None
        self._read[rel] = (stamp, focus)
        return focus


def focus_on(rel: str, workspaces: list[WorkspaceFocus]) -> Focus:
    """Is the user on the note `rel` (it is the focused note of a workspace file), on
    another one, or is it unknown (no workspace file)?"""
    if not workspaces:
        return "unknown"
    return "editing" if any(w.active == rel for w in workspaces) else "elsewhere"
