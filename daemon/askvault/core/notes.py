"""Parsing one note: frontmatter, body, headings, tags, block ids and links.

Pure: takes the decoded text, returns a `ParsedNote`. Bad input never raises;
what went wrong is listed in `problems` and the body is still indexed.

Decisions (Obsidian is the reference):
- A UTF-8 BOM is dropped; CRLF and lone CR become LF (line numbers unchanged),
  so the same text saved by two editors gives the same body and chunk hashes.
- Frontmatter is a `---` line on line 1 closed by the next `---` line. YAML is
  loaded with PyYAML's safe loader through python-frontmatter's YAML handler, so
  tags such as `!!python/object` are a recorded problem, never executed.
- Invalid YAML in a closed block: the problem is recorded, properties are empty,
  and the block is still cut from the body — Obsidian shows it as (broken)
  properties, not as prose, and indexing it would put YAML keys into search.
- A `---` on line 1 that is never closed is not frontmatter (Obsidian renders a
  horizontal rule): the whole text is the body, and the problem is recorded.
- A first line `{` is not frontmatter (python-frontmatter would try JSON;
  Obsidian does not): the body is the text as is.
- Frontmatter values are made JSON-safe: dates become ISO strings, other
  non-JSON scalars their `str()`, so every later stage can store them.
- Link and heading line numbers are lines of the file, like `body_start_line`.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from askvault.core.links import (
    blank_wikilinks,
    code_fence_lines,
    extract_links,
    fenced_blocks,
    has_fences,
    mask_code,
    strip_md_suffix,
)
from askvault.records import Heading, ParsedNote

try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

_DELIMITER = re.compile(r"---[ \t]*")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?")
# Where a heading can start: the first line, or after a newline. A literal first
# character lets the regex engine skip ahead, unlike `^` with re.MULTILINE.
_ATX_FIRST = re.compile(r" {0,3}#")
_ATX_NEXT = re.compile(r"\n {0,3}#")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
# Obsidian also takes an id glued to an embed: `![[image.png]]^id`.
_BLOCK_ID = re.compile(r"(?<![A-Za-z0-9])\^([A-Za-z0-9-]+)[ \t]*$")
# Tag characters: anything but whitespace and ASCII punctuation other than _ - /.
_INLINE_TAG = re.compile(r"(?<!\S)#([^\s!\"#$%&'()*+,.:;<=>?@\[\\\]^`{|}~]+)")
_LIST_SPLIT = re.compile(r"[,\s]+")
_MAX_FRONTMATTER_NODES = 10_000
_MAX_FRONTMATTER_DEPTH = 40


class _TooComplex(Exception):
    """The frontmatter has more nodes or depth than any real note's properties."""


def parse_note(path: str, text: str) -> ParsedNote:
    """Parse a note's text; `path` is vault-relative and `/`-separated.

    Never raises on malformed content: problems are recorded in `problems`.
    """
    problems: list[str] = []
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    meta, body_index = _split_frontmatter(lines, problems)
    body_lines = lines[body_index:]
    body = "\n".join(body_lines)
    offset = body_index  # body line i (1-based) is file line i + offset

    # Fences and the code mask are computed once and shared by every scan below.
    blocks = fenced_blocks(body_lines) if has_fences(body) else []
    in_code = code_fence_lines(body_lines, blocks)
    masked = mask_code(body, blocks)
    masked_lines = masked.split("\n") if masked is not body else body_lines
    headings = _find_headings(body, in_code, offset) if "#" in body else ()
    block_ids = _find_block_ids(masked_lines, in_code) if "^" in masked else ()
    links = tuple(extract_links(body, masked=masked, line_offset=offset))
    props = _fold(meta)
    property_tags = [
        tag.lstrip("#") for tag in _string_list(_get(props, "tags", "tag"), split=True)
    ]
    inline_tags = _inline_tags(masked_lines, in_code) if "#" in masked else []
    tags = _unique([*property_tags, *inline_tags])
    note_type = _get(props, "type")
    return ParsedNote(
        path=path,
        title=strip_md_suffix(path.rsplit("/", 1)[-1]),
        frontmatter=meta,
        aliases=_unique(_string_list(_get(props, "aliases", "alias"), split=True, sep=",")),
        tags=tags,
        type=str(note_type) if isinstance(note_type, (str, int, float)) else None,
        sources=_unique(_string_list(_get(props, "sources", "source"))),
        related=_unique(_string_list(_get(props, "related"))),
        body=body,
        body_start_line=body_index + 1,
        headings=headings,
        links=links,
        block_ids=block_ids,
        problems=tuple(problems),
    )


def _split_frontmatter(lines: list[str], problems: list[str]) -> tuple[dict[str, Any], int]:
    """Return (properties, index of the first body line)."""
    if not lines or not _DELIMITER.fullmatch(lines[0]):
        return {}, 0
    close = next((i for i in range(1, len(lines)) if _DELIMITER.fullmatch(lines[i])), None)
    if close is None:
        problems.append(
            "frontmatter: the '---' on line 1 is never closed; the whole note is indexed as body"
        )
        return {}, 0
    yaml_text = "\n".join(lines[1:close])
    try:
        loaded = YAMLHandler().load(yaml_text, Loader=_SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problems.append(
            f"frontmatter: invalid YAML{where}: {exc.problem or exc}; properties ignored"
        )
        return {}, close + 1
    except Exception as exc:  # PyYAML also raises ValueError (bad dates), RecursionError
        problems.append(f"frontmatter: invalid YAML: {exc}; properties ignored")
        return {}, close + 1
    if loaded is None:
        return {}, close + 1
    if not isinstance(loaded, dict):
        problems.append(
            f"frontmatter: expected key: value pairs, got a {type(loaded).__name__}; "
            "properties ignored"
        )
        return {}, close + 1
    try:
        budget = [_MAX_FRONTMATTER_NODES]
        meta = _json_safe(loaded, budget, 0)
    except _TooComplex:
        problems.append("frontmatter: too large or too deeply nested; properties ignored")
        return {}, close + 1
    return meta, close + 1


def _json_safe(value: Any, budget: list[int], depth: int) -> Any:
    """Copy `value` into JSON types; the budget stops YAML alias bombs."""
    budget[0] -= 1
    if budget[0] < 0 or depth > _MAX_FRONTMATTER_DEPTH:
        raise _TooComplex
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _json_safe(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v, budget, depth + 1) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)


def _fold(meta: dict[str, Any]) -> dict[str, Any]:
    """Properties by casefolded key, as Obsidian compares them; the first spelling wins."""
    return {key.casefold(): value for key, value in reversed(meta.items())}


def _get(folded: dict[str, Any], *keys: str) -> Any:
    """The first of `keys` present (and not null) in `_fold(meta)`."""
    for key in keys:
        if key in folded and folded[key] is not None:
            return folded[key]
    return None


def _string_list(value: Any, *, split: bool = False, sep: str | None = None) -> list[str]:
    """Normalise a str-or-list property to a list of non-empty strings.

    With `split`, a plain string holds several values (`tags: a, b` or
    `aliases: x, y`, the legacy forms Obsidian still reads). An unquoted
    `[[Page]]` in YAML is a nested list; it is turned back into the wikilink.
    """
    if value is None:
        return []
    if isinstance(value, str):
        if split:
            parts = value.split(sep) if sep else _LIST_SPLIT.split(value)
            return [part.strip() for part in parts if part.strip()]
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        items: list[str] = []
        for item in value:
            if isinstance(item, list) and len(item) == 1 and isinstance(item[0], list):
                item = item[0]
            if isinstance(item, list) and len(item) == 1 and isinstance(item[0], str):
                items.append(f"[[{item[0]}]]")
            elif (
                isinstance(item, (str, int, float))
                and not isinstance(item, bool)
                and str(item).strip()
            ):
                items.append(str(item).strip())
        return items
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [str(value)]
    return []


def _unique(values: list[str]) -> tuple[str, ...]:
    """Drop empties and case-insensitive repeats, keeping the first spelling."""
    seen: set[str] = set()
    out: list[str] = []
    for value in values:
        key = value.casefold()
        if value and key not in seen:
            seen.add(key)
            out.append(value)
    return tuple(out)


def _find_headings(body: str, in_code: list[bool], offset: int) -> tuple[Heading, ...]:
    headings: list[Heading] = []
    row, scanned = 0, 0
    # Only lines starting with up to three spaces and a `#` can be headings.
    first = [0] if _ATX_FIRST.match(body) else []
    for start in [*first, *(candidate.start() + 1 for candidate in _ATX_NEXT.finditer(body))]:
        row += body.count("\n", scanned, start)
        scanned = start
        if in_code[row]:
            continue
        end = body.find("\n", start)
        match = _ATX.fullmatch(body, start, len(body) if end < 0 else end)
        if match is None:
            continue
        text = match.group(2) or ""
        if "#" in text:
            text = _ATX_CLOSING.sub("", text)
        text = text.strip()
        if text:
            headings.append(Heading(level=len(match.group(1)), text=text, line=row + 1 + offset))
    return tuple(headings)


def _find_block_ids(masked_lines: list[str], in_code: list[bool]) -> tuple[str, ...]:
    ids: list[str] = []
    for line, code in zip(masked_lines, in_code):
        if not code and "^" in line:
            match = _BLOCK_ID.search(line)
            if match and match.group(1) not in ids:
                ids.append(match.group(1))
    return tuple(ids)


def _inline_tags(masked_lines: list[str], in_code: list[bool]) -> list[str]:
    tags: list[str] = []
    for line, code in zip(masked_lines, in_code):
        if code or "#" not in line:
            continue
        line = blank_wikilinks(line)
        for match in _INLINE_TAG.finditer(line):
            tag = match.group(1).strip("/")
            if tag and not tag.replace("/", "").isdigit():
                tags.append(tag)
    return tags
