"""Wikilinks as Obsidian reads them: extraction, resolution and heading matching.

Pure functions over strings. `extract_links` finds every `[[...]]` and `![[...]]`
outside code, escapes and Markdown link text; `build_link_index` + `resolve_link`
implement Obsidian's resolution ladder (exact path, then file name, then alias);
`heading_matches` finds the heading a `#Heading` subpath points at.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from askvault.records import Heading, Link

# A fence may follow indentation, blockquote markers and a list marker
# (`  - ```python` inside a list, `> ~~~` inside a callout).
_FENCE = re.compile(r"^[ \t]*(?:>[ \t]?)*[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?(`{3,}|~{3,})(.*)$")
_BACKTICKS = re.compile(r"`+")
WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]*)\]\]")
# The same matches without the optional `!`: a literal first character lets the
# regex engine skip ahead ten times faster; the `!` is looked up by hand.
_WIKILINK_BODY = re.compile(r"\[\[([^\[\]\n]*)\]\]")
# `[text with [[A]] inside](url)`: the wikilink is part of the Markdown link text.
MD_LINK_TEXT = re.compile(r"\[((?:[^\[\]\n]|\[\[[^\[\]\n]*\]\])*)\]\([^)\n]*\)")
_MD_SUFFIX = re.compile(r"\.md$", re.IGNORECASE)
# Obsidian drops `# | ^ : [ ]` from heading links it writes, and real vaults link
# `#How large is it` to `How large is it?` or `#hasTag` to `` `hasTag()` ``:
# headings are compared on their letters, digits and spaces only.
_HEADING_PUNCT = re.compile(r"[^\w\s]|_")
_SPACES = re.compile(r"\s+")
# A list item's first line: `-`, `*`, `+` or `1.` / `1)` after at most three spaces.
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
# An HTML <pre> element (Obsidian shows its content as code, links included).
_PRE = re.compile(r"<pre\b[^>]*>.*?</pre\s*>", re.IGNORECASE | re.DOTALL)


def strip_md_suffix(name: str) -> str:
    """`Note.md` -> `Note` (any letter case); other names unchanged."""
    return _MD_SUFFIX.sub("", name)


def page_link(
    path: str, heading: str | None = None, duplicate_basenames: Iterable[str] = ()
) -> str:
    """The wikilink askvault writes for a vault path: `[[Name]]` / `[[Name#Heading]]`, or
    `[[folder/Name]]` when another note has the same file name (`duplicate_basenames`:
    lower-cased file names with `.md`, as `search_store.duplicate_basenames` gives them)."""
    name = strip_md_suffix(path)
    if path.rsplit("/", 1)[-1].lower() not in set(duplicate_basenames):
        name = name.rsplit("/", 1)[-1]
    return f"[[{name}#{heading}]]" if heading else f"[[{name}]]"


def fenced_blocks(lines: Sequence[str]) -> list[tuple[int, int]]:
    """The fenced code blocks of `lines` as (first, last) 0-based rows, fences included.

    Fences are ``` or ~~~ (three or more), possibly indented or inside a list item
    or blockquote; a block closes at a fence of the same character at least as
    long, or runs to the end of the text when never closed (as in CommonMark).
    """
    blocks: list[tuple[int, int]] = []
    open_fence: str | None = None
    start = 0
    for row, line in enumerate(lines):
        if "`" not in line and "~" not in line:
            continue
        match = _FENCE.match(line)
        if match is None:
            continue
        fence, info = match.group(1), match.group(2)
        if open_fence is None:
            if not (fence[0] == "`" and "`" in info):
                open_fence, start = fence, row
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not info.strip():
            blocks.append((start, row))
            open_fence = None
    if open_fence is not None:
        blocks.append((start, len(lines) - 1))
    return blocks


def code_fence_lines(
    lines: Sequence[str], blocks: Sequence[tuple[int, int]] | None = None
) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (fence lines included).

    `blocks`, when given, are `fenced_blocks(lines)` already computed by the caller.
    """
    flags = [False] * len(lines)
    for first, last in fenced_blocks(lines) if blocks is None else blocks:
        flags[first : last + 1] = [True] * (last + 1 - first)
    return flags


def has_fences(text: str) -> bool:
    """Whether `text` may hold a fenced code block: cheap, so callers skip the line scan."""
    return "```" in text or "~~~" in text


def indented_code_blocks(
    lines: Sequence[str], fenced: Sequence[tuple[int, int]] = ()
) -> list[tuple[int, int]]:
    """The indented code blocks of `lines` (CommonMark) as (first, last) 0-based rows.

    A block is a run of lines indented by four spaces or a tab that starts after a blank
    line (or at the top) - it cannot interrupt a paragraph - and not inside a list, where
    such indentation continues the item. Blank lines inside the run belong to it; it
    ends at the first line indented less. Rows of `fenced` blocks are never part of one.
    """
    in_fence = [False] * len(lines)
    for first, last in fenced:
        in_fence[first : last + 1] = [True] * (last + 1 - first)
    blocks: list[tuple[int, int]] = []
    previous_blank = True
    in_list = False
    start: int | None = None
    last_code = -1
    for row, line in enumerate(lines):
        blank = not line.strip()
        indented = line.startswith(("    ", "\t")) or line.startswith((" \t", "  \t", "   \t"))
        if start is not None:
            if blank:
                continue
            if indented and not in_fence[row]:
                last_code = row
                continue
            blocks.append((start, last_code))
            start = None
            previous_blank = False
        if in_fence[row]:
            previous_blank, in_list = False, False
            continue
        if blank:
            previous_blank = True
            continue
        if indented and previous_blank and not in_list:
            start = last_code = row
            continue
        if not indented:
            in_list = _LIST_ITEM.match(line) is not None
        previous_blank = False
    if start is not None:
        blocks.append((start, last_code))
    return blocks


def has_indented_code(text: str) -> bool:
    """Whether `text` may hold an indented code block: cheap, so callers skip the scan."""
    return text.startswith(("    ", "\t")) or "\n    " in text or "\n\t" in text


def mask_code(text: str, blocks: Sequence[tuple[int, int]] | None = None) -> str:
    """Return `text` with code blanked out: fenced and indented code blocks, HTML
    `<pre>` elements and inline code spans, as Obsidian (CommonMark) reads them.

    Blanking keeps every other character at its offset and every newline, so
    positions and line numbers found in the result hold for `text`. `blocks`,
    when given, are `fenced_blocks(text.split("\n"))` already computed by the caller.
    """
    indented = has_indented_code(text)
    pre = "<pre" in text or "<PRE" in text
    if "`" not in text and "~~~" not in text and not indented and not pre:
        return text
    if pre:
        text = _PRE.sub(_blank_keeping_lines, text)
    lines = text.split("\n")
    if blocks is None:
        blocks = fenced_blocks(lines) if has_fences(text) else []
    spans = list(blocks)
    if indented:
        spans += indented_code_blocks(lines, blocks)
    if spans:
        _blank_rows(lines, spans)
        text = "\n".join(lines)
    if "`" not in text:
        return text
    return _mask_code_spans(lines)


def _blank_rows(lines: list[str], spans: Sequence[tuple[int, int]]) -> None:
    """Blank, in place, the rows `first`..`last` of each span (each keeps its length)."""
    for first, last in spans:
        for row in range(first, last + 1):
            lines[row] = " " * len(lines[row])


def _mask_code_spans(lines: list[str]) -> str:
    """`lines` joined, with the inline code spans blanked."""
    # Code spans never cross a blank line: mask paragraph by paragraph, and only
    # the paragraphs that hold a backtick.
    start = -1
    ticked = False
    lines.append("")  # closes the last paragraph
    for row, line in enumerate(lines):
        if line and not line.isspace():  # `line.strip()` without building a string
            if start < 0:
                start, ticked = row, False
            if "`" in line:
                ticked = True
        elif start >= 0:
            if ticked:
                masked = _mask_paragraph_code("\n".join(lines[start:row]))
                lines[start:row] = masked.split("\n")
            start = -1
    lines.pop()
    return "\n".join(lines)


def _mask_paragraph_code(text: str) -> str:
    """Blank the inline code spans of one paragraph (CommonMark backtick-run rules)."""
    if "`" not in text:
        return text
    out = list(text)
    for start, end in code_spans(text):
        for pos in range(start, end):
            if out[pos] != "\n":
                out[pos] = " "
    return "".join(out)


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each inline code span of one paragraph, backticks included.

    CommonMark: a run of backticks opens a span that the next run of the same length
    closes; a run that no later run matches is literal text. Linear: each run finds its
    closer through the next run of its width, found once from the end.
    """
    if "`" not in text:
        return []
    runs = [m for m in _BACKTICKS.finditer(text) if not _is_escaped(text, m.start())]
    following: list[int | None] = [None] * len(runs)
    last_of_width: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        width = len(runs[i].group(0))
        following[i] = last_of_width.get(width)
        last_of_width[width] = i
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        closer = following[i]
        if closer is None:
            i += 1
            continue
        spans.append((runs[i].start(), runs[closer].end()))
        i = closer + 1
    return spans


def extract_links(text: str, *, masked: str | None = None, line_offset: int = 0) -> list[Link]:
    """Return every wikilink and embed of `text`, in order of occurrence.

    Links inside inline code, fenced code, Markdown link text, and escaped ones
    (`\\[[A]]`) are ignored. `[[A.md]]` reports target `A`; `[[#H]]` reports target "".
    `masked` is `mask_code(text)` when the caller already has it; `line_offset`
    is added to every reported line (1-based lines of `text` by default).
    """
    if "[[" not in text:
        return []
    if masked is None:
        masked = mask_code(text)
    if "[[" not in masked:
        return []
    if "](" in masked:
        masked = MD_LINK_TEXT.sub(_blank, masked)
    links: list[Link] = []
    line = 1 + line_offset
    scanned = 0
    for match in _WIKILINK_BODY.finditer(masked):
        start = match.start()
        embed = masked[start - 1 : start] == "!"
        if embed:
            start -= 1
        if masked[start - 1 : start] == "\\" and _is_escaped(masked, start):
            continue
        parts = _parse_inner(match.group(1))
        if parts is None:
            continue
        line += masked.count("\n", scanned, start)
        scanned = start
        target, heading, block, label = parts
        links.append(
            Link(
                target=target,
                heading=heading,
                block=block,
                label=label,
                embed=embed,
                line=line,
                raw=text[start : match.end()],
            )
        )
    return links


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _blank_keeping_lines(match: re.Match[str]) -> str:
    return "".join("\n" if ch == "\n" else " " for ch in match.group(0))


def blank_wikilinks(text: str) -> str:
    """Return `text` with every `[[...]]` replaced by spaces of the same length."""
    if "[[" not in text:
        return text
    return WIKILINK.sub(_blank, text)


def _is_escaped(text: str, pos: int) -> bool:
    """True when the character at `pos` is preceded by an odd number of backslashes."""
    count = 0
    i = pos - 1
    while i >= 0 and text[i] == "\\":
        count += 1
        i -= 1
    return count % 2 == 1


def _parse_inner(inner: str) -> tuple[str, str | None, str | None, str | None] | None:
    """Split `A#H|label` into (target, heading, block, label); None when there is
    no target and no subpath."""
    label: str | None = None
    if "|" in inner:
        inner, label = inner.split("|", 1)
        # Inside tables Obsidian writes `[[A\|label]]` so the pipe does not split the cell.
        inner = inner.removesuffix("\\")
        label = label.strip() or None
    heading: str | None = None
    block: str | None = None
    target, sep, subpath = inner.partition("#")
    if sep:
        subpath = subpath.strip()
        if subpath.startswith("^"):
            block = subpath[1:].strip() or None
        else:
            heading = subpath or None
    target = _MD_SUFFIX.sub("", target.strip())
    if not target and heading is None and block is None:
        return None
    return target, heading, block, label


def link_words(link: Link) -> str:
    """What a link says as text: its label, else its page's name (no folder, no heading)."""
    return _said(link.target, link.heading, link.label)


def _said(target: str, heading: str | None, label: str | None) -> str:
    return label or target.rsplit("/", 1)[-1] or (heading or "")


def links_as_words(text: str) -> str:
    """`text` with each wikilink or embed written as what it says (`link_words`): its
    label, else its page's name; code is not looked at (a reply's prose, not a note)."""
    if "[[" not in text:
        return text

    def words(match: re.Match[str]) -> str:
        parts = _parse_inner(match.group(2))
        if parts is None:
            return match.group(0)
        target, heading, _block, label = parts
        return _said(target, heading, label)

    return WIKILINK.sub(words, text)


def unique_targets(links: Iterable[Link]) -> list[Link]:
    """Keep the first link per (target casefolded, heading, block), in order."""
    seen: set[tuple[str, str | None, str | None]] = set()
    unique: list[Link] = []
    for link in links:
        key = (normalize_name(link.target), link.heading, link.block)
        if key not in seen:
            seen.add(key)
            unique.append(link)
    return unique


def normalize_name(name: str) -> str:
    """The case- and normalisation-insensitive key Obsidian compares names by."""
    return unicodedata.normalize("NFC", name).casefold()


@dataclass(frozen=True)
class LinkIndex:
    """Lookup tables for `resolve_link`; each list is already in tie-break order."""

    by_path: dict[str, str] = field(default_factory=dict)
    by_name: dict[str, list[str]] = field(default_factory=dict)
    by_alias: dict[str, list[str]] = field(default_factory=dict)


def _tie_order(path: str) -> tuple[int, str, str]:
    return (len(path), normalize_name(path), path)


def _link_key(path: str) -> str:
    """A file's path as a link names it: without `.md`, normalised."""
    return normalize_name(_MD_SUFFIX.sub("", path))


def build_link_index(notes: Iterable[tuple[str, Sequence[str]]]) -> LinkIndex:
    """Build the resolution tables from (vault-relative path, aliases) pairs.

    Paths of non-Markdown files (attachments) may be included; they are found by
    their full file name, extension included, as in Obsidian.
    """
    by_path: dict[str, list[str]] = {}
    by_name: dict[str, list[str]] = {}
    by_alias: dict[str, list[str]] = {}
    for path, aliases in notes:
        key = _link_key(path)
        by_path.setdefault(key, []).append(path)
        by_name.setdefault(key.rsplit("/", 1)[-1], []).append(path)
        for alias in aliases:
            alias_key = normalize_name(alias.strip())
            if alias_key:
                by_alias.setdefault(alias_key, []).append(path)
    for table in (by_path, by_name, by_alias):
        for paths in table.values():
            paths.sort(key=_tie_order)
            # An alias repeated in one note must not list that note twice.
            if len(paths) > 1:
                paths[:] = list(dict.fromkeys(paths))
    return LinkIndex(
        by_path={key: paths[0] for key, paths in by_path.items()},
        by_name=by_name,
        by_alias=by_alias,
    )


def name_keys(path: str, aliases: Sequence[str]) -> set[str]:
    """The keys a note can be linked by, as `build_link_index` files it: its file name
    (without `.md`, normalised) and each alias, normalised."""
    keys = {_link_key(path).rsplit("/", 1)[-1]}
    keys.update(key for alias in aliases if (key := normalize_name(alias.strip())))
    return keys


def target_keys(target: str) -> tuple[str, str]:
    """(the target's last path segment, the whole target), normalised as `resolve_link`
    compares them: the notes a link can resolve to are those with one of these among
    their `name_keys` (by path or file name: the last segment; by alias: the whole)."""
    key = normalize_name(_MD_SUFFIX.sub("", target.strip()))
    return key.lstrip("/").rpartition("/")[2], key


def key_segment(key: str) -> str:
    """The last path segment of a name key (what links to that name hold as theirs)."""
    return key.rpartition("/")[2]


def resolve_link(target: str, index: LinkIndex, source: str | None = None) -> str | None:
    """Return the vault path `target` points at, or None when it resolves to nothing.

    The ladder, case-insensitive (casefold + NFC): exact path (with or without
    `.md`), then file name — a target with folders also matches a path that ends
    with it, as Obsidian does — then frontmatter alias. Ties go to the shortest
    path, then alphabetical. `source` (the linking note's path) resolves
    `./`/`../` targets and the empty target of a same-note link `[[#Heading]]`.
    """
    target = _MD_SUFFIX.sub("", target.strip())
    if not target:
        return source if source is not None and _link_key(source) in index.by_path else None
    if source is not None and target.startswith(("./", "../")):
        relative = _join_relative(source, target)
        if relative is not None:
            found = index.by_path.get(normalize_name(relative))
            if found is not None:
                return found
    key = normalize_name(target.lstrip("/"))
    found = index.by_path.get(key)
    if found is not None:
        return found
    folder, _, name = key.rpartition("/")
    candidates = index.by_name.get(name)
    if candidates:
        if not folder:
            return candidates[0]
        suffix = "/" + key
        for path in candidates:
            if _link_key(path).endswith(suffix):
                return path
    aliases = index.by_alias.get(normalize_name(target))
    if aliases:
        return aliases[0]
    return None


def _join_relative(source: str, target: str) -> str | None:
    parts = source.split("/")[:-1]
    for part in target.split("/"):
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def slugify_heading(text: str) -> str:
    """The form headings are compared in: casefolded, NFC, punctuation and
    extra whitespace removed (`Foo: [bar]?` and `foo bar` are equal)."""
    text = _HEADING_PUNCT.sub(" ", unicodedata.normalize("NFC", text))
    return _SPACES.sub(" ", text).strip().casefold()


def heading_matches(heading_query: str, headings: Sequence[Heading]) -> Heading | None:
    """Return the heading a link subpath (`H` or nested `H1#H2`) points at, or None.

    The last part must match; among several matches, one nested under the
    earlier parts (in order) wins, else the first in the note.
    """
    parts = [slugify_heading(part) for part in heading_query.split("#")]
    parts = [part for part in parts if part]
    if not parts:
        return None
    wanted = parts[-1]
    first: Heading | None = None
    chain: list[Heading] = []
    for heading in headings:
        while chain and chain[-1].level >= heading.level:
            chain.pop()
        if slugify_heading(heading.text) == wanted:
            if len(parts) == 1:
                return heading
            if first is None:
                first = heading
            if _is_subsequence(parts[:-1], [slugify_heading(h.text) for h in chain]):
                return heading
        chain.append(heading)
    return first


def _is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(item == needle for item in it) for needle in needles)
