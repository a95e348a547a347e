"""Which words of an answer each wikilink cites: the answer cut into claims.

Pure. A link closes the claim before it (DESIGN §3):
- a link right after a full stop belongs to the sentence it follows (`Fact. [[A]]`);
- a link inside a sentence cites the words before it since the previous link
  (`X [[A]], and Y [[B]].` gives A "X" and B "and Y");
- a link that opens a line (a paragraph, a list item, a table row) cites the words
  after it (`[[A]]: X.`), and a line holding only links (`Sources: [[A]]`) cites the
  uncited claims of the line before it;
- words after a sentence's last link form a claim of their own (uncited) when they
  say something, else they belong to the claim before.
Headings, table header and separator rows, and sentences without a word are not
claims. A claim of fewer than MIN_CLAIM_WORDS words is judged with its whole
sentence (`and` alone says nothing a note could support).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field, replace

from askvault.core.links import MD_LINK_TEXT, WIKILINK, extract_links, mask_code
from askvault.records import Link

MIN_CLAIM_WORDS = 3
_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)+|\w+")
_LINE = re.compile(r"[^\n]*")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
# Quote markers, list markers and task boxes that open a line: not part of its first sentence.
_LINE_PREFIX = re.compile(r"^\s*(?:>\s*)*(?:(?:[-*+]|\d{1,9}[.)])\s+)?(?:\[[ xX]\]\s+)?")
# A sentence ends at . ! ? (and their CJK forms), closing quotes or brackets after them,
# then white space or the end of the line.
_SENTENCE_END = re.compile(r"(?:[.!?]+[\"'”’)\]*_]*(?=\s|$)|[。！？]+)")
# An initial ("J. Smith") ends no sentence; a key of a shortcut does ("press Ctrl+T.").
_ABBREVIATION = re.compile(
    r"(?:\b(?:e\.g|i\.e|vs|cf|etc|approx|incl)|(?<![+\-])\b[A-Z])\.$", re.IGNORECASE
)
# Words a line of citations may hold besides its links (`Source: [[A]]`, `See [[A]]`).
_CITATION_WORDS = frozenset(
    "source sources see cite cited citation citations reference references ref refs from "
    "excerpt excerpts and also quelle quellen fuente fuentes".split()
)
# Between the links of one group: white space, punctuation and "and".
_LINK_GLUE = re.compile(r"^(?:[\s,;:()\[\]]|and\b|&)*$", re.IGNORECASE)


@dataclass(frozen=True)
class CitedLink:
    """A wikilink of the answer with its offsets."""

    start: int
    end: int
    link: Link


@dataclass(frozen=True)
class Claim:
    """Words of the answer and the links that cite them.

    `start`/`end` are the offsets of the claim's words (no link inside them counts);
    `anchor` is where a link added by askvault, or a marker, goes: after the claim's
    words, the punctuation that closes them and the links that follow them.
    """

    start: int
    end: int
    text: str
    sentence: str
    links: tuple[CitedLink, ...] = ()
    anchor: int = 0
    sentence_start: int = 0
    sentence_end: int = 0
    words: int = 0

    @property
    def judged(self) -> str:
        """The text a support check compares: the claim, or its sentence when it is short."""
        return self.text if self.words >= MIN_CLAIM_WORDS else self.sentence


@dataclass
class _Line:
    """The claims of a line, a paragraph or a list, as indices into the answer's claims."""

    claims: list[int] = field(default_factory=list)
    uncited: list[int] = field(default_factory=list)  # those without a link yet, in order

    def add(self, index: int, claim: Claim) -> None:
        self.claims.append(index)
        if not claim.links:
            self.uncited.append(index)

    def extend(self, other: _Line) -> None:
        self.claims.extend(other.claims)
        self.uncited.extend(other.uncited)


class _Spans:
    """The answer's links in reading order, looked up by offset (a long reply has thousands:
    a scan of all of them per line or per claim made the check quadratic)."""

    def __init__(self, spans: list[CitedLink]) -> None:
        self.spans = spans
        self.starts = [s.start for s in spans]
        self.ends = [s.end for s in spans]  # links never overlap: sorted as well

    def starting_in(self, start: int, end: int) -> list[CitedLink]:
        """The links that start in [start, end)."""
        return self.spans[bisect_left(self.starts, start) : bisect_left(self.starts, end)]

    def overlapping(self, start: int, end: int) -> list[CitedLink]:
        """The links that share a character with [start, end)."""
        return self.spans[bisect_right(self.ends, start) : bisect_left(self.starts, end)]


def link_spans(text: str) -> list[CitedLink]:
    """Every recognised wikilink of `text` with its offsets, per DESIGN §4."""
    if "[[" not in text:
        return []
    masked = mask_code(text)
    masked = MD_LINK_TEXT.sub(lambda m: " " * len(m.group(0)), masked)
    spans: list[CitedLink] = []
    for match in WIKILINK.finditer(masked):
        start = match.start()
        before = start
        while before > 0 and masked[before - 1] == "\\":
            before -= 1
        if (start - before) % 2 == 1:
            continue
        parsed = extract_links(text[start : match.end()])
        if parsed:
            spans.append(CitedLink(start, match.end(), parsed[0]))
    return spans


def strip_links(text: str) -> str:
    """`text` without its wikilinks, spaces tidied (link words would inflate any overlap)."""
    text = " ".join(WIKILINK.sub(" ", text).split())
    return re.sub(r"\s+([.,;:!?])(?=\s|$)", r"\1", text)


def split_claims(answer: str) -> list[Claim]:
    """The claims of `answer` in reading order, each with the links that cite it."""
    # An embed in an answer is an example of syntax, not a citation: its text stays in
    # the claim (and is shown as code, see citations.annotate_answer).
    spans = _Spans([s for s in link_spans(answer) if not s.link.embed])
    # Words are looked for with links and code blanked, so `[[file.pdf]]` ends no sentence
    # and a link's name is never a claim's word.
    masked = mask_code(answer)
    plain = _blank_spans(masked, spans.spans)
    lines = _line_spans(answer)
    claims: list[Claim] = []
    block = _Line()  # the claims of the paragraph or list being read
    previous = _Line()  # those of the one before the last blank line
    for row, (start, end) in enumerate(lines):
        text = masked[start:end]
        if not answer[start:end].strip():
            if block.claims:
                previous, block = block, _Line()
            continue
        line_links = spans.starting_in(start, end)
        if _HEADING.match(text) or _is_separator(text):
            block, previous = _Line(), _Line()
            continue
        if (
            _TABLE_ROW.match(text)
            and row + 1 < len(lines)
            and _is_separator(masked[slice(*lines[row + 1])])
        ):
            block, previous = _Line(), _Line()  # a header row names columns, it claims nothing
            continue
        if line_links and _only_citation_words(plain[start:end]):
            _attach(block if block.claims else previous, line_links, claims)
            continue
        line = _Line()
        prefix = _LINE_PREFIX.match(text)
        content_start = start + (prefix.end() if prefix else 0)
        for s0, s1 in _sentences(answer, plain, content_start, end):
            _cut_sentence(answer, plain, spans, s0, s1, spans.starting_in(s0, s1), line, claims)
        block.extend(line)
    # A marker or an added link goes after the links that already close the claim.
    return [
        replace(
            c, anchor=max([c.anchor] + [span.end for span in c.links if span.start >= c.anchor])
        )
        for c in claims
    ]


def _blank_spans(text: str, spans: list[CitedLink]) -> str:
    """`text` with each of `spans` (in order, apart) replaced by spaces."""
    if not spans:
        return text
    pieces = []
    cursor = 0
    for s in spans:
        pieces += [text[cursor : s.start], " " * (s.end - s.start)]
        cursor = s.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _line_spans(text: str) -> list[tuple[int, int]]:
    out = []
    start = 0
    for line in text.split("\n"):
        out.append((start, start + len(line)))
        start += len(line) + 1
    return out


def _is_separator(line: str) -> bool:
    return "-" in line and _TABLE_SEPARATOR.match(line) is not None


def _only_citation_words(plain: str) -> bool:
    words = [w.casefold() for w in _WORD.findall(plain.replace("|", " "))]
    return all(w in _CITATION_WORDS for w in words)


def _sentences(answer: str, plain: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each sentence of plain[start:end]; one of links only counts too."""
    out = []
    cursor = start
    for match in _SENTENCE_END.finditer(plain, start, end):
        if _ABBREVIATION.search(plain[max(cursor, match.start() - 8) : match.start() + 1]):
            continue
        out.append((cursor, match.end()))
        cursor = match.end()
    if cursor < end:
        out.append((cursor, end))
    return [(s, e) for s, e in out if answer[s:e].strip()]


def text_sentences(text: str) -> list[str]:
    """The sentences of a note's text (an excerpt), line by line, as an answer's are cut:
    a list, quote or task marker opens its line's first sentence and is none itself
    ("1. Open the file manager." is one sentence, not "1." and another), an abbreviation
    ("e.g.") ends none, and nothing in code does."""
    masked = mask_code(text)
    out: list[str] = []
    for start, end in _line_spans(text):
        prefix = _LINE_PREFIX.match(text[start:end])
        content_start = start + (prefix.end() if prefix else 0)
        out.extend(text[s:e].strip() for s, e in _sentences(text, masked, content_start, end))
    return out


def _cut_sentence(
    answer: str,
    plain: str,
    spans: _Spans,
    s0: int,
    s1: int,
    sentence_links: list[CitedLink],
    line: _Line,
    claims: list[Claim],
) -> None:
    """Cut one sentence into claims at its links; append them to `claims` and `line`."""
    groups = _groups(answer, sentence_links)
    pending: list[CitedLink] = []
    seg_start = s0
    if groups and not _words(plain, s0, groups[0][0].start):
        # The sentence opens with links: after a full stop they close the sentence before;
        # at the start of a line they cite what follows.
        lead = groups.pop(0)
        if line.claims:
            _attach(line, lead, claims, last_only=True)
        else:
            pending = list(lead)
        seg_start = lead[-1].end
    own: list[Claim] = []
    for group in groups:
        words = _words(plain, seg_start, group[0].start)
        if not words:
            if own:
                own[-1] = _with_links(own[-1], group)
            else:
                pending += group
            seg_start = group[-1].end
        elif words < MIN_CLAIM_WORDS and not own:
            pending += group  # `According to [[A]], X.`: the link cites the sentence
        else:
            own.append(
                _claim(answer, plain, spans, seg_start, group[0].start, s0, s1, pending + group)
            )
            pending = []
            seg_start = group[-1].end
    tail = _words(plain, seg_start, s1)
    if tail and (pending or not own or tail >= MIN_CLAIM_WORDS):
        own.append(_claim(answer, plain, spans, seg_start, s1, s0, s1, pending))
    elif tail:
        own[-1] = _claim(answer, plain, spans, own[-1].start, s1, s0, s1, list(own[-1].links))
    elif pending:
        if own:
            own[-1] = _with_links(own[-1], pending)
        else:
            _attach(line, pending, claims, last_only=True)
    for claim in own:
        line.add(len(claims), claim)
        claims.append(claim)


def _groups(answer: str, links: list[CitedLink]) -> list[list[CitedLink]]:
    """Links side by side (only spaces, commas, `and` between them) form one group."""
    groups: list[list[CitedLink]] = []
    for link in links:
        if groups and _LINK_GLUE.match(answer[groups[-1][-1].end : link.start]):
            groups[-1].append(link)
        else:
            groups.append([link])
    return groups


def _words(plain: str, start: int, end: int) -> int:
    """Words in plain[start:end]; `192.168.178.1` or `1,000` counts as one."""
    return len(_TOKEN.findall(plain[start:end].replace("|", " ")))


def _claim(
    answer: str,
    plain: str,
    spans: _Spans,
    start: int,
    end: int,
    s0: int,
    s1: int,
    links: list[CitedLink],
) -> Claim:
    return Claim(
        start=start,
        end=end,
        text=_text_without_links(answer, spans, start, end),
        sentence=_text_without_links(answer, spans, s0, s1),
        links=tuple(links),
        anchor=_anchor(answer, plain, start, end),
        sentence_start=s0,
        sentence_end=s1,
        words=_words(plain, start, end),
    )


def _text_without_links(answer: str, spans: _Spans, start: int, end: int) -> str:
    """answer[start:end] without the recognised links in it (links in code stay: code)."""
    pieces = []
    cursor = start
    for s in spans.overlapping(start, end):
        pieces.append(answer[cursor : max(cursor, s.start)])
        cursor = max(cursor, s.end)
    pieces.append(answer[cursor:end])
    text = " ".join(" ".join(pieces).split())
    return _tidy(re.sub(r"\s+([.,;:!?])(?=\s|$)", r"\1", text))


def _anchor(answer: str, plain: str, start: int, end: int) -> int:
    """After the claim's last word and the punctuation closing it; before trailing links."""
    pos = end
    while pos > start and plain[pos - 1].isspace():
        pos -= 1
    return pos if pos > start else end


def _with_links(claim: Claim, links: list[CitedLink]) -> Claim:
    return replace(claim, links=claim.links + tuple(links))


def _attach(
    targets: _Line, links: list[CitedLink], claims: list[Claim], *, last_only: bool = False
) -> None:
    """Give `links` to the last claim of `targets`, or (a line of links) to each uncited one
    of them, else the last; `claims` and `targets` are updated in place."""
    if not targets.claims:
        return
    if last_only or not targets.uncited:
        chosen = [targets.claims[-1]]
    else:
        chosen, targets.uncited = targets.uncited, []
    for i in chosen:
        claims[i] = _with_links(claims[i], links)
    if targets.uncited and targets.uncited[-1] == chosen[-1]:
        targets.uncited.pop()


def _tidy(text: str) -> str:
    text = text.replace("|", " ")
    text = " ".join(text.split())
    return text.strip(" ,;:-–—*_>").strip()
