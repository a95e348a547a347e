"""The MCP `read_note` tool's result: one note's lines, its frontmatter apart."""

from __future__ import annotations

from typing import Any

from askvault.core.schema import document, prop
from askvault.services.documents.search import LINES


@document
class NoteDocument:
    """One note (or one heading's section, or a line range) with its file line numbers."""

    file: str = prop("Vault-relative path.")
    wikilink: str = prop("Cite the page with this.")
    frontmatter: dict[str, Any] = prop("The note's properties, apart.")
    frontmatter_lines: tuple[int, int] | None = prop("Where the frontmatter is, if any.")
    heading: str | None = prop("The heading whose section this is, if one was asked for.")
    lines: tuple[int, int] = prop(LINES)
    total_lines: int = prop("Lines in the whole file.")
    text: str = prop("Lines `lines[0]`..`lines[1]` of the file.")
    next_line: int | None = prop("Where to go on when the body was cut, else null.")
    problems: tuple[str, ...] = prop("What could not be read as written (e.g. bad YAML).")
