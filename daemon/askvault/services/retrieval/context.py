"""The evidence pack (`askvault context`, and the answering pipeline).

The pack is a prefix of the search ranking that fits the token budget: it is
never re-ranked, so an agent that reads fewer pages reads the best ones. Every
chunk is checked against the file on disk before it is served as fresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from askvault import settings as settings_module
from askvault.adapters.db import Connection
from askvault.adapters.vault import stat_note
from askvault.core import fusion
from askvault.core.chunking import estimate_tokens
from askvault.core.links import page_link
from askvault.core.query import query_terms
from askvault.errors import VaultError
from askvault.records import (
    ContextPack,
    Embedder,
    EvidenceChunk,
    EvidencePage,
    Hit,
    IndexedChunk,
    Neighbour,
    PeriodRequest,
    SearchFilters,
    SourceWindow,
)
from askvault.services.retrieval.context_graph import find_neighbours, source_windows
from askvault.services.retrieval.note_reads import NoteReads
from askvault.services.retrieval.search import search
from askvault.settings import Settings

DEFAULT_BUDGET_TOKENS = settings_module.DEFAULT_BUDGET_TOKENS
# Hits scoring under this share of the best hit are noise, not evidence.
MIN_SHARE_OF_TOP = 0.2


def build_context(
    conn: Connection,
    settings: Settings,
    prompt: str,
    *,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    embedder: Embedder | None = None,
    filters: SearchFilters | None = None,
    include_sources: bool = False,
    notes: NoteReads | None = None,
    period: PeriodRequest | None = None,
    carried: Sequence[str] = (),
) -> ContextPack:
    """The evidence pack for `prompt`: the best chunks that fit `budget_tokens`, grouped by
    page, with freshness, 1-hop neighbours, citations and suggested next actions.

    `notes` are the reads of this answer when the caller goes on to check citations
    against the same texts (made here when not given). `period` as in `search`: the pack
    holds the notes of the period the prompt (or its bounds) names, and says which.
    `carried` as in `search`: a follow-up's earlier turn's pages, as candidates."""
    result = search(
        conn,
        settings,
        prompt,
        limit=settings.search.candidates,
        embedder=embedder,
        filters=filters,
        per_page=False,
        period=period,
        carried=carried,
    )
    hits = list(result.hits)
    top = hits[0].score if hits else 0.0
    kept = [h for h in hits if h.score >= MIN_SHARE_OF_TOP * top]
    kept.sort(
        key=lambda h: fusion.context_order_key(
            h.score,
            any(c in fusion.TITLE_CHANNELS for c, _ in h.matched),
            h.title,
            h.note_path,
            h.chunk_id,
        )
    )
    costs = [estimate_tokens(h.text) for h in kept]
    taken = fusion.budget_prefix(costs, budget_tokens)
    chosen = kept[:taken]
    used = sum(costs[:taken])

    vault = settings.vault_path
    # The hits carry the rows search fetched (stamps, sources, heading paths) and search
    # knows which of their file names are shared: nothing is fetched again here.
    chunks = {h.chunk_id: h.chunk for h in chosen}
    duplicates = set(result.duplicates)
    warnings: list[str] = []
    pages = _group_pages(chosen, duplicates)
    if notes is None:
        notes = NoteReads(vault, settings.index.max_note_bytes)
    pages = [_check_freshness(page, chunks, notes, warnings) for page in pages]
    primary = [p.path for p in pages]
    neighbours = find_neighbours(conn, primary, duplicates)

    windows: list[SourceWindow] = []
    if include_sources and pages:
        windows, used, source_warnings = source_windows(
            conn,
            vault,
            pages,
            query_terms(prompt),
            budget_tokens=budget_tokens,
            used=used,
            max_bytes=settings.index.max_note_bytes,
        )
        warnings.extend(source_warnings)
    actions = _actions(
        result.degraded, pages, kept[taken:], costs[taken:], used, neighbours, include_sources
    )
    if result.period is not None and not result.period.notes:
        actions.insert(
            0,
            f"no note falls in “{result.period.words}” ({result.period.describe()}): "
            "ask about another period, or see which notes have days in `askvault status`",
        )
    return ContextPack(
        prompt=prompt,
        pages=tuple(pages),
        neighbours=tuple(neighbours),
        degraded=result.degraded,
        warnings=tuple(warnings),
        budget_tokens=budget_tokens,
        used_tokens=used,
        trace={
            "fusion": result.fusion,
            "candidates": len(hits),
            "kept": len(kept),
            "taken": taken,
            "nearest_distance": _nearest_distance(result.trace),
            "vector_share": result.vector_share,
            "vector_weight": result.vector_weight,
        },
        actions=tuple(actions),
        source_windows=tuple(windows),
        period=result.period,
    )


def _nearest_distance(trace: dict[int, dict[str, Any]]) -> float | None:
    """The cosine distance of the nearest chunk found by the vector channel, or None when
    no vector ranked (words-only search)."""
    distances = [
        t["vector"]["raw"]
        for t in trace.values()
        if isinstance(t.get("vector"), dict) and t["vector"].get("raw") is not None
    ]
    return min(distances) if distances else None


def _group_pages(chosen: list[Hit], duplicates: set[str]) -> list[EvidencePage]:
    """Pages in the order of their best chunk; each page's chunks in score order."""
    pages: dict[str, EvidencePage] = {}
    for hit in chosen:
        row = hit.chunk
        chunk = EvidenceChunk(
            chunk_id=hit.chunk_id,
            heading=hit.heading,
            heading_path=row.heading_path,
            lines=hit.lines,
            text=hit.text,
            score=hit.score,
        )
        page = pages.get(hit.note_path)
        if page is None:
            pages[hit.note_path] = EvidencePage(
                path=hit.note_path,
                title=hit.title,
                wikilink=page_link(hit.note_path, None, duplicates),
                score=hit.score,
                matched=hit.matched,
                chunks=(chunk,),
                type=hit.type,
                sources=row.sources,
            )
        else:
            pages[hit.note_path] = replace(page, chunks=page.chunks + (chunk,))
    return list(pages.values())


def _check_freshness(
    page: EvidencePage,
    rows: dict[int, IndexedChunk],
    notes: NoteReads,
    warnings: list[str],
) -> EvidencePage:
    """Serve a chunk as fresh only if the file is unchanged, or its text is still found in it
    (then with its current line range); otherwise flag it and the page."""
    row = rows[page.chunks[0].chunk_id]
    try:
        stamp = stat_note(notes.vault, page.path)
    except VaultError:
        stamp = None
    if stamp is not None and (stamp.size, stamp.mtime_ns, stamp.inode) == (
        row.size,
        row.mtime_ns,
        row.inode,
    ):
        return page
    text: str | None = None
    if stamp is not None:
        try:
            note = notes.file(page.path)
        except VaultError:
            note = None
        if note is not None and note.content_hash == row.content_hash:
            return page
        text = note.text if note is not None else None
    if text is None:
        gone = f"{page.path} was deleted or cannot be read since it was indexed"
        warnings.append(gone)
        chunks = tuple(replace(c, fresh=False) for c in page.chunks)
        return replace(page, chunks=chunks, fresh=False, warning=gone)
    chunks = tuple(_relocate(c, text) for c in page.chunks)
    stale = [c for c in chunks if not c.fresh]
    warning: str | None = None
    if stale:
        warning = (
            f"{page.path} changed since it was indexed; {len(stale)} chunk(s) no longer "
            "match the file and may be out of date"
        )
        warnings.append(warning)
    return replace(page, chunks=chunks, fresh=not stale, warning=warning)


def _relocate(chunk: EvidenceChunk, text: str) -> EvidenceChunk:
    """The chunk with its line range in the changed file, or flagged not fresh."""
    at = text.find(chunk.text)
    if at < 0:
        return replace(chunk, fresh=False)
    start = text.count("\n", 0, at) + 1
    return replace(chunk, lines=(start, start + chunk.text.count("\n")))


def _actions(
    degraded: str | None,
    pages: list[EvidencePage],
    left: list[Hit],
    left_costs: list[int],
    used: int,
    neighbours: list[Neighbour],
    include_sources: bool,
) -> list[str]:
    actions: list[str] = []
    if not pages:
        actions.append("no note matches: try other words, or check `askvault status`")
    if degraded:
        # The reason carries its own fix (start Ollama, `ollama pull <model>`, run
        # `askvault index`): one generic "start Ollama" was wrong when Ollama answers.
        actions.append(
            f"results come from words only ({degraded}); `askvault doctor` checks the rest"
        )
    if any(not p.fresh for p in pages):
        actions.append("run `askvault index`: some pages changed since they were indexed")
    if left:
        actions.append(
            f"raise --budget to {used + sum(left_costs)} tokens to include "
            f"{len(left)} more chunk(s)"
        )
    cited = sum(len(p.sources) for p in pages)
    if cited and not include_sources:
        actions.append(f"add --include-sources for raw text of {cited} cited source(s)")
    for neighbour in neighbours[:3]:
        actions.append(f"read {neighbour.wikilink} ({neighbour.why})")
    return actions
