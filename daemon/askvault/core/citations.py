"""Citation checking of an answer: which wikilinks it has, where they lead, what backs them.

Pure: the caller reads the cited notes (fresh, after generation) and hands in
their parsed form. States (DESIGN §3): `resolved` (to a note, and to the heading
or block when one is named), `pending` (no such note, but a review candidate in
queries/ has that slug), `broken` (anything else, including a `#Heading` or
`#^block` missing from the resolved note — Obsidian would open the page but not
the place the answer points at). Broken links are rendered as plain text.

Support is lexical: the citing sentence, links removed, against the cited note's
text (its section when a heading is named): the share of the sentence's word
trigrams found in the note, plus the longest common run of words.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from askvault.core.links import (
    LinkIndex,
    extract_links,
    heading_matches,
    mask_code,
    normalize_name,
    resolve_link,
    unique_targets,
)
from askvault.records import Link, ParsedNote

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]*)\]\]")
_MD_LINK_TEXT = re.compile(r"\[((?:[^\[\]\n]|\[\[[^\[\]\n]*\]\])*)\]\([^)\n]*\)")
_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+(?=\s|$)|\n|$)")
_SLUG = re.compile(r"[^\w]+")
SUPPORTED_MIN_COVERAGE = 0.6
WEAK_MIN_COVERAGE = 0.25
SUPPORTED_MIN_RUN = 8
WEAK_MIN_RUN = 4


@dataclass(frozen=True)
class Support:
    """How well one citing sentence is backed by the cited note's text."""

    sentence: str
    verdict: str  # supported | weak | unsupported
    coverage: float
    span: str | None


@dataclass(frozen=True)
class Citation:
    """One unique wikilink of an answer and what became of it."""

    link: Link
    state: str  # resolved | pending | broken
    path: str | None = None
    heading: str | None = None
    reason: str = ""
    supports: tuple[Support, ...] = ()

    @property
    def target(self) -> str:
        """The link as written, without label: `A`, `A#Heading`, `A#^block`."""
        return link_target_text(self.link)

    @property
    def support(self) -> str | None:
        """The best verdict over the citing sentences, or None when not checked."""
        order = ("supported", "weak", "unsupported")
        verdicts = [s.verdict for s in self.supports]
        return next((v for v in order if v in verdicts), None)


@dataclass(frozen=True)
class CitationReport:
    """The answer's citations in first-occurrence order, or why they could not be collected."""

    citations: tuple[Citation, ...] = ()
    error: str | None = None

    def count(self, state: str) -> int:
        """How many citations are in `state`."""
        return sum(1 for c in self.citations if c.state == state)


def link_target_text(link: Link) -> str:
    """`A`, `A#Heading` or `A#^block` for a link."""
    text = link.target
    if link.heading:
        text += f"#{link.heading}"
    if link.block:
        text += f"#^{link.block}"
    return text


def slug(name: str) -> str:
    """A name reduced to lower-case words joined by `-` (how pending candidates are matched)."""
    base = name.rsplit("/", 1)[-1]
    base = re.sub(r"\.md$", "", base, flags=re.IGNORECASE)
    return _SLUG.sub("-", normalize_name(base)).strip("-")


def link_spans(text: str) -> list[tuple[int, int, Link]]:
    """Every recognised wikilink of `text` with its (start, end) offsets, per DESIGN §4."""
    masked = mask_code(text)
    masked = _MD_LINK_TEXT.sub(lambda m: " " * len(m.group(0)), masked)
    spans: list[tuple[int, int, Link]] = []
    for match in _WIKILINK.finditer(masked):
        start = match.start()
        backslashes = len(masked[:start]) - len(masked[:start].rstrip("\\"))
        if backslashes % 2 == 1:
            continue
        parsed = extract_links(text[start : match.end()])
        if parsed:
            spans.append((start, match.end(), parsed[0]))
    return spans


def check_citations(
    answer: str,
    index: LinkIndex,
    notes: Mapping[str, ParsedNote],
    pending_slugs: Collection[str] = (),
) -> CitationReport:
    """Extract, resolve and check the answer's citations.

    `notes` holds a fresh parse of every note the links may resolve to (missing
    entries count as unreadable: broken). `pending_slugs` are `slug()`s of the
    review candidates in queries/.
    """
    sentences = split_sentences(answer)
    citations = []
    for link in unique_targets(extract_links(answer)):
        citations.append(_check_one(link, answer, sentences, index, notes, pending_slugs))
    return CitationReport(tuple(citations))


def _check_one(
    link: Link,
    answer: str,
    sentences: list[tuple[int, int]],
    index: LinkIndex,
    notes: Mapping[str, ParsedNote],
    pending_slugs: Collection[str],
) -> Citation:
    path = resolve_link(link.target, index) if link.target else None
    if path is None:
        if link.target and slug(link.target) in set(pending_slugs):
            return Citation(link, "pending", reason="a review candidate in queries/ has this name")
        why = "same-note link: an answer has no headings" if not link.target else "no such note"
        return Citation(link, "broken", reason=why)
    note = notes.get(path)
    if note is None:
        return Citation(link, "broken", path=path, reason=f"{path} could not be read")
    heading_text: str | None = None
    section = note.body
    if link.heading:
        found = heading_matches(link.heading, note.headings)
        if found is None:
            return Citation(link, "broken", path=path, reason=f"no heading {link.heading!r} in {path}")
        heading_text = found.text
        section = section_text(note, found.line)
    if link.block and link.block.casefold() not in {b.casefold() for b in note.block_ids}:
        return Citation(link, "broken", path=path, reason=f"no block ^{link.block} in {path}")
    supports = tuple(
        check_support(sentence, section if section.strip() else note.body)
        for sentence in citing_sentences(answer, sentences, link)
    )
    return Citation(link, "resolved", path=path, heading=heading_text, supports=supports)


def section_text(note: ParsedNote, heading_line: int) -> str:
    """The body lines from the heading at file line `heading_line` to the next one not deeper."""
    lines = note.body.split("\n")
    level = next((h.level for h in note.headings if h.line == heading_line), 6)
    end_line = next(
        (h.line for h in note.headings if h.line > heading_line and h.level <= level), None
    )
    first = heading_line - note.body_start_line
    last = (end_line - note.body_start_line) if end_line else len(lines)
    return "\n".join(lines[max(first, 0) : last])


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`; a line break also ends one."""
    spans = []
    for match in _SENTENCE.finditer(text):
        if match.group(0).strip():
            spans.append((match.start(), match.end()))
    return spans


def citing_sentences(answer: str, sentences: list[tuple[int, int]], link: Link) -> list[str]:
    """The text each occurrence of `link` cites (same target, heading and block).

    That is the part of its sentence before the link, after any earlier link
    that already closed a claim (`X [[A]], and Y [[B]].` gives B the text "and Y");
    the whole sentence when nothing precedes the link, and the sentence before
    when the link stands alone after a full stop (`Fact. [[A]]`).
    """
    key = (normalize_name(link.target), link.heading, link.block)
    spans = link_spans(answer)
    found: list[str] = []
    for start, _end, other in spans:
        if (normalize_name(other.target), other.heading, other.block) != key:
            continue
        index = next((i for i, (s, e) in enumerate(sentences) if s <= start < e), None)
        if index is None:
            continue
        s, e = sentences[index]
        claim_start = s
        for prev_start, prev_end, _ in spans:
            if s <= prev_start and prev_end <= start and _WORD.search(answer[prev_end:start]):
                claim_start = prev_end
        text = strip_links(answer[claim_start:start])
        if not _WORD.search(text):
            text = strip_links(answer[s:e])
        if not _WORD.search(text) and index > 0:
            text = strip_links(answer[slice(*sentences[index - 1])])
        text = text.strip(" ,;:")
        if text and text not in found:
            found.append(text)
    return found


def strip_links(text: str) -> str:
    """`text` without its wikilinks (their words would inflate the overlap), spaces tidied."""
    text = " ".join(_WIKILINK.sub(" ", text).split())
    return re.sub(r"\s+([.,;:!?])", r"\1", text)


def check_support(sentence: str, note_text: str) -> Support:
    """Compare one sentence with a note's text: supported, weak or unsupported, with the span."""
    words = [w.casefold() for w in _WORD.findall(sentence)]
    note_matches = list(_WORD.finditer(note_text))
    note_words = [m.group(0).casefold() for m in note_matches]
    if not words or not note_words:
        return Support(sentence, "unsupported", 0.0, None)
    n = 3 if len(words) >= 3 else len(words)
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    note_grams = {tuple(note_words[i : i + n]) for i in range(len(note_words) - n + 1)}
    coverage = sum(1 for g in grams if g in note_grams) / len(grams)
    run, end = _longest_common_run(words, note_words)
    span = None
    if run:
        first = note_matches[end - run]
        last = note_matches[end - 1]
        span = note_text[first.start() : last.end()]
    if coverage >= SUPPORTED_MIN_COVERAGE or run >= SUPPORTED_MIN_RUN or run == len(words) >= 2:
        verdict = "supported"
    elif coverage >= WEAK_MIN_COVERAGE or run >= WEAK_MIN_RUN:
        verdict = "weak"
    else:
        verdict = "unsupported"
    if verdict == "unsupported":
        span = None
    return Support(sentence, verdict, round(coverage, 3), span)


def _longest_common_run(a: list[str], b: list[str]) -> tuple[int, int]:
    """Length of the longest common run of words, and where it ends in `b` (exclusive)."""
    # Only positions of `b` holding a word of `a` matter: notes are long, sentences short.
    wanted = set(a)
    positions: dict[str, list[int]] = {}
    for j, word in enumerate(b):
        if word in wanted:
            positions.setdefault(word, []).append(j)
    best, best_end = 0, 0
    previous: dict[int, int] = {}
    for word in a:
        current: dict[int, int] = {}
        for j in positions.get(word, ()):
            current[j] = previous.get(j - 1, 0) + 1
            if current[j] > best:
                best, best_end = current[j], j + 1
        previous = current
    return best, best_end


def render_broken_as_text(answer: str, report: CitationReport) -> str:
    """The answer with every broken link replaced by its plain text (label, else target)."""
    broken = {
        (normalize_name(c.link.target), c.link.heading, c.link.block)
        for c in report.citations
        if c.state == "broken"
    }
    if not broken:
        return answer
    out: list[str] = []
    cursor = 0
    for start, end, link in link_spans(answer):
        if (normalize_name(link.target), link.heading, link.block) not in broken:
            continue
        out.append(answer[cursor:start])
        out.append(link.label or link_target_text(link))
        cursor = end
    out.append(answer[cursor:])
    return "".join(out)
