"""The `askvault context --json` envelope, also the MCP `get_context_pack` tool's result."""

from __future__ import annotations

from askvault.core.schema import document, prop
from askvault.records import ContextPack, EvidenceChunk, EvidencePage
from askvault.services.documents.search import (
    DEGRADED,
    LINES,
    PeriodDocument,
    Points,
    period_document,
)

# The envelope's version: raised when a field changes meaning or goes away.
CONTEXT_VERSION = 1


@document
class PackChunk:
    """One passage of a page."""

    citation: str = prop("The wikilink to cite this passage by (with its heading).")
    heading: str | None
    heading_path: tuple[str, ...] = prop("The headings the passage is under, outermost first.")
    lines: tuple[int, int] = prop(LINES)
    score: float = prop("The passage's search score.")
    fresh: bool = prop("False when the file changed since indexing and could not be re-read.")
    text: str = prop("The passage as it is in the file now.")


@document
class PackPage:
    """One page of the pack, with its best passages."""

    file: str = prop("Vault-relative path (for read_note).")
    title: str
    wikilink: str = prop("Cite the page with this.")
    type: str | None = prop("The note's `type:` property, if any.")
    score: float = prop("The page's best search score.")
    matched: tuple[Points, ...] = prop("Why the page matched: each channel's points.")
    fresh: bool = prop("False when some passage is stale (see `warning`).")
    warning: str | None = prop("Why the page may not match its file any more.")
    sources: tuple[str, ...] = prop("The raw sources the page's `sources:` names.")
    chunks: tuple[PackChunk, ...]


@document
class PackNeighbour:
    """A page one link away from a page of the pack."""

    file: str
    title: str
    wikilink: str
    why: str = prop("How it is linked (links to, linked from, related, source).")


@document
class PackSource:
    """Raw text from a `sources/` or `raw/` file that a page cites (--include-sources)."""

    file: str
    cited_by: str = prop("The page that cites it.")
    lines: tuple[int, int] = prop(LINES)
    text: str


@document
class ContextDocument:
    """`askvault context --json`: the evidence for a prompt, without an answer."""

    version: int = prop("Version of this envelope.")
    prompt: str = prop("The prompt as given.")
    budget_tokens: int = prop("The token budget of the evidence.")
    used_tokens: int = prop("Tokens the pages' passages (and source windows) take.")
    degraded: str | None = prop(DEGRADED)
    pages: tuple[PackPage, ...] = prop("Best first; a prefix of the ranking that fits the budget.")
    neighbours: tuple[PackNeighbour, ...] = prop("Pages one link away from the pages.")
    sources: tuple[PackSource, ...] = prop("Raw source windows (with include_sources).")
    warnings: tuple[str, ...] = prop("Pages left out or stale, sources refused.")
    actions: tuple[str, ...] = prop("Suggested next steps.")
    period: PeriodDocument | None = prop(
        "The period the pages are narrowed to; absent when the prompt names none.",
        omitted=True,
    )


def context_document(pack: ContextPack) -> ContextDocument:
    """The versioned envelope of an evidence pack."""
    return ContextDocument(
        version=CONTEXT_VERSION,
        prompt=pack.prompt,
        budget_tokens=pack.budget_tokens,
        used_tokens=pack.used_tokens,
        degraded=pack.degraded,
        pages=tuple(_page(p) for p in pack.pages),
        neighbours=tuple(
            PackNeighbour(n.path, n.title, n.wikilink, n.why) for n in pack.neighbours
        ),
        sources=tuple(PackSource(w.path, w.cited_by, w.lines, w.text) for w in pack.source_windows),
        warnings=pack.warnings,
        actions=pack.actions,
        period=period_document(pack.period),
    )


def _page(page: EvidencePage) -> PackPage:
    return PackPage(
        file=page.path,
        title=page.title,
        wikilink=page.wikilink,
        type=page.type,
        score=page.score,
        matched=tuple(Points(c, p) for c, p in page.matched),
        fresh=page.fresh,
        warning=page.warning,
        sources=page.sources,
        chunks=tuple(_chunk(page.wikilink, c) for c in page.chunks),
    )


def _chunk(page_link: str, chunk: EvidenceChunk) -> PackChunk:
    citation = page_link if not chunk.heading else page_link[:-2] + f"#{chunk.heading}]]"
    return PackChunk(
        citation=citation,
        heading=chunk.heading,
        heading_path=chunk.heading_path,
        lines=chunk.lines,
        score=chunk.score,
        fresh=chunk.fresh,
        text=chunk.text,
    )
