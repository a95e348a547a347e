"""The notes one answer reads from the vault, each read (and parsed) at most once.

The evidence pack checks freshness, answering checks that each page can still be read,
the citation checker needs the cited notes' headings and blocks, the ledger their
`sources:`: before issue 12 each of these read the file again. One `NoteReads` is made
per answer and handed down, so the text the freshness check saw is the text the
citations are judged on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from askvault.adapters.vault import read_note
from askvault.core.notes import parse_note
from askvault.errors import AskvaultError
from askvault.records import NoteFile, ParsedNote

ReadNote = Callable[[Path, str, int], NoteFile]


def _read_indexed_note(vault: Path, path: str, max_bytes: int) -> NoteFile:
    return read_note(vault, path, max_bytes, refuse_hard_links=True)


class NoteReads:
    """Read-through memo of `vault.read_note` (its failures included) and `parse_note`.

    `read` replaces the vault's reader (`vault.read_note`, which refuses a hard-linked
    note as the index does); tests hand in a counting one."""

    def __init__(self, vault: Path, max_bytes: int, *, read: ReadNote | None = None) -> None:
        self.vault = vault
        self.max_bytes = max_bytes
        self._read = read or _read_indexed_note
        self._files: dict[str, NoteFile | AskvaultError] = {}
        self._parsed: dict[str, ParsedNote | None] = {}

    def file(self, path: str) -> NoteFile:
        """The note at `path` as read once; raises the AskvaultError that read raised."""
        found = self._files.get(path)
        if found is None:
            try:
                found = self._read(self.vault, path, self.max_bytes)
            except AskvaultError as exc:
                found = exc
            self._files[path] = found
        if isinstance(found, AskvaultError):
            raise found
        return found

    def parsed(self, path: str) -> ParsedNote | None:
        """The note at `path` parsed (once), or None when it cannot be read."""
        if path not in self._parsed:
            try:
                self._parsed[path] = parse_note(path, self.file(path).text)
            except AskvaultError:
                self._parsed[path] = None
        return self._parsed[path]
