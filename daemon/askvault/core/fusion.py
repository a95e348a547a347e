"""Scoring: fusion of the word and vector channels (by score or by rank), or the seed's
rerank pipeline.

Both produce one deterministic score object per chunk: `matched` lists the
channels that contributed and their points, rounded to `DECIMALS`, and `score`
is computed from the same integer units, so the points always add up to the
score exactly (after rounding to `DECIMALS`). Ties are broken by title, then
path, so equal input always gives the same order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from askvault.core.query import bm25_tokens, fold
from askvault.records import IndexedChunk

DECIMALS = 4
_UNIT = 10**DECIMALS
# Tuned on the Help vault question set (bench/quality_bench.py, docs/decisions.md): a short
# decay (k = 10, not the usual 60) and half weight for words let a strong vector rank lead
# while words still settle near-ties; SciFact is the held-out check.
RRF_K = 10
# Weights of each channel; a rank-1 hit in a ranking earns the full weight.
WORDS_WEIGHT = 0.5
VECTOR_WEIGHT = 1.0
BM25_WEIGHT = 0.5
# Score fusion (the default, docs/decisions.md): each channel's raw scores are scaled to
# 0..1 over its ranking (min-max), then mixed: VECTOR_SHARE for the vector channel, the rest
# for words. Chosen on half of the SciFact train queries and the Help questions together.
VECTOR_SHARE = 0.6
# While only part of the active model's chunks have vectors (a first index, a big edit),
# the vector channel ranks the embedded few only, and min-max scaling lifts the best of
# them to full points whatever their distance: the vector side's weight is scaled by
# `coverage_weight(share)`, the share squared. Measured on the Help questions at 10, 25,
# 50, 75% embedded (bench/partial_index_bench.py, docs/benchmarks.md): the square kept page
# Recall@5 at or above words only at every mark in both runs, the linear share and a
# threshold at 0.5 each fell below it once (docs/decisions.md).


def coverage_weight(share: float) -> float:
    """The part of its weight the vector channel keeps when `share` (0..1) of the active
    model's chunks have a vector: share squared, so 0 with none (words only) and exactly 1
    once all have (the fusion unchanged)."""
    share = min(1.0, max(0.0, share)) if math.isfinite(share) else 0.0
    return share * share


# Small bonuses from what the query has in common with the page's names: they order
# near-equal hits so that the page a question names wins.
TITLE_PHRASE_POINTS = 0.3
TITLE_TERM_POINTS = 0.2
ALIAS_POINTS = 0.2
HEADING_POINTS = 0.1
TITLE_CHANNELS = ("title-phrase", "title-term", "alias")

# Per channel: raw score, rank in its ranking, points.
Trace = dict[str, dict[str, float | int | None]]


@dataclass(frozen=True)
class Candidate:
    """A chunk as fusion sees it: the indexed chunk (what it is called, its text) and how
    each channel ranked it."""

    chunk: IndexedChunk
    words_rank: int | None = None
    words_raw: float | None = None
    vector_rank: int | None = None
    vector_raw: float | None = None

    @property
    def chunk_id(self) -> int:
        return self.chunk.chunk_id

    @property
    def path(self) -> str:
        return self.chunk.path

    @property
    def title(self) -> str:
        return self.chunk.title

    @property
    def aliases(self) -> tuple[str, ...]:
        return self.chunk.aliases

    @property
    def heading_path(self) -> tuple[str, ...]:
        return self.chunk.heading_path

    @property
    def text(self) -> str:
        return self.chunk.text


@dataclass(frozen=True)
class Scored:
    """A chunk's deterministic score: `matched` points sum to `score`; `trace` explains them."""

    candidate: Candidate
    score: float
    matched: tuple[tuple[str, float], ...]
    trace: Trace = field(default_factory=dict)

    @property
    def has_title_channel(self) -> bool:
        return any(channel in TITLE_CHANNELS for channel, _ in self.matched)


def rank_contribution(rank: int, weight: float, k: int | None = None) -> float:
    """Reciprocal-rank points: `weight` at rank 1, falling as (k + 1) / (k + rank)."""
    k = RRF_K if k is None else k
    return weight * (k + 1) / (k + rank)


def name_bonuses(terms: Sequence[str], candidate: Candidate) -> dict[str, float]:
    """Points for query terms found in the title, aliases and headings of a chunk."""
    if not terms:
        return {}
    bonuses: dict[str, float] = {}
    title_words = set(bm25_tokens(candidate.title))
    phrase = " ".join(terms)
    if len(terms) > 1 and phrase in " ".join(bm25_tokens(candidate.title)):
        bonuses["title-phrase"] = TITLE_PHRASE_POINTS
    in_title = sum(1 for term in terms if term in title_words)
    if in_title:
        bonuses["title-term"] = TITLE_TERM_POINTS * in_title / len(terms)
    for alias in candidate.aliases:
        alias_words = bm25_tokens(alias)
        if alias_words and all(word in terms for word in alias_words):
            bonuses["alias"] = ALIAS_POINTS
            break
    heading_words = set(bm25_tokens(" ".join(candidate.heading_path)))
    in_heading = sum(1 for term in terms if term in heading_words)
    if in_heading:
        bonuses["heading"] = HEADING_POINTS * in_heading / len(terms)
    return bonuses


def _finish(candidate: Candidate, points: Mapping[str, float], trace: Trace) -> Scored:
    units = {name: round(value * _UNIT) for name, value in points.items()}
    matched = tuple((name, unit / _UNIT) for name, unit in units.items() if unit > 0)
    for name, unit in units.items():
        trace.setdefault(name, {})["points"] = unit / _UNIT
    return Scored(candidate, sum(u for _, u in _units(matched)) / _UNIT, matched, trace)


def _units(matched: tuple[tuple[str, float], ...]) -> list[tuple[str, int]]:
    return [(name, round(points * _UNIT)) for name, points in matched]


def order_key(scored: Scored) -> tuple[float, str, str, int]:
    """Best first: score, then title (case-insensitively), then path, then chunk id."""
    c = scored.candidate
    return (-scored.score, fold(c.title), c.path, c.chunk_id)


def fuse_rankings(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    *,
    k: int | None = None,
    bonuses: bool = True,
    vector_weight: float = 1.0,
) -> list[Scored]:
    """Reciprocal rank fusion of the word and vector rankings, plus name bonuses (off for
    the single-channel baselines of the benchmarks); the vector side's points are scaled by
    `vector_weight` (see `coverage_weight`)."""
    results = []
    for c in candidates:
        points: dict[str, float] = {}
        trace: Trace = {}
        if c.words_rank is not None:
            points["words"] = rank_contribution(c.words_rank, WORDS_WEIGHT, k)
            trace["words"] = {"raw": c.words_raw, "rank": c.words_rank}
        if c.vector_rank is not None:
            points["vector"] = rank_contribution(c.vector_rank, VECTOR_WEIGHT * vector_weight, k)
            trace["vector"] = {"raw": c.vector_raw, "rank": c.vector_rank}
        for name, value in (name_bonuses(terms, c) if bonuses else {}).items():
            points[name] = value
            trace[name] = {"raw": value, "rank": None}
        results.append(_finish(c, points, trace))
    return sorted(results, key=order_key)


def min_max(
    values: Mapping[int, float], reference: Sequence[float] | None = None
) -> dict[int, float]:
    """Each finite value scaled to 0..1 between the smallest and the largest of
    `reference` (default: the values themselves), clamped; all 1.0 when those are equal.
    Non-finite values (NaN, inf) are left out."""
    finite = {key: value for key, value in values.items() if math.isfinite(value)}
    bounds = [v for v in (finite.values() if reference is None else reference) if math.isfinite(v)]
    if not finite or not bounds:
        return {}
    low, high = min(bounds), max(bounds)
    if high <= low:
        return {key: 1.0 for key in finite}
    return {key: min(1.0, max(0.0, (value - low) / (high - low))) for key, value in finite.items()}


def fuse_scores(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    *,
    vector_share: float | None = None,
    bonuses: bool = True,
    scale_depth: int | None = None,
    vector_weight: float = 1.0,
) -> list[Scored]:
    """Convex combination of the channels' min-max scaled scores, plus name bonuses.

    Words: bm25 (lower is better, so negated); vector: cosine similarity (1 - distance).
    A chunk a channel did not return gets nothing from it. Unlike rank fusion, how far
    ahead a hit is in a channel counts, not only its place. The scale of each channel is
    set by its first `scale_depth` hits (default: all), so fetching more candidates (a
    larger `--limit`) never reorders the hits above. The vector side's points are scaled
    by `vector_weight` (the words keep theirs: with no vector, the words and bonuses alone).
    """
    share = VECTOR_SHARE if vector_share is None else vector_share
    words_raw = {c.chunk_id: -c.words_raw for c in candidates if c.words_raw is not None}
    vector_raw = {c.chunk_id: 1.0 - c.vector_raw for c in candidates if c.vector_raw is not None}
    words = min_max(words_raw, _top(candidates, words_raw, lambda c: c.words_rank, scale_depth))
    vector = min_max(vector_raw, _top(candidates, vector_raw, lambda c: c.vector_rank, scale_depth))
    results = []
    for c in candidates:
        points: dict[str, float] = {}
        trace: Trace = {}
        if c.chunk_id in words:
            points["words"] = (1.0 - share) * words[c.chunk_id]
            trace["words"] = {
                "raw": c.words_raw,
                "rank": c.words_rank,
                "scaled": round(words[c.chunk_id], 6),
            }
        if c.chunk_id in vector:
            points["vector"] = share * vector_weight * vector[c.chunk_id]
            trace["vector"] = {
                "raw": c.vector_raw,
                "rank": c.vector_rank,
                "scaled": round(vector[c.chunk_id], 6),
            }
        for name, value in (name_bonuses(terms, c) if bonuses else {}).items():
            points[name] = value
            trace[name] = {"raw": value, "rank": None}
        results.append(_finish(c, points, trace))
    return sorted(results, key=order_key)


def _top(
    candidates: Sequence[Candidate],
    values: Mapping[int, float],
    rank: Callable[[Candidate], int | None],
    depth: int | None,
) -> list[float] | None:
    """The values of the candidates a channel ranked within `depth` (None: all of them)."""
    if depth is None:
        return None
    return [
        values[c.chunk_id]
        for c in candidates
        if c.chunk_id in values and (rank(c) or depth + 1) <= depth
    ]


def bm25_scores(
    documents: Sequence[Sequence[str]],
    query: Sequence[str],
    idf: Mapping[str, float] | None = None,
) -> list[float]:
    """Okapi BM25 (rank-bm25) of each tokenized document for the query tokens.

    With `idf` None the inverse document frequencies come from `documents` alone
    (candidate-local); otherwise from `idf` (corpus-wide, from the FTS5 index),
    where a token missing from the mapping counts as absent from the corpus.
    """
    if not documents or not query:
        return [0.0] * len(documents)
    from rank_bm25 import BM25Okapi  # imports numpy (~0.15 s): only the rerank modes need it

    model = BM25Okapi([list(tokens) or [""] for tokens in documents])
    if idf is not None:
        model.idf = {token: float(idf.get(token, 0.0)) for token in query}
    return [float(score) for score in model.get_scores(list(query))]


def corpus_idf(document_count: int, frequencies: Mapping[str, int]) -> dict[str, float]:
    """BM25 IDF of each term from corpus statistics: ln((N - df + 0.5) / (df + 0.5) + 1)."""
    return {
        term: math.log((document_count - df + 0.5) / (df + 0.5) + 1.0)
        for term, df in frequencies.items()
    }


def rerank_text(candidate: Candidate) -> str:
    """What BM25 reads of a candidate: its names, then its text."""
    return "\n".join(
        [
            candidate.title,
            " ".join(candidate.aliases),
            " ".join(candidate.heading_path),
            candidate.text,
        ]
    )


def rerank_candidates(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    *,
    idf: Mapping[str, float] | None = None,
    k: int | None = None,
    tokens: Sequence[Sequence[str]] | None = None,
    query_tokens: Sequence[str] | None = None,
    vector_weight: float = 1.0,
) -> list[Scored]:
    """The seed pipeline: vector top-K candidates, then BM25 over them so that chunks
    where the query's exact terms stand out win; the vector rank still counts.

    `tokens` (one list per candidate, of `rerank_text`) and `query_tokens` should be
    tokenized as the word index does (stemmed), so that `idf` lookups match; without
    them `bm25_tokens` of the text and `terms` are used. The vector rank's points are
    scaled by `vector_weight`.
    """
    if tokens is None:
        tokens = [bm25_tokens(rerank_text(c)) for c in candidates]
    raw = bm25_scores(tokens, list(terms) if query_tokens is None else query_tokens, idf)
    top = max(raw, default=0.0)
    order = sorted(range(len(raw)), key=lambda i: -raw[i])
    ranks = {i: r + 1 for r, i in enumerate(order)}
    results = []
    for i, c in enumerate(candidates):
        points: dict[str, float] = {}
        trace: Trace = {}
        if raw[i] > 0 and top > 0:
            points["bm25"] = BM25_WEIGHT * raw[i] / top
            trace["bm25"] = {"raw": round(raw[i], 6), "rank": ranks[i]}
        if c.vector_rank is not None:
            points["vector"] = rank_contribution(c.vector_rank, VECTOR_WEIGHT * vector_weight, k)
            trace["vector"] = {"raw": c.vector_raw, "rank": c.vector_rank}
        for name, value in name_bonuses(terms, c).items():
            points[name] = value
            trace[name] = {"raw": value, "rank": None}
        results.append(_finish(c, points, trace))
    return sorted(results, key=order_key)


# A follow-up's search: the pages the earlier turn retrieved first (what its answer
# could cite) earn points, falling with their place there, on the chunks this search
# found anyway. Candidates, not a cage: a page the follow-up's words and vector did not
# find gets nothing, and every other hit keeps its score. Chosen on the first and the
# held-out follow-up threads, checked on a third written blind afterwards
# (bench/followup_bench.py, docs/decisions.md).
CARRIED_POINTS = 0.1


def carry_pages(
    scored: Sequence[Scored], carried: Sequence[str], points: float | None = None
) -> list[Scored]:
    """`scored` with `points / place` (default CARRIED_POINTS) added to each chunk of the
    `place`-th page of `carried` (best first; channel `carried`), in order again."""
    points = CARRIED_POINTS if points is None else points
    place = {path: n for n, path in enumerate(dict.fromkeys(carried), start=1)}
    if not place:
        return list(scored)
    out = []
    for item in scored:
        n = place.get(item.candidate.path)
        if n is None:
            out.append(item)
            continue
        units = round(points / n * _UNIT)
        trace: Trace = {**item.trace, "carried": {"raw": None, "rank": n, "points": units / _UNIT}}
        matched = (*item.matched, ("carried", units / _UNIT))
        out.append(
            Scored(item.candidate, sum(u for _, u in _units(matched)) / _UNIT, matched, trace)
        )
    return sorted(out, key=order_key)


def collapse_pages(scored: Sequence[Scored]) -> list[Scored]:
    """One entry per page, its best chunk, keeping the given (best-first) order."""
    seen: set[str] = set()
    pages = []
    for item in scored:
        if item.candidate.path not in seen:
            seen.add(item.candidate.path)
            pages.append(item)
    return pages


def budget_prefix(costs: Sequence[int], budget: int) -> int:
    """How many leading items fit in `budget`: a prefix, never a pick from further down."""
    used = 0
    for i, cost in enumerate(costs):
        if used + cost > budget:
            return i
        used += cost
    return len(costs)


def context_order_key(
    scored_score: float, has_title: bool, title: str, path: str, chunk_id: int
) -> tuple[float, bool, str, str, int]:
    """Evidence order: score, then a hit with a title channel first (it wins a tie at the
    budget boundary), then title and path."""
    return (-scored_score, not has_title, fold(title), path, chunk_id)
