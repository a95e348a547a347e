"""The `askvault search --json` document (DESIGN §6), also the MCP `search` tool's result."""

from __future__ import annotations

from typing import Any

from askvault.core.query import query_terms, snippet
from askvault.core.schema import document, prop
from askvault.records import Hit, PeriodScope
from askvault.services.retrieval.search import SearchResult

LINES = "First and last line in the file, 1-based, inclusive."
DEGRADED = (
    "Null when words and vectors were used; else why only words were "
    "(e.g. Ollama is not reachable)."
)


@document
class Points:
    """What one ranking channel gave a page."""

    channel: str = prop("A ranking channel: words, vector, title, ...")
    points: float = prop("Its share of the score.")


@document
class PeriodDocument:
    """The period a search was narrowed to (the query's words, or --since/--until)."""

    words: str = prop("The words read as the period (`last week`), or the bounds given.")
    since: str | None = prop("First day of the period (ISO), null when open.")
    until: str | None = prop("Last day of the period (ISO, inclusive), null when open.")
    notes: int = prop(
        "How many notes have a day in it (daily-note name, dated file name,"
        " date property, else file time)."
    )
    searched: str = prop("What was searched: the query without the period's words.")


def period_document(scope: PeriodScope | None) -> PeriodDocument | None:
    """The document of a search's period, None when it had none."""
    if scope is None:
        return None
    return PeriodDocument(scope.words, scope.since, scope.until, scope.notes, scope.query)


@document
class SearchHit:
    """One page of the results."""

    score: float = prop("Higher is better; comparable within one search only.")
    matched: tuple[Points, ...] = prop(
        "Why the page matched: each channel's points; they sum to `score`."
    )
    wikilink: str = prop("Cite the page with this.")
    type: str | None = prop("The note's `type:` property, if any.")
    file: str = prop("Vault-relative path, `/`-separated (for read_note).")
    heading: str | None = prop("The heading of the best chunk, if any.")
    lines: tuple[int, int] = prop(LINES)
    snippet: str = prop("The best chunk's words around the query's.")
    explain: dict[str, Any] | None = prop(
        "With --explain only: each channel's raw score, rank and scaled score.", omitted=True
    )


@document
class SearchDocument:
    """`askvault search --json`: the hits, best first, and whether vectors were used."""

    query: str = prop("The query as given.")
    hits: tuple[SearchHit, ...] = prop("One hit per page, best first.")
    degraded: str | None = prop(DEGRADED)
    fusion: str | None = prop(
        "With --explain only: the ranking design that ran (convex, rrf, rerank, words).",
        omitted=True,
    )
    period: PeriodDocument | None = prop(
        "The period the hits are narrowed to; absent when the query names none.", omitted=True
    )
    vector_share: float | None = prop(
        "With --explain only, when vectors ranked: the share of the chunks that have one.",
        omitted=True,
    )
    vector_weight: float | None = prop(
        "With --explain only, when vectors ranked: the part of its weight the vector side"
        " keeps at that share (1 once every chunk has its vector).",
        omitted=True,
    )


def search_document(result: SearchResult, *, explain: bool = False) -> SearchDocument:
    """The document of a search; with `explain`, each hit's channel trace and the fusion."""
    terms = query_terms(result.query)
    hits = tuple(
        _hit(
            hit,
            result.wikilinks.get(hit.chunk_id, ""),
            terms,
            result.trace.get(hit.chunk_id, {}) if explain else None,
        )
        for hit in result.hits
    )
    return SearchDocument(
        query=result.query,
        hits=hits,
        degraded=result.degraded,
        fusion=result.fusion if explain else None,
        period=period_document(result.period),
        vector_share=result.vector_share if explain else None,
        vector_weight=result.vector_weight if explain else None,
    )


def _hit(hit: Hit, wikilink: str, terms: list[str], trace: dict[str, Any] | None) -> SearchHit:
    return SearchHit(
        score=hit.score,
        matched=tuple(Points(c, p) for c, p in hit.matched),
        wikilink=wikilink,
        type=hit.type,
        file=hit.note_path,
        heading=hit.heading,
        lines=hit.lines,
        snippet=snippet(hit.text, terms),
        explain=trace,
    )
