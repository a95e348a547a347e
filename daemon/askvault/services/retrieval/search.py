"""Hybrid search: words (FTS5 + CJK trigrams) and vectors (vec0), fused or reranked.

When vectors cannot be used (Ollama unreachable, no embedder, no active
fingerprint, a dimension mismatch), search answers from the word index alone
and says why in `degraded`; it never fails because of Ollama.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from askvault.adapters import search_store, store
from askvault.adapters.db import Connection, connect
from askvault.adapters.ollama_http import RefusedEmbedder
from askvault.core import fusion
from askvault.core.links import page_link
from askvault.core.query import (
    cjk_grams,
    fts_match_expression,
    query_terms,
    trigram_match_expression,
)
from askvault.errors import OllamaError, StoreError
from askvault.records import (
    Embedder,
    Hit,
    ModelClients,
    PeriodRequest,
    PeriodScope,
    SearchFilters,
)
from askvault.services.retrieval.periods import scope_search
from askvault.settings import Settings

# convex, rrf and rerank are the configurable designs; the others exist for the benchmarks.
FUSION_MODES = ("convex", "rrf", "rerank", "rerank-local", "words", "vector")


@dataclass(frozen=True)
class SearchResult:
    """Hits best first (one per page unless asked otherwise), why vectors were not used,
    the per-hit explanation keyed by chunk id, and the lower-cased file names among the
    hits' that another note shares (their wikilinks need the path)."""

    query: str
    hits: tuple[Hit, ...]
    degraded: str | None = None
    fusion: str = "convex"
    trace: dict[int, dict[str, Any]] = field(default_factory=dict)
    wikilinks: dict[int, str] = field(default_factory=dict)
    duplicates: frozenset[str] = frozenset()
    period: PeriodScope | None = None  # the period the search was narrowed to, if any
    # The share of chunks with a vector and the vector side's weight that follows from it
    # (core/fusion.coverage_weight); None when no vector ranked (words only).
    vector_share: float | None = None
    vector_weight: float | None = None


@contextlib.contextmanager
def open_search(
    settings: Settings, clients: ModelClients
) -> Iterator[tuple[Connection, Embedder | None]]:
    """The index and the query embedder of `clients`, both closed on exit. Raises
    StoreError when the vault has no index yet. When the configuration refuses the Ollama
    host the embedder is a `RefusedEmbedder`, so a search answers from words and says which
    setting allows it.

    The embedder waits at most `search.embed_timeout_s` for Ollama: a slow or hung server
    costs a search a few seconds, then it answers from words and says why."""
    if not settings.db_path.exists():
        raise StoreError(f"no index for {settings.vault_path}", "run `askvault index` first")
    conn = connect(settings.db_path)
    embedder: Embedder | None = None
    try:
        embedder = clients.query_embedder()
        yield conn, embedder
    finally:
        if embedder is not None:
            embedder.close()
        conn.close()


def _query_vector(
    conn: Connection, embedder: Embedder | None, query: str
) -> tuple[store.FingerprintRow | None, list[float] | None, str | None]:
    """(fingerprint, query vector, degraded reason)."""
    if embedder is None:
        return None, None, "no embedding model configured"
    if isinstance(embedder, RefusedEmbedder):
        refusal = embedder.refusal
        return None, None, f"semantic search unavailable: {refusal.message} ({refusal.hint})"
    fp = store.active_fingerprint(conn)
    if fp is None:
        return None, None, "no vectors in the index yet (run `askvault index` with Ollama up)"
    try:
        # The active vectors' model: while another model's are built, the old ones serve.
        vector = embedder.embed_query(query, model=fp.fingerprint.model)
    except OllamaError as exc:
        # The hint says what to do: `ollama pull <model>` when Ollama answers but lacks it.
        hint = f" ({exc.hint})" if exc.hint else ""
        return None, None, f"semantic search unavailable: {exc.message}{hint}"
    if len(vector) != fp.fingerprint.dimension:
        return (
            None,
            None,
            (
                f"the embedding model gives {len(vector)} dimensions but the index holds "
                f"{fp.fingerprint.dimension} ({fp.fingerprint.model}); run `askvault index`"
            ),
        )
    if not all(math.isfinite(x) for x in vector):
        return (
            None,
            None,
            (
                "semantic search unavailable: the embedding model returned NaN or "
                "infinite values for the query"
            ),
        )
    return fp, vector, None


def search(
    conn: Connection,
    settings: Settings,
    query: str,
    *,
    limit: int | None = None,
    embedder: Embedder | None = None,
    filters: SearchFilters | None = None,
    fusion_mode: str | None = None,
    per_page: bool = True,
    period: PeriodRequest | None = None,
    vector_weight: float | None = None,
    carried: Sequence[str] = (),
) -> SearchResult:
    """Search the index for `query`; hits collapsed per page (best chunk) unless `per_page`
    is False. `fusion_mode` overrides `settings.search.fusion` (see FUSION_MODES).
    A period (`period`'s bounds, else the query's own words: services/retrieval/periods.py)
    narrows the search to the notes of those days, and its words are not searched.

    While only part of the chunks have vectors, the hybrid modes scale the vector side by
    `fusion.coverage_weight` of that share, so a partly embedded index ranks no worse than
    words alone; `vector_weight` sets that weight instead (the benchmarks' curves).

    `carried` are a follow-up's earlier turn's pages, best first: the chunks of theirs
    this search finds earn `fusion.carry_pages` points (nothing else is dropped)."""
    asked = query
    filters, scope = scope_search(conn, query, filters, period)
    if scope is not None:
        query = scope.query
    mode = fusion_mode or settings.search.fusion
    if mode not in FUSION_MODES:
        raise ValueError(f"unknown fusion mode {mode!r}")
    limit = limit or settings.search.limit
    depth = max(settings.search.candidates, limit)
    terms = query_terms(query)
    fp, vector, degraded = (None, None, None)
    if mode != "words":
        fp, vector, degraded = _query_vector(conn, embedder, query)
    mode_used = "words" if degraded else mode

    share = weight = None
    vectors: list[tuple[int, float]] = []
    if fp is not None and vector is not None and mode_used != "words":
        if mode_used != "vector":  # the single-channel baseline keeps its full points
            share = search_store.vector_share(conn, fp.id, fp.bits_table)
            weight = fusion.coverage_weight(share) if vector_weight is None else vector_weight
        vectors = search_store.vector_chunks(
            conn,
            fp.id,
            vector,
            k=depth,
            filters=filters,
            bits_table=fp.bits_table,
        )
    words: list[tuple[int, float]] = []
    # The rerank modes take their candidates from the vectors; with part of the chunks
    # embedded, the word matches join them, or the others could never be found.
    if mode_used in ("convex", "rrf", "words") or (weight is not None and weight < 1.0):
        words = _word_ranking(conn, query, depth, filters)

    ids = list(dict.fromkeys([cid for cid, _ in words] + [cid for cid, _ in vectors]))
    rows = search_store.chunk_rows(conn, ids)
    word_rank = {cid: (r + 1, raw) for r, (cid, raw) in enumerate(words)}
    vec_rank = {cid: (r + 1, raw) for r, (cid, raw) in enumerate(vectors)}
    candidates = [
        fusion.Candidate(
            row,
            words_rank=word_rank.get(cid, (None, None))[0],
            words_raw=_rounded(word_rank.get(cid, (None, None))[1]),
            vector_rank=vec_rank.get(cid, (None, None))[0],
            vector_raw=_rounded(vec_rank.get(cid, (None, None))[1]),
        )
        for cid in ids
        if (row := rows.get(cid)) is not None
    ]
    scale = 1.0 if weight is None else weight
    if mode_used in ("rerank", "rerank-local"):
        scored = _rerank(conn, candidates, terms, corpus=mode_used == "rerank", vector_weight=scale)
    elif mode_used == "convex":
        scored = fusion.fuse_scores(
            candidates, terms, scale_depth=settings.search.candidates, vector_weight=scale
        )
    else:
        # Bonuses belong to the hybrid design; the single-channel modes stay pure baselines,
        # except degraded search, which keeps them (it is the user's words-only answer).
        scored = fusion.fuse_rankings(
            candidates,
            terms,
            bonuses=mode in ("rrf", "convex") or degraded is not None,
            vector_weight=scale,
        )
    if carried:
        scored = fusion.carry_pages(scored, carried)
    if per_page:
        scored = fusion.collapse_pages(scored)
    scored = scored[:limit]
    duplicates = frozenset(
        search_store.duplicate_basenames(conn, [s.candidate.path for s in scored])
    )
    hits = tuple(Hit(s.candidate.chunk, s.score, s.matched) for s in scored)
    return SearchResult(
        query=asked,
        hits=hits,
        degraded=degraded,
        fusion=mode_used,
        trace={s.candidate.chunk_id: s.trace for s in scored},
        wikilinks={h.chunk_id: page_link(h.note_path, h.heading, duplicates) for h in hits},
        duplicates=duplicates,
        period=scope,
        vector_share=share,
        vector_weight=weight,
    )


def word_hit_hashes(conn: Connection, query: str, depth: int = 40) -> list[str]:
    """The text hashes of the `depth` best word matches of `query`, best first: what a
    waiting question searches, so the embedding backlog can embed those first."""
    ranking = _word_ranking(conn, query, depth, None)
    return store.chunk_text_hashes(conn, [cid for cid, _ in ranking])


def _rerank(
    conn: Connection,
    candidates: list[fusion.Candidate],
    terms: list[str],
    *,
    corpus: bool,
    vector_weight: float = 1.0,
) -> list[fusion.Scored]:
    """The seed pipeline with the word index's own tokens; IDF from the whole index
    (`corpus`) or from the candidates alone."""
    tokens = search_store.word_tokens(conn, [fusion.rerank_text(c) for c in candidates])
    query_tokens = list(
        dict.fromkeys(t for ts in search_store.word_tokens(conn, terms) for t in ts)
    )
    idf = None
    if corpus:
        total, freqs = search_store.document_frequencies(conn, query_tokens)
        idf = fusion.corpus_idf(total, freqs)
    return fusion.rerank_candidates(
        candidates,
        terms,
        idf=idf,
        tokens=tokens,
        query_tokens=query_tokens,
        vector_weight=vector_weight,
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _word_ranking(
    conn: Connection, query: str, depth: int, filters: SearchFilters | None
) -> list[tuple[int, float]]:
    """Word matches best first: FTS5 words, with CJK trigram matches merged in by score.

    When at least `depth` chunks hold every word of the query, only those are ranked:
    BM25 over the OR of the words scores every chunk holding any of them (17k of the hub
    vault's 50k chunks for "plugin settings", ~11 ms) to pick `depth` that nearly always
    hold them all (issue 11, docs/decisions.md). Fewer than `depth`: the OR ranking."""
    ranking: list[tuple[int, float]] = []
    match = fts_match_expression(query)
    if match:
        every_word = fts_match_expression(query, require_all=True)
        if every_word != match:
            ranking = search_store.word_chunks(
                conn, every_word or match, limit=depth, filters=filters
            )
        if len(ranking) < depth:
            ranking = search_store.word_chunks(conn, match, limit=depth, filters=filters)
    trigrams, short = cjk_grams(query)
    if trigrams or short:
        cjk = search_store.trigram_chunks(
            conn, trigram_match_expression(trigrams), short, limit=depth, filters=filters
        )
        seen = {cid for cid, _ in ranking}
        merged = ranking + [(cid, s) for cid, s in cjk if cid not in seen]
        ranking = sorted(merged, key=lambda item: (item[1], item[0]))[:depth]
    return ranking
