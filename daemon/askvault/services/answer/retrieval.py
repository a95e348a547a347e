"""The retrieve step: the evidence pack for a question, cut to the pages that can be read.

The grounding set is the pages whose text reaches the model; a selected page that cannot
be read now (or changed since it was indexed) is left out and named in a warning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from askvault.adapters.db import Connection
from askvault.core.prompt import context_budget
from askvault.errors import AskvaultError
from askvault.records import (
    ContextPack,
    Embedder,
    PeriodRequest,
    QuestionOptions,
    SearchFilters,
)
from askvault.services.retrieval.context import build_context
from askvault.services.retrieval.note_reads import NoteReads
from askvault.settings import Settings

# Headers and quoting cost tokens the pack does not count: leave them room.
PACK_SHARE_OF_BUDGET = 0.85


@dataclass(frozen=True)
class Retrieval:
    """The pack whose pages can be read, and the warnings about the ones left out."""

    pack: ContextPack
    warnings: tuple[str, ...]

    @property
    def nearest_distance(self) -> float | None:
        """The question's cosine distance to the nearest chunk (vectors only)."""
        value = self.pack.trace.get("nearest_distance")
        return float(value) if value is not None else None

    @property
    def vector_share(self) -> float | None:
        """The share of chunks with a vector of the model searched (None: not measured)."""
        value = self.pack.trace.get("vector_share")
        return float(value) if value is not None else None


def retrieve(
    conn: Connection,
    settings: Settings,
    question: str,
    options: QuestionOptions,
    *,
    embedder: Embedder | None,
    notes: NoteReads,
    now: datetime | None = None,
    carried: Sequence[str] = (),
    period_words: Sequence[str] = (),
) -> Retrieval:
    """The evidence pack for `question`, narrowed by `options` and by the period the
    question names (`now` anchors its relative words; `period_words`, when given, are the
    texts read for it instead: records.PeriodRequest), within the excerpt budget;
    `carried` are a follow-up's earlier turn's pages (candidates: `search`)."""
    budget = context_budget(
        settings.ollama.num_ctx,
        question,
        language=options.language,
        excerpt_tokens=settings.queries.excerpt_tokens,
    )
    pack = build_context(
        conn,
        settings,
        question,
        budget_tokens=int(budget * PACK_SHARE_OF_BUDGET),
        embedder=embedder,
        filters=SearchFilters(folders=options.folders, tags=options.tags),
        include_sources=False,
        notes=notes,
        period=PeriodRequest(
            since=options.since, until=options.until, now=now, words=tuple(period_words)
        ),
        carried=carried,
    )
    max_sources = options.max_sources or settings.queries.max_sources
    return readable_pages(notes, dataclasses.replace(pack, pages=pack.pages[:max_sources]))


def readable_pages(notes: NoteReads, pack: ContextPack) -> Retrieval:
    """Drop pages that cannot be read now (and stale chunks); warn naming each."""
    warnings = list(pack.warnings)
    kept = []
    for page in pack.pages:
        try:
            notes.file(page.path)
        except AskvaultError as exc:
            warnings.append(f"{page.wikilink} was left out: it cannot be read ({exc.message})")
            continue
        chunks = tuple(c for c in page.chunks if c.fresh)
        if not chunks:
            warnings.append(f"{page.wikilink} was left out: it changed since it was indexed")
            continue
        kept.append(dataclasses.replace(page, chunks=chunks))
    return Retrieval(dataclasses.replace(pack, pages=tuple(kept)), tuple(warnings))
