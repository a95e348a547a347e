"""Cutting a parsed note into chunks: the units of retrieval and embedding.

A chunk starts at every heading. Inside a section, blocks (paragraphs; a fenced
code block, a table, a list or a callout each kept whole where it fits) are
grouped with content-defined boundaries: whether a block ends a chunk depends
only on the block's own text (a hash draw), never on its position. A block is a
boundary with probability tokens(block) / (max_tokens / 2), so chunks average
about half the cap whatever the paragraph sizes. A group that still exceeds the
cap is re-cut at a finer boundary level (odds doubled, so the finer cuts include
the coarser ones) and its pieces re-joined while they fit; the re-cut stays
inside that group. So inserting, deleting or editing one block changes the
chunk(s) holding it and nothing past the next boundary: measured on 40-paragraph
notes, an edit changes at most 2 chunks in about 98% of cases, 3 otherwise (when
it pushes a group over the cap).

A block over the cap is split at lines, then sentences, then words, then
characters, with the same grouping rule at each level: never truncated.
Chunk text is the exact source text of the body (no title or path, so a rename
changes no hash).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import accumulate

from askvault.core.links import fenced_blocks, has_fences
from askvault.records import Chunk, ParsedNote

# estimate_tokens weights, fitted against the bert-base-uncased WordPiece tokenizer
# (all-MiniLM-L6-v2; nomic-embed-text uses the same vocabulary) on 38,668
# paragraphs of three real vaults: the estimate is below the true count for 2% of
# them (by more than 10% for 1.1%), median 1.19x, 1.16x overall. The simpler
# max(chars/3.2, words*1.4) was below for 52% of them: punctuation and markup are
# one token per character, and long words split into several pieces.
TOKENS_PER_RUN = 1.0  # a run of letters/digits
TOKENS_PER_RUN_CHAR = 0.15  # long runs split into word pieces
TOKENS_PER_HANGUL = 2.5  # uncased BERT decomposes syllables into jamo
MIN_MAX_TOKENS = 8
# Bumped whenever the same note would be cut differently; the indexer re-chunks every note
# once when this or `index.chunk_max_tokens` changes. 2: a heading no longer stands alone
# before an over-long paragraph.
CHUNKER_VERSION = 2
_MAX_LEVEL = 16  # 2**16 times the base boundary odds: every non-heading unit is one
# A character split's first probe, and the steps of its gallop (a piece is ~400-2,700 chars).
_FIRST_GUESS_CHARS = 1024
_GALLOP_STEP_CHARS = 16

# Han, kana, CJK symbols and full-width forms: one token per character.
_CJK = re.compile(
    "[\u2e80-\u2fdf\u3000-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0002fa1f]"
)
_HANGUL = re.compile("[\u1100-\u11ff\ua960-\ua97f\uac00-\ud7af]")
_RUN = re.compile(r"[^\W_]+")
_PUNCT = re.compile(r"[^\w\s]|_")
_WORD = re.compile(r"\S+")
_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s)|[。！？]|$)", re.DOTALL)
_LINE = re.compile(r"[^\n]*\S[^\n]*")
_CJK_STOPS = "。！？"  # end a sentence of `_SENTENCE` with no space after them
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_TRAILING_BLANK_LINES = re.compile(r"(?:\n[ \t]*)+$")
_PLUS_ONE = (1).__add__


def estimate_tokens(text: str) -> int:
    """A cheap token count that errs high for WordPiece/BPE embedding tokenizers.

    Each run of letters/digits counts 1 + 0.15 per character, each punctuation
    character 1, each CJK character 1, each Hangul syllable 2.5. The count is
    additive over whitespace-separated pieces (up to rounding, which only
    raises the sum), so a chunk's estimate never exceeds the sum of its blocks'.
    """
    return math.ceil(_estimate(text))


def _estimate(text: str) -> float:
    """The unrounded estimate: exactly additive, so chunk sums stay tight."""
    return _estimate_classes(text.translate(_CLASSES))


class _CharClasses(dict[int, str]):
    """Code point -> class letter for `str.translate`, filled on first sight.

    Classifying characters once and counting letters with `str.count` gives the
    same counts as running the regexes over every unit, several times faster.
    """

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if _CJK.match(char):
            letter = "c"
        elif _HANGUL.match(char):
            letter = "h"
        elif _RUN.match(char):
            letter = "a"
        elif _PUNCT.match(char):
            letter = "."
        else:
            letter = " "
        # Bounded so that a note holding every code point cannot grow it without end.
        if len(self) < _MAX_CACHED_CLASSES:
            self[code] = letter
        return letter


_MAX_CACHED_CLASSES = 65_536
_CLASSES = _CharClasses()


def _estimate_classes(classes: str) -> float:
    """`_estimate` of a text given as its class letters (`text.translate(_CLASSES)`).

    The float operations are the ones of the regex formulation, in the same
    order, so results (and so chunk boundaries) are bit-identical.
    """
    if not classes:
        return 0.0
    total = 0.0
    cjk = classes.count("c")
    hangul = classes.count("h")
    # A run is a letter/digit not preceded by one; CJK and Hangul count as separators.
    runs = classes.count(" a") + classes.count(".a") + (classes[0] == "a")
    if cjk or hangul:
        total += cjk + hangul * TOKENS_PER_HANGUL
        runs += classes.count("ca") + classes.count("ha")
    total += runs * TOKENS_PER_RUN + classes.count("a") * TOKENS_PER_RUN_CHAR
    return total + classes.count(".")


@dataclass(slots=True)
class _Unit:
    """A span of the body: [start, end) offsets and 0-based first/last body lines."""

    start: int
    end: int
    first_line: int
    last_line: int
    tokens: float
    draw: float
    heading: bool = False


@dataclass(slots=True)
class _Body:
    """The note body with its per-character classes, computed once per note."""

    text: str
    classes: str
    wide: bool  # holds CJK or Hangul characters


def chunk_note(note: ParsedNote, max_tokens: int = 400) -> list[Chunk]:
    """Cut `note.body` into chunks of at most `max_tokens` estimated tokens.

    Line numbers are lines of the file (`body_start_line` applied); an empty or
    whitespace-only body gives no chunks.
    """
    if max_tokens < MIN_MAX_TOKENS:
        raise ValueError(f"max_tokens must be at least {MIN_MAX_TOKENS}, got {max_tokens}")
    body = note.body
    if not body.strip():
        return []
    lines = body.split("\n")
    starts = _line_starts(lines)
    classes = body.translate(_CLASSES)
    source = _Body(body, classes, "c" in classes or "h" in classes)
    heading_rows = {
        heading.line - note.body_start_line: heading
        for heading in note.headings
        if 0 <= heading.line - note.body_start_line < len(lines)
    }
    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    path: tuple[str, ...] = ()
    blocks = fenced_blocks(lines) if has_fences(body) else []
    for heading_row, section in _sections(lines, set(heading_rows), blocks):
        if heading_row is not None:
            heading = heading_rows[heading_row]
            while stack and stack[-1][0] >= heading.level:
                stack.pop()
            stack.append((heading.level, heading.text))
            path = tuple(text for _, text in stack)
        # A heading never ends its chunk and the last unit ends it anyway: their
        # coins are never read, so they are not drawn (a sha256 per unit saved).
        last = len(section) - 1
        skip_first = heading_row is not None
        units = [
            _make_unit(
                source,
                starts[a],
                starts[b] + len(lines[b]),
                a,
                b,
                coin=index != last and (index > 0 or not skip_first),
            )
            for index, (a, b) in enumerate(section)
        ]
        if skip_first:
            units[0].heading = True
        for group in _group(source, units, max_tokens):
            text = body[group[0].start : group[-1].end]
            if text[-1:] in ("\n", " ", "\t"):  # the regex scans every line: only when needed
                text = _TRAILING_BLANK_LINES.sub("", text)
            chunks.append(
                Chunk(
                    text=text,
                    text_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    heading_path=path,
                    start_line=group[0].first_line + note.body_start_line,
                    end_line=group[-1].last_line + note.body_start_line,
                    position=len(chunks),
                )
            )
    return chunks


def _make_unit(
    body: _Body, start: int, end: int, first_line: int, last_line: int, *, coin: bool = True
) -> _Unit:
    """A unit for body[start:end]; without `coin`, for a unit whose draw is never
    read, the draw is a placeholder 1.0 and no hash is computed."""
    classes = body.classes[start:end]
    if body.wide:
        tokens = _estimate_classes(classes)
    else:  # `_estimate_classes` without CJK and Hangul, inlined: once per block of every note
        runs = classes.count(" a") + classes.count(".a") + (classes[:1] == "a")
        tokens = runs * TOKENS_PER_RUN + classes.count("a") * TOKENS_PER_RUN_CHAR
        tokens += classes.count(".")
    if not coin:
        return _Unit(start, end, first_line, last_line, tokens, 1.0)
    # The content-defined coin: a number in [0, 1) fixed by the text alone.
    digest = hashlib.sha256(body.text[start:end].encode("utf-8")).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64
    return _Unit(start, end, first_line, last_line, tokens, draw)


def _line_starts(lines: Sequence[str]) -> list[int]:
    """The offset of each line in the text the lines were split from."""
    return [0, *accumulate(map(_PLUS_ONE, map(len, lines[:-1])))]


def _sections(
    lines: list[str], headings: AbstractSet[int], blocks: list[tuple[int, int]]
) -> Iterator[tuple[int | None, list[tuple[int, int]]]]:
    """Yield (heading row or None, blocks as (first, last) rows) per section."""
    fence_end = dict(blocks)
    stops = fence_end.keys() | headings  # rows that always start a new block
    filled = [line != "" and not line.isspace() for line in lines]
    count = len(lines)
    current: list[tuple[int, int]] = []
    current_heading: int | None = None
    row = 0
    while row < count:
        if row in headings:
            if current or current_heading is not None:
                yield current_heading, current
            current, current_heading = [(row, row)], row
            row += 1
            continue
        if not filled[row]:
            row += 1
            continue
        end = fence_end.get(row)
        if end is None:
            end = row + 1
            while end < count and filled[end] and end not in stops:
                end += 1
            end -= 1
        if (
            current
            and current_heading != current[-1][0]
            and _continues_list(lines, current[-1], row)
        ):
            current[-1] = (current[-1][0], end)
        else:
            current.append((row, end))
        row = end + 1
    if current or current_heading is not None:
        yield current_heading, current


def _continues_list(lines: list[str], previous: tuple[int, int], row: int) -> bool:
    """A loose list (items apart by blank lines) stays one block: `row` continues
    the list block `previous` when it is another item or an indented continuation."""
    if not _LIST_ITEM.match(lines[previous[0]]):
        return False
    line = lines[row]
    return bool(_LIST_ITEM.match(line)) or line.startswith(("  ", "\t"))


def _group(body: _Body, units: list[_Unit], max_tokens: int) -> Iterator[list[_Unit]]:
    """Group units into chunks; a unit over the cap is split into smaller units first."""
    run: list[_Unit] = []
    for unit in units:
        if unit.tokens > max_tokens:
            # Headings just before the long unit go with its first piece, not alone.
            lead = len(run)
            while lead and run[lead - 1].heading:
                lead -= 1
            if lead:
                yield from _cut(run[:lead], max_tokens, 0)
            yield from _group(body, run[lead:] + _split(body, unit, max_tokens), max_tokens)
            run = []
        else:
            run.append(unit)
    if len(run) == 1:  # a lone unit under the cap is its own chunk, cut or not
        yield run
    elif run:
        yield from _cut(run, max_tokens, 0)


def _cut(units: list[_Unit], max_tokens: int, level: int) -> Iterator[list[_Unit]]:
    """Cut after every content boundary of `level`; a piece still over the cap is
    cut again at the next level, where boundaries are twice as likely.

    A boundary of one level is one at every higher level, so pieces nest and an
    edit cannot move a cut outside the piece that holds it. (Plain filling up to
    the cap would shift every later chunk up to the next boundary.)
    """
    limit = max_tokens / 2 / 2**level
    piece: list[_Unit] = []
    for unit in units:
        piece.append(unit)
        # A heading never ends its chunk alone: it belongs with what it introduces.
        if not unit.heading and unit.draw < unit.tokens / limit:
            yield from _fit(piece, max_tokens, level)
            piece = []
    if piece:
        yield from _fit(piece, max_tokens, level)


def _fit(piece: list[_Unit], max_tokens: int, level: int) -> Iterator[list[_Unit]]:
    if sum(unit.tokens for unit in piece) <= max_tokens:
        yield piece
    elif level < _MAX_LEVEL and len(piece) > 1:
        yield from _merge(_cut(piece, max_tokens, level + 1), max_tokens)
    else:
        yield from _fill(piece, max_tokens)


def _merge(pieces: Iterator[list[_Unit]], max_tokens: int) -> Iterator[list[_Unit]]:
    """Join neighbouring pieces while they fit, so an over-long run is not shredded."""
    current: list[_Unit] = []
    total = 0.0
    for piece in pieces:
        size = sum(unit.tokens for unit in piece)
        if current and total + size > max_tokens:
            yield current
            current, total = [], 0.0
        current = current + piece
        total += size
    if current:
        yield current


def _fill(units: list[_Unit], max_tokens: int) -> Iterator[list[_Unit]]:
    """Greedy packing, only for what content boundaries cannot cut (headings)."""
    current: list[_Unit] = []
    total = 0.0
    for unit in units:
        if current and total + unit.tokens > max_tokens:
            yield current
            current, total = [], 0.0
        current.append(unit)
        total += unit.tokens
    if current:
        yield current


def _split(body: _Body, unit: _Unit, max_tokens: int) -> list[_Unit]:
    """Split an over-long unit at lines, else sentences, else words, else characters."""
    text = body.text[unit.start : unit.end]
    if unit.first_line != unit.last_line:
        pattern = _LINE
    elif len(text.split(maxsplit=1)) <= 1 and not any(stop in text for stop in _CJK_STOPS):
        # One word and no CJK full stop, so one sentence: what the patterns below would
        # find, said up front (the sentence pattern's lazy scan of a 5 MB base64 line alone
        # took 0.15 s).
        return _split_characters(body, unit, text, max_tokens)
    else:
        pattern = _SENTENCE if len(_SENTENCE.findall(text)) > 1 else _WORD
        if pattern is _WORD and len(_WORD.findall(text)) <= 1:
            return _split_characters(body, unit, text, max_tokens)
    units: list[_Unit] = []
    line, counted = unit.first_line, 0
    for match in pattern.finditer(text):
        piece = match.group(0).rstrip()
        if not piece:
            continue
        start = unit.start + match.start()
        line += text.count("\n", counted, match.start())
        counted = match.start()
        units.append(_make_unit(body, start, start + len(piece), line, line))
    return units


def _split_characters(body: _Body, unit: _Unit, text: str, max_tokens: int) -> list[_Unit]:
    """Last resort for one enormous word: pieces as long as the cap allows."""
    units: list[_Unit] = []
    classes = body.classes[unit.start : unit.end]
    begin, guess = 0, _FIRST_GUESS_CHARS
    while begin < len(text):
        end = _longest_fitting(classes, begin, max_tokens, body.wide, guess)
        units.append(
            _make_unit(body, unit.start + begin, unit.start + end, unit.first_line, unit.last_line)
        )
        begin, guess = end, end - begin
    return units


def _longest_fitting(classes: str, begin: int, max_tokens: int, wide: bool, guess: int) -> int:
    """The largest `end` with `_estimate_classes(classes[begin:end]) <= max_tokens`, at least
    `begin + 1`.

    The estimate only grows as a prefix grows, so any search finds the same end as the
    bisection over the whole rest of the text did; that one re-counted the whole prefix at
    every probe, which made a 5 MB line quadratic (54 s). This one starts at `guess` (the
    previous piece's length: the pieces of one word are alike), gallops away from it in
    steps of 16, 32, 64... characters, then bisects, and counts only the characters between
    two probes (`_Counts` add up exactly): each character is counted about twice.
    """

    def count(start: int, end: int) -> _Counts:
        return _Counts.of(classes, start, end, wide)

    def fits(counts: _Counts) -> bool:
        return counts.tokens() <= max_tokens

    low, high = begin + 1, len(classes)  # the answer is in [low, high]
    probe = min(max(begin + guess, low), high)
    at_probe = count(begin, probe)
    step = _GALLOP_STEP_CHARS
    if fits(at_probe):
        low, at_low = probe, at_probe
        while low < high:
            probe = min(low + step, high)
            at_probe = at_low.joined(count(low, probe), classes, low)
            if not fits(at_probe):
                high = probe - 1
                break
            low, at_low, step = probe, at_probe, step * 2
    else:
        high, at_low = probe - 1, count(begin, low)
        while low < high:
            cut = max(high - step, low)
            at_cut = at_probe.without(count(cut, probe), classes, cut)
            if fits(at_cut):
                low, at_low = cut, at_cut
                break
            high, step = cut - 1, step * 2
    while low < high:
        middle = (low + high + 1) // 2
        at_middle = at_low.joined(count(low, middle), classes, low)
        if fits(at_middle):
            low, at_low = middle, at_middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True, slots=True)
class _Counts:
    """The integer counts `_estimate_classes` works from, for one span of class letters.

    A run starts at an `a` whose left neighbour (inside the span) is not an `a`, so two
    adjacent spans add up exactly, less one run when an `a` meets an `a` at the seam.
    """

    runs: int
    letters: int
    punct: int
    cjk: int
    hangul: int

    @classmethod
    def of(cls, classes: str, start: int, end: int, wide: bool) -> _Counts:
        """The counts of the non-empty span classes[start:end]."""
        runs = (
            classes.count(" a", start, end)
            + classes.count(".a", start, end)
            + (classes[start] == "a")
        )
        cjk = hangul = 0
        if wide:
            cjk, hangul = classes.count("c", start, end), classes.count("h", start, end)
            runs += classes.count("ca", start, end) + classes.count("ha", start, end)
        return cls(
            runs, classes.count("a", start, end), classes.count(".", start, end), cjk, hangul
        )

    def joined(self, right: _Counts, classes: str, seam: int) -> _Counts:
        """This span followed by the non-empty span `right`, which starts at `seam`."""
        return _Counts(
            self.runs + right.runs - _run_across(classes, seam),
            self.letters + right.letters,
            self.punct + right.punct,
            self.cjk + right.cjk,
            self.hangul + right.hangul,
        )

    def without(self, tail: _Counts, classes: str, seam: int) -> _Counts:
        """This span less its tail `tail`, which starts at `seam` (both parts non-empty)."""
        return _Counts(
            self.runs - tail.runs + _run_across(classes, seam),
            self.letters - tail.letters,
            self.punct - tail.punct,
            self.cjk - tail.cjk,
            self.hangul - tail.hangul,
        )

    def tokens(self) -> float:
        """`_estimate_classes` from the counts: the same float operations in the same order."""
        total = 0.0
        if self.cjk or self.hangul:
            total += self.cjk + self.hangul * TOKENS_PER_HANGUL
        total += self.runs * TOKENS_PER_RUN + self.letters * TOKENS_PER_RUN_CHAR
        return total + self.punct


def _run_across(classes: str, seam: int) -> int:
    """1 if a run of letters crosses `seam` (counted once in each part when split there)."""
    return int(classes[seam - 1] == "a" == classes[seam])
