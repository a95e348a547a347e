"""Answering one question: context -> prompt -> streamed reply -> checked citations -> note.

The grounding set is the pages whose text reached the model; a selected page that
cannot be read now is left out and named in a warning. One answer reads each note once
(services/note_reads.py): the evidence pack's freshness check, the readability check, the
citation checker and the ledger share the reads, so citations are judged on the text that
was read for the excerpts (a note cited but not among the pages is read after generation).
The reply's links are resolved after generation over the notes they can name
(`link_store.candidate_index`), never over a table of the whole vault. When Ollama is
away or the stream dies, the result is `waiting` with the best passages found: a partial
reply is never published as an answer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from askvault.adapters import link_store, meta, search_store
from askvault.adapters.db import Connection
from askvault.adapters.search_store import word_tokens
from askvault.adapters.vault import resolve_inside
from askvault.core.abstention import distance_cutoff, is_no_answer, too_far
from askvault.core.answer_note import AnswerNote, LedgerEntry, Passage, SupportingPage
from askvault.core.citations import (
    CitationReport,
    Excerpt,
    annotate_answer,
    check_citations,
    slug,
)
from askvault.core.claims import link_spans
from askvault.core.links import (
    extract_links,
    page_link,
    resolve_link,
)
from askvault.core.prompt import (
    PromptPlan,
    build_messages,
    context_budget,
    resolve_numbered_citations,
)
from askvault.core.support import unknown_subjects
from askvault.core.timestamps import local_iso
from askvault.errors import AskvaultError, OllamaError
from askvault.records import (
    AnswerOutcome,
    ContextPack,
    Embedder,
    Generator,
    ParsedNote,
    SearchFilters,
)
from askvault.services.note_reads import NoteReads, ReadNote
from askvault.settings import Settings

PASSAGES_SHOWN = 5
PACK_SHARE_OF_BUDGET = 0.85
PASSAGE_MAX_CHARS = 600
TokenSink = Callable[[str], None]


class AnswerCancelled(Exception):
    """The caller asked to stop (shutdown, or the question changed) while answering."""


@dataclass(frozen=True)
class QuestionOptions:
    """What a question note's frontmatter (or the `ask` flags) narrow the answer to."""

    folders: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    max_sources: int | None = None
    model: str | None = None
    language: str | None = None


@dataclass
class AnswerResult:
    """The outcome of `answer_question`; `note` is ready to render."""

    question: str
    status: AnswerOutcome
    note: AnswerNote
    answer: str = ""
    reply: str = ""
    report: CitationReport | None = None
    grounding: list[str] = field(default_factory=list)
    cited_paths: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    excerpts: tuple[Excerpt, ...] = ()
    prompt_tokens: int = 0
    nearest_distance: float | None = None  # question to the nearest chunk (vectors only)

    def as_json(self) -> dict[str, Any]:
        """The `askvault ask --json` document."""
        citations = []
        for c in self.report.citations if self.report else ():
            citations.append(
                {
                    "target": c.target,
                    "state": c.state,
                    "path": c.path,
                    "heading": c.heading,
                    "block": c.link.block,
                    "reason": c.reason or None,
                    "support": c.support,
                    "added_by_askvault": c.added,
                    "grounded": c.grounded,
                    "sentences": [
                        {
                            "sentence": s.sentence,
                            "verdict": s.verdict,
                            "coverage": s.coverage,
                            "span": s.span,
                        }
                        for s in c.supports
                    ],
                }
            )
        return {
            "question": self.question,
            "status": self.status,
            "answer": self.answer,
            "reason": self.reason or None,
            "citations": citations,
            "citations_error": self.report.error if self.report else None,
            "sentences": [
                {
                    "sentence": c.sentence,
                    "verdict": c.verdict,
                    "coverage": c.coverage,
                    "cited": list(c.cited),
                    "source": c.source,
                    "added": c.added,
                    "reason": c.reason or None,
                    "span": c.span,
                }
                for c in (self.report.claims if self.report else ())
            ],
            "sources": [{"page": e.wikilink, "raw": list(e.raw_paths)} for e in self.note.ledger],
            "grounding": self.grounding,
            "nearest_distance": self.nearest_distance,
            "warnings": self.warnings,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }


def iso_now(now: float | None = None) -> str:
    """Local time, ISO 8601 to the second, with its UTC offset (core/timestamps.py)."""
    return local_iso(time.time() if now is None else now)


def answer_question(
    conn: Connection,
    settings: Settings,
    question: str,
    options: QuestionOptions,
    *,
    embedder: Embedder | None,
    generator: Generator,
    on_token: TokenSink | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    asked: str | None = None,
    read_note: ReadNote | None = None,
) -> AnswerResult:
    """Answer `question` from the index; never raises for an Ollama problem (status waiting).

    Raises AnswerCancelled when `should_stop()` turns true (checked between stream pieces).
    `read_note` replaces the vault's note reader (`vault.read_note`; tests count reads).
    """
    from askvault.services.context import build_context  # written alongside; imported late

    question = question.strip()
    base = AnswerNote(
        question=question,
        status="failed",
        asked=asked or iso_now(),
        model=options.model or settings.ollama.chat_model,
        embed_model=settings.ollama.embed_model,
        index_as_of=meta.last_change_indexed_at(conn),
    )
    if not question:
        reason = "the question note is empty: write the question in its body"
        return AnswerResult(
            question, "failed", dataclasses.replace(base, reason=reason), reason=reason
        )
    timings: dict[str, float] = {}
    started = time.monotonic()
    num_ctx = settings.ollama.num_ctx
    excerpt_tokens = settings.queries.excerpt_tokens
    max_sources = options.max_sources or settings.queries.max_sources
    filters = SearchFilters(folders=options.folders, tags=options.tags)
    budget = context_budget(
        num_ctx, question, language=options.language, excerpt_tokens=excerpt_tokens
    )
    notes = NoteReads(settings.vault_path, settings.index.max_note_bytes, read=read_note)
    pack = build_context(
        conn,
        settings,
        question,
        # Headers and quoting cost tokens the pack does not count: leave them room.
        budget_tokens=int(budget * PACK_SHARE_OF_BUDGET),
        embedder=embedder,
        filters=filters,
        include_sources=False,
        notes=notes,
    )
    pack = dataclasses.replace(pack, pages=pack.pages[:max_sources])
    pack, warnings = _readable_pages(notes, pack)
    plan = build_messages(
        question, pack, num_ctx=num_ctx, language=options.language, excerpt_tokens=excerpt_tokens
    )
    timings["retrieval_s"] = time.monotonic() - started
    grounding = list(plan.grounding)

    try:
        reply = _generate(generator, plan, base.model, num_ctx, on_token, should_stop, timings)
    except OllamaError as exc:
        reason = exc.message + (f" — {exc.hint}" if exc.hint else "")
        note = dataclasses.replace(
            base,
            status="waiting",
            reason=reason,
            passages=_passages(pack),
            trace=_trace(pack, plan, timings, generator),
        )
        return AnswerResult(
            question,
            "waiting",
            note,
            grounding=grounding,
            warnings=warnings,
            timings=timings,
            reason=reason,
            excerpts=plan.excerpts,
            prompt_tokens=plan.prompt_tokens,
        )

    started = time.monotonic()
    linked = resolve_numbered_citations(reply, plan.excerpts)
    report, cited_notes = _collect_citations(conn, settings, notes, linked, plan.excerpts, question)
    timings["checks_s"] = time.monotonic() - started
    status = _status(reply, report)
    reason = ""
    nearest = pack.trace.get("nearest_distance")
    cutoff = distance_cutoff(settings.queries.max_distance, settings.ollama.embed_model)
    if status == "answered" and too_far(nearest, cutoff):
        status = "no-answer"
        reason = (
            f"Nothing in your notes is close to the question: the nearest passage is at "
            f"cosine distance {nearest:.2f}, beyond the {cutoff:.2f} of "
            "`queries.max_distance`, so the reply is not published as an answer."
        )
    elif status == "answered" and (unknown := _unknown_subjects(conn, question, report, plan)):
        status = "no-answer"
        named = ", ".join(f"“{n}”" for n in unknown)
        reason = (
            f"Your notes do not cover what the question asks about: no note mentions "
            f"{named}, so the reply is not published as an answer."
        )
    answer = annotate_answer(linked, report, keep_links=not reason)
    cited = _cited_paths(report) if not reason else []
    duplicates = search_store.duplicate_basenames(conn, cited) if cited else set()
    note = dataclasses.replace(
        base,
        status=status,
        reason=reason,
        answered=iso_now(),
        answer=answer,
        report=report,
        sources=tuple(_wikilink(pack, p, duplicates) for p in cited),
        supporting=_supporting(pack, report, grounding, duplicates) if not reason else (),
        caveats=tuple(_caveats(pack, report, warnings, grounding, status)),
        ledger=_ledger(settings, report, cited_notes, notes, pack, duplicates)
        if not reason
        else (),
        passages=_passages(pack) if status == "no-answer" else (),
        trace=_trace(pack, plan, timings, generator),
    )
    return AnswerResult(
        question,
        status,
        note,
        answer=answer,
        reply=reply,
        report=report,
        grounding=grounding,
        cited_paths=cited,
        warnings=warnings,
        timings=timings,
        excerpts=plan.excerpts,
        prompt_tokens=plan.prompt_tokens,
        reason=reason,
        nearest_distance=nearest,
    )


def _unknown_subjects(
    conn: Connection, question: str, report: CitationReport, plan: PromptPlan
) -> tuple[str, ...]:
    """Names of the question the reply repeats that no excerpt and no note mentions."""
    names = unknown_subjects(
        [c.sentence for c in report.claims],
        question,
        [f"{e.title} {e.heading or ''} {e.text}" for e in plan.excerpts],
    )
    return search_store.never_mentioned(conn, names)


def _status(reply: str, report: CitationReport) -> AnswerOutcome:
    """answered only when at least one claim is supported by what the model saw.

    A reply that refuses, or none of whose claims an excerpt supports, is a no-answer
    (docs/decisions.md: measured against an `unverified` status). A report that could not
    be computed leaves the model's word as the only signal.
    """
    if report.error is not None:
        return "no-answer" if is_no_answer(reply) else "answered"
    if is_no_answer(reply) or report.supported_claims == 0:
        return "no-answer"
    return "answered"


def _generate(
    generator: Generator,
    plan: PromptPlan,
    model: str,
    num_ctx: int,
    on_token: TokenSink | None,
    should_stop: Callable[[], bool],
    timings: dict[str, float],
) -> str:
    """The whole reply; `timings` gets the wait for its first piece (the model reading the
    prompt) and the rest (writing)."""
    pieces: list[str] = []
    started = time.monotonic()
    first: float | None = None
    stream = generator.stream(plan.messages, model=model, num_ctx=num_ctx)
    try:
        for piece in stream:
            if first is None:
                first = time.monotonic()
                timings["prompt_eval_s"] = first - started
            if should_stop():
                raise AnswerCancelled("stopped while the answer was being generated")
            pieces.append(piece)
            if on_token is not None:
                on_token(piece)
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        now = time.monotonic()
        if first is None:
            timings["prompt_eval_s"] = now - started
        timings["generation_s"] = now - (first if first is not None else now)
    if should_stop():
        raise AnswerCancelled("stopped while the answer was being generated")
    return "".join(pieces).strip()


def _readable_pages(notes: NoteReads, pack: ContextPack) -> tuple[ContextPack, list[str]]:
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
    return dataclasses.replace(pack, pages=tuple(kept)), warnings


def review_candidate_slugs(settings: Settings) -> set[str]:
    """Slugs of the answer notes still in queries/answers (pending, not broken, when linked)."""
    folder = settings.vault_path / settings.queries.folder / settings.queries.answers
    try:
        return {slug(p.name) for p in folder.iterdir() if p.suffix.lower() == ".md"}
    except OSError:
        return set()


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


def _cited_paths(report: CitationReport) -> list[str]:
    return list(
        dict.fromkeys(
            c.path for c in report.citations if c.state == "resolved" and c.published and c.path
        )
    )


def _wikilink(pack: ContextPack, path: str, duplicates: set[str]) -> str:
    page = next((p for p in pack.pages if p.path == path), None)
    return page.wikilink if page else page_link(path, None, duplicates)


def page_wikilink(path: str, duplicates: set[str] | frozenset[str] = frozenset()) -> str:
    """`[[name]]` for a vault path; `[[folder/name]]` when its file name is in `duplicates`
    (see `search_store.duplicate_basenames`), as search and the excerpts write it."""
    return page_link(path, None, duplicates)


def _supporting(
    pack: ContextPack, report: CitationReport, grounding: list[str], duplicates: set[str]
) -> tuple[SupportingPage, ...]:
    ranks = {p.path: i for i, p in enumerate(pack.pages)}
    cited = _cited_paths(report)
    lines = []
    for path in sorted(cited, key=lambda p: (ranks.get(p, len(ranks)), cited.index(p))):
        page = next((p for p in pack.pages if p.path == path), None)
        verdicts = [c.support for c in report.citations if c.path == path and c.support]
        backed = f"; cited sentences {', '.join(dict.fromkeys(verdicts))}" if verdicts else ""
        if page is None or path not in grounding:
            why = "cited, but its text was not among the excerpts given to the model"
        else:
            headings = [c.heading for c in page.chunks if c.heading]
            where = f" (excerpt under “{headings[0]}”)" if headings else ""
            why = f"ranked #{ranks[path] + 1} of {len(pack.pages)} by retrieval{where}"
        lines.append(SupportingPage(_wikilink(pack, path, duplicates), why + backed))
    return tuple(lines)


def _caveats(
    pack: ContextPack,
    report: CitationReport,
    warnings: list[str],
    grounding: list[str],
    status: str,
) -> list[str]:
    caveats = list(warnings)
    if pack.degraded:
        caveats.append(f"Search ran in degraded mode: {pack.degraded}")
    if report.error:
        caveats.append(f"Citations could not be checked: {report.error}")
    for c in report.citations:
        if c.state == "broken":
            caveats.append(f"The link to `{c.target}` is broken ({c.reason}); shown as plain text.")
        elif c.state == "resolved" and not c.grounded:
            caveats.append(
                f"`{c.target}` was cited but its text was not given to the model; "
                "shown as plain text."
            )
        elif c.state == "resolved" and c.support != "supported" and not c.added:
            caveats.append(
                f"`{c.target}` does not say what the sentence citing it says; shown as plain text."
            )
    added = [c for c in report.claims if c.added]
    if added:
        caveats.append(
            f"askvault added {len(added)} citation(s) the model left out "
            "(marked in the citation report)."
        )
    if status == "answered" and not report.error and not report.citations:
        caveats.append("The answer cites no page: treat it with care.")
    return list(dict.fromkeys(caveats))


def _ledger(
    settings: Settings,
    report: CitationReport,
    notes: Mapping[str, ParsedNote],
    reads: NoteReads,
    pack: ContextPack,
    duplicates: set[str],
) -> tuple[LedgerEntry, ...]:
    entries = []
    for path in _cited_paths(report):
        note = notes.get(path)
        raw = resolve_raw_sources(settings, note.sources if note else (), reads)
        entries.append(LedgerEntry(_wikilink(pack, path, duplicates), tuple(raw)))
    return tuple(entries)


def resolve_raw_sources(
    settings: Settings, sources: tuple[str, ...], reads: NoteReads | None = None
) -> list[str]:
    """The vault files a page's `sources:` lead to, through `_sources/` summaries to `raw/`
    (each summary read once through `reads`, this answer's reads).

    Only files that exist inside the vault are returned: a path is never invented.
    """
    if reads is None:
        reads = NoteReads(settings.vault_path, settings.index.max_note_bytes)
    found: list[str] = []
    for entry in sources:
        for path in _source_targets(settings, entry):
            if "_sources" in path.split("/")[:-1] and path.lower().endswith(".md"):
                summary = reads.parsed(path)
                for inner in summary.sources if summary else ():
                    found += [
                        p
                        for p in _source_targets(settings, inner)
                        if "_sources" not in p.split("/")
                    ]
            else:
                found.append(path)
    return list(dict.fromkeys(found))


def _source_targets(settings: Settings, entry: str) -> list[str]:
    """Existing vault files one `sources:` entry names (a wikilink or a relative path)."""
    entry = entry.strip()
    links = extract_links(entry)
    target = links[0].target if links else entry
    if not target or "://" in target:
        return []
    candidates = [target, f"{target}.md"]
    if "/" not in target:
        candidates += [f"_sources/{target}.md", f"_sources/{target}", f"raw/{target}"]
    for candidate in candidates:
        try:
            path = resolve_inside(settings.vault_path, candidate)
        except AskvaultError:
            return []
        if path.is_file():
            root = Path(settings.vault_path).resolve()
            return [path.relative_to(root).as_posix()]
    return []


def _passages(pack: ContextPack) -> tuple[Passage, ...]:
    shown = []
    for page in pack.pages:
        for chunk in page.chunks[:1]:
            text = chunk.text.strip()
            if len(text) > PASSAGE_MAX_CHARS:
                text = text[: PASSAGE_MAX_CHARS - 1].rstrip() + "…"
            # A quoted `![[embed]]` would transclude the other note into this one.
            shown.append(Passage(page.wikilink, chunk.heading, text.replace("![[", "\\![[")))
        if len(shown) >= PASSAGES_SHOWN:
            break
    return tuple(shown)


def _trace(
    pack: ContextPack,
    plan: PromptPlan,
    timings: Mapping[str, float],
    generator: Any = None,
) -> tuple[str, ...]:
    usage = getattr(generator, "usage", None)
    counted = getattr(usage, "prompt_tokens", None)
    prompt = f"prompt ~{plan.prompt_tokens} tokens" + (
        f" ({counted} counted by the model)" if counted else ""
    )
    lines = [
        f"{len(pack.pages)} page(s) retrieved; {len(plan.grounding)} sent to the model in "
        f"{len(plan.excerpts)} excerpt(s) (~{plan.used_tokens} of {plan.budget_tokens} "
        f"excerpt tokens, {plan.dropped_chunks} more left out); {prompt}"
    ]
    if pack.degraded:
        lines.append(f"degraded: {pack.degraded}")
    nearest = pack.trace.get("nearest_distance")
    if nearest is not None:
        lines.append(f"nearest passage at cosine distance {nearest:.3f}")
    for i, page in enumerate(pack.pages, 1):
        channels = " + ".join(f"{name} {points:.4f}" for name, points in page.matched)
        sent = "" if page.path in plan.grounding else " (not sent)"
        # Plain names, not links: retrieved pages that were not cited add no graph edges.
        lines.append(
            f"{i}. {page.wikilink[2:-2] if page.wikilink.startswith('[[') else page.title}"
            f"{sent} score {page.score:.4f}" + (f" ({channels})" if channels else "")
        )
    stages = ", ".join(
        f"{k.removesuffix('_s').replace('_', ' ')} {v * 1000:.0f} ms" for k, v in timings.items()
    )
    if stages:
        lines.append(f"time: {stages}")
    return tuple(lines)
