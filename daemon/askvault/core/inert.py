"""Markdown made inert: nothing in untrusted text can load, link or pass for askvault's own.

Pure. What a model reply (core/reply.py) or a note's text quoted in an answer note holds,
outside code (core/code_view.py), is neutralised as Obsidian would otherwise render it:
- every Markdown image (`![x](src)`, `![x][ref]`), HTML element (tags, comments: Obsidian
  renders HTML, loads remote images and iframes), autolink, bare web address and wikilink
  to a URL is shown as code, as embeds are; a Markdown link keeps its text, its address
  follows as code; a `](` no link was taken for is escaped;
- askvault's markers (⚠️, "added by askvault") and Obsidian comments (`%%`) are shown as
  code; headings, callouts, thematic breaks and setext underlines, link definitions and
  fences that are not surely code are escaped (`escape_blocks`, `escape_fences`).
A code span askvault makes is wider than any backtick run of the text and holds none,
so no backtick of the text can pair with it, and it never touches a backtick or follows
a backslash: what it holds stays code however the text around it is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from askvault.core.code_view import FENCE_LIKE, Fences, code_spans, code_view, escaped
from askvault.core.controls import strip_controls
from askvault.core.links import WIKILINK

# What was made inert, by kind (core/reply.py says each in a sentence).
Change = Literal["remote", "markup", "links", "imitations", "fence", "controls"]


def inert_line(text: str, limit: int | None = None) -> str:
    """`text` on one line without control characters, made inert (images, HTML and web
    links as code), and cut to `limit` characters outside any code span (a span cut in
    two would let what it holds out). For untrusted text quoted in a note: the model's
    sentences, excerpts, quotes."""
    flat = neutralise_inline(" ".join(strip_controls(text).split()), {}, one_line=True)
    if limit is None or len(flat) <= limit:
        return flat
    cut = limit - 1
    for start, end in code_spans(flat)[0]:
        if start < cut < end:
            cut = start
        if end >= cut:
            break
    return flat[:cut].rstrip() + "…"


def neutralise(text: str) -> str:
    """A note's text quoted in an answer note (a passage), made inert: nothing in it
    loads or links when the note is opened."""
    text = strip_controls(text)
    return neutralise_inline(text.expandtabs(4) if "\t" in text else text, {})


def count(counts: dict[Change, int], kind: Change, n: int) -> None:
    """Add `n` changes of `kind` to `counts` (a kind with none stays out)."""
    if n:
        counts[kind] = counts.get(kind, 0) + n


def escape_fences(text: str, counts: dict[Change, int]) -> tuple[str, Fences]:
    """`text` with each fence-like line that opens no trusted block escaped, and the
    trusted blocks."""
    if "```" not in text and "~~~" not in text:
        return text, Fences([False] * (text.count("\n") + 1), None, [])
    lines = text.split("\n")
    fences = Fences.of(lines, escape=True)
    for row in fences.suspects:
        line = lines[row]
        at = FENCE_LIKE.match(line).end() - 3  # type: ignore[union-attr]
        lines[row] = line[:at] + "\\" + line[at:]
    count(counts, "fence", len(fences.suspects))
    return "\n".join(lines), fences


# -- block structure: headings, callouts, rules --------------------------------------

_QUOTES = re.compile(r"[ \t]*(?:>[ \t]?)*")
# Quote markers and list markers, in any order: what may hold a heading or a callout.
_CONTAINERS = re.compile(r"(?:[ \t]*(?:>|(?:[-*+]|\d{1,9}[.)])(?=[ \t])))*[ \t]*")
_RULE = re.compile(r"[ \t]*([-*_=])[ \t]*(?:\1[ \t]*)*$")
_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
_DEFINITION = re.compile(r"[ \t]*\[[^\]\n]+\]:")


def escape_blocks(text: str, code: list[bool], counts: dict[Change, int]) -> str:
    """Escape, on every line outside fenced code, what would make it a block structure
    askvault writes: a heading, a callout, a thematic break or setext underline (and so a
    `---` block that looks like frontmatter), a link definition."""
    if not any(c in text for c in "#[-*_="):
        return text
    lines = text.split("\n")
    escaped = 0
    for row, line in enumerate(lines):
        if code[row] or not line.strip():
            continue
        at = _block_start(line)
        if at is not None:
            lines[row] = line[:at] + "\\" + line[at:]
            escaped += 1
    count(counts, "imitations", escaped)
    return "\n".join(lines) if escaped else text


def _block_start(line: str) -> int | None:
    """Where a backslash makes `line` plain text (None: it already is)."""
    quoted = _QUOTES.match(line)
    rest = line[quoted.end() if quoted else 0 :]
    if _RULE.match(rest) or _DEFINITION.match(rest):
        return len(line) - len(rest.lstrip(" \t"))
    inner = _CONTAINERS.match(line)
    at = inner.end() if inner else 0
    if (
        _HEADING.match(line, at)
        or line.startswith("[!", at)
        or _RULE.match(line, at)
        or _DEFINITION.match(line, at)
    ):
        return at
    return None


# -- inline: images, HTML, links, markers --------------------------------------------

# What may start a construct to neutralise; each is then parsed by its handler.
_TRIGGER = re.compile(
    r"(?P<angle><)|(?P<bracket>!?\[)|(?P<paren>\]\()"
    r"|(?P<url>[A-Za-z][A-Za-z0-9+.-]{1,31}://|www\.)"
    r"|(?P<marker>\u26a0\ufe0f?|%%)"
    r"|(?P<phrase>\b(?:added|verified|checked|confirmed|flagged|marked|approved|supported"
    r"|generated|written)[ \t]+by[ \t]+askvault\b"
    r"|\baskvault[ \t]+(?:added|verified|checked|confirmed|flagged|marked|approved)\b)",
    re.IGNORECASE,
)
# The longest construct parsed (a link's text and address); a longer one is not one.
MAX_CONSTRUCT_CHARS = 4096
# What in an image or a tag loads from outside the vault: an address with a scheme or a
# host, `url(...)`, or an element that loads or runs what it holds.
_REMOTE = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9+.-]{1,31}:)?//|\\\\|\b(?:data|file|blob|javascript|app):"
    r"|url\s*\(|@import|^<(?:script|style|link|iframe|embed|object|frame)\b",
    re.IGNORECASE,
)
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>")
_ATTRIBUTE = r"""(?:\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)"""
_HTML = re.compile(
    rf"<[A-Za-z][A-Za-z0-9-]*{_ATTRIBUTE}*\s*/?>"
    r"|</[A-Za-z][A-Za-z0-9-]*\s*>"
    r"|<!--.*?-->"
    r"|<\?.*?\?>"
    r"|<![A-Za-z][^>]*>"
    r"|<!\[CDATA\[.*?\]\]>",
    re.DOTALL,
)
# A `<` that opens a tag, or may once a link before it is made inert (`<[t](url)`).
_HTML_START = re.compile(r"<[A-Za-z/!?\[]")
# An address ends at a backslash (it escapes what follows: taking it into a code span
# would set that free) and at a table's cell separator.
_BARE_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]{1,31}://|www\.)[^\s<>`\\|]*", re.IGNORECASE)
_URL_TRAILER = "?!.,:;*_~'\""
_BACKTICK_RUN = re.compile(r"`+")


@dataclass
class _Scan:
    """One pass of `neutralise_inline`: the text, its code blanked, the counts."""

    text: str
    masked: str
    counts: dict[Change, int]
    fence: int  # backticks of the code spans made: more than any run of the text

    def code(self, content: str) -> str:
        return code_span(content, self.fence)


def neutralise_inline(text: str, counts: dict[Change, int], *, one_line: bool = False) -> str:
    """`text` with its images, HTML, web links and askvault markers (outside code) made
    inert; how many of each kind is added to `counts`. `one_line`: shown on one line
    inside other text (see `code_view`)."""
    if _TRIGGER.search(text) is None:
        return text
    masked = code_view(text, one_line=one_line)
    longest = max((len(m.group(0)) for m in _BACKTICK_RUN.finditer(text)), default=0)
    # Code spans wider than any run of the text pair with none of its runs (a lone
    # backtick before an image would otherwise open a span that ours closes).
    return _neutralise(_Scan(text, masked, counts, longest + 1))


def _neutralise(scan: _Scan) -> str:
    """The scan's text with what the triggers in it open made inert."""
    text = scan.text
    out: list[str] = []
    cursor = pos = 0
    last = ""
    while (match := _TRIGGER.search(scan.masked, pos)) is not None:
        start = match.start()
        found = None if escaped(text, start) else _construct(scan, match)
        if found is None:
            pos = start + 1  # `\![x](url)`: the link that is left is looked at next
            continue
        end, replacement = found
        before = text[start - 1] if start > cursor else last
        # A code span that touched a backtick or followed a backslash would change width.
        if replacement.startswith("`") and before in ("`", "\\"):
            replacement = " " + replacement
        if replacement.endswith("`") and text.startswith("`", end):
            replacement += " "
        out += [text[cursor:start], replacement]
        last = replacement[-1]
        cursor = pos = end
    out.append(text[cursor:])
    return "".join(out)


def _construct(scan: _Scan, match: re.Match[str]) -> tuple[int, str] | None:
    """(end, what replaces the text from the match to end) for the construct the trigger
    `match` opens, or None when it opens none."""
    start, kind = match.start(), match.lastgroup
    if kind == "angle":
        return _angle(scan, start)
    if kind == "bracket":
        return _bracketed(scan, start)
    if kind == "paren":
        # The `](` of a link this scan did not take as one: escaped, no link forms (nor
        # does an address a span of ours stands in swallow its backticks).
        return start + 2, "]\\("
    if kind in ("marker", "phrase"):
        count(scan.counts, "imitations", 1)
        return match.end(), scan.code(scan.text[start : match.end()])
    url = _BARE_URL.match(scan.masked, start)
    end = _url_end(scan.masked, start, url.end()) if url else start
    if end <= start + len("www."):
        return None
    count(scan.counts, "links", 1)
    return end, scan.code(scan.text[start:end])


def _angle(scan: _Scan, start: int) -> tuple[int, str] | None:
    """An autolink (`<https://...>`), an HTML tag or comment, or a `<` that opens one."""
    window = scan.masked[start : start + MAX_CONSTRUCT_CHARS]
    auto = _AUTOLINK.match(window)
    if auto is not None:
        count(scan.counts, "links", 1)
        return start + auto.end(), scan.code(scan.text[start + 1 : start + auto.end() - 1])
    tag = _HTML.match(window)
    if tag is not None and "\n" not in tag.group(0):
        end = start + tag.end()
        html = scan.text[start:end]
        count(scan.counts, "remote" if _REMOTE.search(html) else "markup", 1)
        return end, scan.code(html)
    if _HTML_START.match(window):
        # An unclosed tag or comment: its `<` is escaped, so it opens nothing.
        count(scan.counts, "markup", 1)
        return start + 1, "\\<"
    return None


def _bracketed(scan: _Scan, start: int) -> tuple[int, str] | None:
    """An image (`![alt](src)`, `![alt][ref]`, `![alt]`), a web link (`[text](url)`), or a
    wikilink (kept for the checker, unless it names a URL)."""
    text, masked = scan.text, scan.masked
    image = masked[start] == "!"
    bracket = start + 1 if image else start
    if masked.startswith("[[", bracket):
        return _wikilink(scan, start, image)
    close = _matching_bracket(masked, bracket)
    after = close + 1 if close is not None else bracket
    end: int | None = after
    if close is not None and masked.startswith("(", after):
        end = _link_end(masked, after)
    elif close is not None and masked.startswith("[", after):
        ref = _matching_bracket(masked, after)
        end = ref + 1 if ref is not None else after
    if image:
        if close is None or end is None or "\n" in text[start:end]:
            count(scan.counts, "markup", 1)
            return start + 1, "\\!"  # no image can follow an escaped `!`
        found = text[start:end]
        count(scan.counts, "remote" if _REMOTE.search(found) else "markup", 1)
        return end, scan.code(found)
    if close is None or end is None or not masked.startswith("(", after):
        return None  # a reference link leads nowhere: the reply's definitions are escaped
    if "\n" in text[close:end]:
        return None  # its `](` is escaped and its address made inert where they stand
    destination = _destination(text[after + 1 : end - 1])
    count(scan.counts, "links", 1)
    # The label on its own, so that nothing made of it reaches past its `]`.
    inner = _Scan(text[bracket + 1 : close], masked[bracket + 1 : close], scan.counts, scan.fence)
    label = _neutralise(inner).strip()
    shown = scan.code(destination)
    return end, f"{label} ({shown})" if label else shown


def _wikilink(scan: _Scan, start: int, image: bool) -> tuple[int, str] | None:
    """A wikilink or embed is the checker's (an embed is shown as code once checked),
    unless it names a URL (`[[https://...]]` is no note) or an address follows it
    (`![[x]](url)` is an image)."""
    wiki = WIKILINK.match(scan.masked, start)
    if wiki is None:
        return None
    end = wiki.end()
    address = _link_end(scan.masked, end) if scan.masked.startswith("(", end) else None
    if address is None and "://" not in wiki.group(2):
        return end, scan.text[start:end]
    end = address or end
    found = scan.text[start:end]
    count(scan.counts, "remote" if image and _REMOTE.search(found) else "links", 1)
    return end, scan.code(found)


def _matching_bracket(masked: str, open_at: int) -> int | None:
    """The `]` closing the `[` at `open_at`, or None."""
    return _closing(masked, open_at, "[", "]")


def _link_end(masked: str, open_at: int) -> int | None:
    """The end (after its `)`) of the `(destination "title")` opening at `open_at`."""
    close = _closing(masked, open_at, "(", ")", titles=True)
    return close + 1 if close is not None else None


def _closing(
    masked: str, open_at: int, opener: str, closer: str, *, titles: bool = False
) -> int | None:
    """Where the `closer` that matches the `opener` at `open_at` is (nested pairs counted,
    escapes skipped and, with `titles`, quoted link titles), within one paragraph and
    MAX_CONSTRUCT_CHARS; None when there is none."""
    depth = 0
    quote: str | None = None
    limit = min(len(masked), open_at + MAX_CONSTRUCT_CHARS)
    i = open_at
    while i < limit:
        ch = masked[i]
        if ch == "\\":
            i += 2
            continue
        if quote is not None:
            if ch == quote:
                quote = None
        elif titles and ch in "\"'" and masked[i - 1] in " \t\n":
            quote = ch
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i
        elif ch == "\n" and masked.startswith("\n", i + 1):
            return None
        i += 1
    return None


def _destination(inside: str) -> str:
    """The address of what `(destination "title")` holds."""
    inside = inside.strip()
    if inside.startswith("<"):
        return inside[1:].split(">", 1)[0]
    return inside.split(None, 1)[0] if inside else ""


def _url_end(masked: str, start: int, end: int) -> int:
    """Where a bare address ends: before trailing punctuation, and before a closing
    parenthesis it does not open (GitHub's autolink rule)."""
    while end > start:
        ch = masked[end - 1]
        if ch in _URL_TRAILER:
            end -= 1
        elif ch == ")" and masked.count("(", start, end) < masked.count(")", start, end):
            end -= 1
        else:
            break
    return end


def code_span(content: str, fence: int = 1) -> str:
    """`content` as an inline code span of `fence` backticks: on one line, with no `|` a
    table would cut it at, and no backtick (a run inside could pair with one before the
    span and let the rest out): each becomes a modifier grave accent (U+02CB)."""
    content = " ".join(content.split("\n")).replace("|", "\\|").replace("`", "\u02cb")
    ticks = "`" * fence
    return f"{ticks}{content}{ticks}"
