"""The check step: the reply's citations resolved and every claim judged.

The reply's `[n]` citations become the excerpts' wikilinks; its links are resolved after
generation over the notes they can name (`link_store.candidate_index`), never over a
table of the whole vault; the cited notes are parsed from this answer's reads, so a page
is judged on the text that was read for its excerpts (only a note cited but not among
the pages is read now). A failure of the checker is a report that says so, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from askvault.adapters import link_store, search_store
from askvault.adapters.db import Connection
from askvault.adapters.search_store import word_tokens
from askvault.core.citations import CitationReport, Excerpt, check_citations
from askvault.core.claims import link_spans
from askvault.core.links import extract_links, resolve_link
from askvault.core.prompt import PromptPlan, resolve_numbered_citations
from askvault.core.support import unknown_subjects
from askvault.records import ParsedNote
from askvault.services.answer.sources import review_candidate_slugs
from askvault.services.retrieval.note_reads import NoteReads
from askvault.settings import Settings


@dataclass(frozen=True)
class Checked:
    """The reply with its numbers made links, its report, the notes its links name, and
    the question's subjects that it repeats and no note mentions."""

    linked: str
    report: CitationReport
    cited_notes: dict[str, ParsedNote] = field(default_factory=dict)
    unknown_subjects: tuple[str, ...] = ()


def check(
    conn: Connection,
    settings: Settings,
    notes: NoteReads,
    reply: str,
    plan: PromptPlan,
    question: str,
) -> Checked:
    """Resolve and judge the reply against the excerpts of `plan` (see the module docstring)."""
    linked = resolve_numbered_citations(reply, plan.excerpts)
    report, cited = _collect_citations(conn, settings, notes, linked, plan.excerpts, question)
    unknown = _unknown_subjects(conn, question, report, plan) if not report.error else ()
    return Checked(linked, report, cited, unknown)


def _unknown_subjects(
    conn: Connection, question: str, report: CitationReport, plan: PromptPlan
) -> tuple[str, ...]:
    """Names of the question the reply repeats that no excerpt and no note mentions."""
    names = unknown_subjects(
        [c.sentence for c in report.claims],
        question,
        [f"{e.title} {e.heading or ''} {e.text}" for e in plan.excerpts],
    )
    return search_store.never_mentioned(conn, names) if names else ()


def _collect_citations(
    conn: Connection,
    settings: Settings,
    reads: NoteReads,
    reply: str,
    excerpts: tuple[Excerpt, ...],
    question: str,
) -> tuple[CitationReport, dict[str, ParsedNote]]:
    notes: dict[str, ParsedNote] = {}
    try:
        # The reply's links resolved over the notes they can name, as the index is now
        # (after generation), not over a table of the whole vault.
        index = link_store.candidate_index(
            conn,
            [lk.target for lk in extract_links(reply)] + [s.link.target for s in link_spans(reply)],
        )
        for link in extract_links(reply):
            path = resolve_link(link.target, index) if link.target else None
            if path is not None and path not in notes:
                parsed = reads.parsed(path)
                if parsed is not None:
                    notes[path] = parsed
        report = check_citations(
            reply,
            index,
            notes,
            review_candidate_slugs(settings),
            excerpts=excerpts,
            tokenize=lambda texts: word_tokens(conn, texts),
            question=question,
        )
        for citation in report.citations:  # links askvault added: their notes for the ledger
            if citation.added and citation.path and citation.path not in notes:
                parsed = reads.parsed(citation.path)
                if parsed is not None:
                    notes[citation.path] = parsed
    except Exception as exc:  # noqa: BLE001 - any failure becomes "unavailable", never a crash
        return CitationReport(error=f"{type(exc).__name__}: {exc}"), notes
    return report, notes
