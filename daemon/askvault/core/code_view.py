"""What of a Markdown text is surely code, read any way a renderer may read it.

Pure. Used to make untrusted text inert (core/inert.py): what is code is shown as it is,
everything else is neutralised, so a mistake must only ever take code for text. A
fenced block counts only when no container could end it sooner than its fence (each
line keeps the opener's quote depth and indentation) and no line of it is a closing
fence in one reading and not in another; an inline code span only when its paragraph's
spans are the same however the paragraph is cut (by line, by table cell, by a tag that
takes backticks). Indented code blocks never count (a list may make them text).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

# A fence Obsidian surely reads as one: after quote markers, at most three spaces.
_OPENER = re.compile(r"((?: {0,3}> ?)*)( {0,3})(`{3,}|~{3,})(.*)$")
# Any line some reading may take for a fence (after spaces, quote and list markers).
FENCE_LIKE = re.compile(r"[ \t]*(?:>[ \t]*)*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*[ \t]*(?:`{3}|~{3})")
_QUOTE = re.compile(r" {0,3}> ?")
# The longest fenced block taken for code (a longer one is escaped: linear time).
MAX_FENCE_LINES = 500


@dataclass(frozen=True)
class Fences:
    """The fenced code blocks of a text that are code however it is read: their rows, the
    line that closes the one left open (None when all are closed), and the fence-like
    lines that are no part of one (`suspects`).

    A fence askvault cannot be sure of (a list marker before it, a container that may end
    it, a closing line one reading takes and another not) decides for every later fence
    whether it opens or closes; so either each suspect is escaped (`escape`: then the text
    holds the trusted blocks only, read alike by all), or nothing after the first suspect
    is taken for code."""

    rows: list[bool]
    closer: str | None
    suspects: list[int]

    @classmethod
    def of(cls, lines: list[str], *, escape: bool) -> Fences:
        rows = [False] * len(lines)
        closer = None
        suspects: list[int] = []
        row = 0
        while row < len(lines):
            line = lines[row]
            if not (("`" in line or "~" in line) and FENCE_LIKE.match(line)):
                row += 1
                continue
            opener = None if suspects and not escape else _OPENER.match(line)
            # A backtick fence's info holds no backtick; one with a `|` may be a table's
            # header row instead (renderers differ).
            if opener is not None and not (
                "|" in opener.group(4) or opener.group(3)[0] == "`" and "`" in opener.group(4)
            ):
                end, closed = _fence_end(lines, row, opener)
                if end is not None:
                    rows[row:end] = [True] * (end - row)
                    if not closed:
                        depth = opener.group(1).count(">")
                        closer = "> " * depth + opener.group(2) + opener.group(3)
                    row = end
                    continue
            suspects.append(row)
            row += 1
        return cls(rows, closer, suspects)


def _fence_end(lines: list[str], row: int, opener: re.Match[str]) -> tuple[int | None, bool]:
    """(the row after the fenced block opened at `row`, whether its closing fence was
    found), or (None, False) when it is not surely code.

    A block is trusted only when no line of it could end what holds it, read any way:
    each line keeps the opener's quote depth and, when the opener is indented (it may be
    a list item's), its indentation; and no fence line is a closer in one reading and not
    in another (indented more than three spaces, but no more than the opener's three)."""
    depth = opener.group(1).count(">")
    indent = len(opener.group(2))
    for k in range(row + 1, min(len(lines), row + 1 + MAX_FENCE_LINES)):
        rest = _unquoted(lines[k], depth)
        if rest is None:
            return None, False
        lead = len(rest) - len(rest.lstrip(" "))
        if _fence_only(rest, opener):
            if lead <= 3:
                return k + 1, True
            if lead <= indent + 3:
                return None, False
        if indent and rest.strip() and lead < indent:
            return None, False
    if len(lines) - row - 1 > MAX_FENCE_LINES:
        return None, False
    return len(lines), False


def _unquoted(line: str, depth: int) -> str | None:
    """`line` without `depth` quote markers, None when it has fewer."""
    at = 0
    for _ in range(depth):
        quote = _QUOTE.match(line, at)
        if quote is None:
            return None
        at = quote.end()
    return line[at:]


def _fence_only(rest: str, opener: re.Match[str]) -> bool:
    """Whether a line (without its quote markers) holds only a fence that could close
    `opener` (its character, at least as long)."""
    fence = opener.group(3)
    stripped = rest.lstrip(" ")
    run = len(stripped) - len(stripped.lstrip(fence[0]))
    return run >= len(fence) and not stripped[run:].strip()


def code_view(text: str, *, one_line: bool = False) -> str:
    """`text` with what is surely code blanked (newlines kept): the rows of trusted fenced
    blocks, and the inline code spans of the paragraphs whose spans no cut can change.

    A paragraph's spans are trusted when each of its lines pairs all its backtick runs by
    itself (so however a list item, a quote or a table groups the lines, each line's spans
    stay what they are), a table row's cells pair them the same way, and no run sits in
    what may be an HTML tag (a tag takes the backticks it holds). In any other paragraph
    nothing is taken for code, and everything that could load or link is made inert, code
    or not: never too little. `one_line`: the text is shown on one line inside other text
    (a quoted sentence), where no fence is one.
    """
    lines = text.split("\n")
    fenced_text = not one_line and ("```" in text or "~~~" in text)
    fences = Fences.of(lines, escape=False) if fenced_text else None
    out = list(text)
    at = 0
    group: list[tuple[int, str]] = []
    for row, line in enumerate(lines + [""]):
        fenced = fences is not None and row < len(lines) and fences.rows[row]
        if line.strip() and not fenced:
            group.append((at, line))
        else:
            _blank_trusted_spans(group, out)
            group = []
            if fenced:
                out[at : at + len(line)] = [" "] * len(line)
        at += len(line) + 1
    return "".join(out)


def _blank_trusted_spans(group: list[tuple[int, str]], out: list[str]) -> None:
    """Blank in `out` the code spans of a paragraph (its lines with their offsets), if
    they are trusted (see `code_view`)."""
    found: list[tuple[int, list[tuple[int, int]]]] = []
    for at, line in group:
        if "`" not in line:
            continue
        spans = _line_spans(line)
        if spans is None:
            return
        found.append((at, spans))
    for at, spans in found:
        for start, end in spans:
            out[at + start : at + end] = [" "] * (end - start)


def _line_spans(line: str) -> list[tuple[int, int]] | None:
    """The code spans of a line when the line pairs all its runs by itself, its cells (if
    it is a table row) pair them alike, and no run may be inside an HTML tag; else None."""
    spans, lone = code_spans(line)
    if lone:
        return None
    if "|" in line:
        cells: list[tuple[int, int]] = []
        start = 0
        for cut in [*(m.start() for m in _CELL_EDGE.finditer(line)), len(line)]:
            inner, lone = code_spans(line[start:cut])
            if lone:
                return None
            cells += [(start + a, start + b) for a, b in inner]
            start = cut + 1
        if cells != spans:
            return None
    if "<" in line:
        inside = [False] * len(line)
        for a, b in spans:
            inside[a:b] = [True] * (b - a)
        for tag in _MAYBE_TAG.finditer(line):
            if not inside[tag.start()] and "`" in tag.group(0):
                return None
    return spans


_CELL_EDGE = re.compile(r"(?<!\\)\|")
_MAYBE_TAG = re.compile(r"<[^<>]*>?")


def code_spans(text: str) -> tuple[list[tuple[int, int]], int]:
    """((start, end) of the code spans of `text` as CommonMark pairs backtick runs, how
    many runs are left unpaired): a run opens a span that the next run of its width
    closes; a backslash before a run makes its first backtick text (a closer is never
    escaped: a backslash in a span is the span's)."""
    if "`" not in text:
        return [], 0
    runs = [(m.start(), m.end()) for m in _BACKTICK_RUN.finditer(text)]
    by_width: dict[int, list[int]] = {}
    for i, (start, end) in enumerate(runs):
        by_width.setdefault(end - start, []).append(i)
    spans: list[tuple[int, int]] = []
    lone = 0
    i = 0
    while i < len(runs):
        start, end = runs[i]
        if escaped(text, start):
            start += 1
        same = by_width.get(end - start, [])
        j = bisect_right(same, i)
        if start == end or j == len(same):
            lone += start < end
            i += 1
            continue
        closer = same[j]
        spans.append((start, runs[closer][1]))
        i = closer + 1
    return spans, lone


def escaped(text: str, pos: int) -> bool:
    """True when the character at `pos` is punctuation after an odd number of backslashes
    (a backslash escapes nothing else)."""
    if text[pos].isalnum():
        return False
    count = 0
    while pos - count > 0 and text[pos - count - 1] == "\\":
        count += 1
    return count % 2 == 1


_BACKTICK_RUN = re.compile(r"`+")
