"""What a Markdown text does once rendered: loads, links to the web, or passes for askvault.

markdown-it-py (CommonMark, GFM tables, linkify, HTML on: Obsidian renders HTML) stands in
for Obsidian's renderer in the tests of untrusted replies (tests/core/test_reply_rendering,
tests/faults/test_fault_reply).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from markdown_it import MarkdownIt
from markdown_it.token import Token

_RENDERER = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(
    ["table", "linkify", "strikethrough"]
)
_RENDERER.linkify.set({"fuzzy_link": False, "fuzzy_email": False})
_WEB = re.compile(r"^(?:https?|ftp)://|^www\.", re.IGNORECASE)


def rendered_tokens(text: str) -> Iterator[Token]:
    """Every token of `text` as the renderer parses it, inline ones included."""

    def walk(tokens: list[Token]) -> Iterator[Token]:
        for token in tokens:
            yield token
            yield from walk(token.children or [])

    yield from walk(_RENDERER.parse(text))


def live_content(text: str, *, structure: bool) -> str | None:
    """What in `text`, rendered, loads, links to the web, or (`structure`) passes for a
    heading, a rule or a callout of askvault; None when nothing does."""
    tokens = list(rendered_tokens(text))
    for i, token in enumerate(tokens):
        if token.type in ("image", "html_inline", "html_block"):
            return f"{token.type} {token.content!r}"
        if token.type == "link_open" and _WEB.match(str(token.attrGet("href") or "")):
            return f"link {token.attrGet('href')}"
        if structure and token.type in ("heading_open", "hr"):
            return token.type
        if structure and token.type == "blockquote_open":
            first = next((t for t in tokens[i + 1 :] if t.type == "inline"), None)
            if first is not None and first.content.lstrip().startswith("[!"):
                return f"callout {first.content[:30]!r}"
    return None
