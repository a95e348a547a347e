"""`answer_question`: one question from the index to a checked answer note.

The steps, each a module of this package or a pure function of core: retrieve (the
evidence pack), prompt (core/prompt.py), generate (the streamed reply), check (links
resolved, claims judged), decide (core/decision.py: published or not, and why), compose
(the note's parts, core/answer_parts.py). One `NoteReads` is made per answer and handed
down, so each note is read from the vault and parsed at most once. When Ollama is away
or the stream dies, the result is `waiting` with the best passages found: a partial
reply is never published as an answer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from askvault.adapters import meta, search_store
from askvault.adapters.db import Connection
from askvault.core import answer_parts
from askvault.core.abstention import Cutoff
from askvault.core.answer_note import AnswerNote
from askvault.core.citations import CitationReport, annotate_answer
from askvault.core.controls import strip_controls
from askvault.core.decision import Decision, another_question, decide, earlier_question
from askvault.core.followup import carried_options
from askvault.core.own_question import answer_text, min_cosine, trace_line
from askvault.core.prompt import PromptPlan, build_messages, reordered, split_quoted_reply
from askvault.core.reply import SafeReply, cut_note, sanitize_reply
from askvault.core.timestamps import local_iso
from askvault.core.verification import same_ground
from askvault.errors import OllamaError
from askvault.records import Embedder, Generator, QuestionOptions
from askvault.services.answer.checking import Checked, check
from askvault.services.answer.generation import Generation, TokenSink, generate, reply_limits
from askvault.services.answer.own_question import OwnQuestion, ask_own_question
from askvault.services.answer.result import AnswerResult
from askvault.services.answer.retrieval import Retrieval, retrieve
from askvault.services.answer.sources import raw_sources_of
from askvault.services.answer.verification import Verification, verify
from askvault.services.index.calibration import cutoff_for
from askvault.services.retrieval.note_reads import NoteReads, ReadNote
from askvault.services.retrieval.periods import empty_period_reason, period_line
from askvault.settings import Settings, VerifyMode


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
    now: datetime | None = None,
    search_as: str | None = None,
    background: str = "",
    earlier: Sequence[str] = (),
    carried: Sequence[str] = (),
    thread_pages: Sequence[str] = (),
    period_words: Sequence[str] = (),
) -> AnswerResult:
    """Answer `question` from the index; never raises for an Ollama problem (status waiting).

    `search_as` is what is searched instead of the question (a follow-up made standalone:
    core/followup.py); the model and the checks still read `question`. `background` is
    what the model reads right before the question (a follow-up's thread so far), and
    `earlier` the thread's earlier questions (a follow-up's reply that answers one of them
    again is withheld: `decision.earlier_question`); `carried` the pages its earlier turn's
    search found first, candidates of this one's (services/answer/followup.py), and
    `thread_pages` the pages it reached: a reply that links to none of them is withheld
    (`decision.off_thread`).
    Raises AnswerCancelled when `should_stop()` turns true (checked between stream pieces).
    `read_note` replaces the vault's note reader (`vault.read_note`; tests count reads).
    `now` anchors the question's period words ("last week"; None: the clock's time);
    `period_words` are the texts read for the period instead of what is searched (a
    follow-up's own words, then its first question's: core.followup.period_texts).
    """
    question = strip_controls(question).strip()
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
    notes = NoteReads(settings.vault_path, settings.index.max_note_bytes, read=read_note)
    searched = strip_controls(search_as).strip() if search_as else question
    found = retrieve(
        conn,
        settings,
        searched,
        options,
        embedder=embedder,
        notes=notes,
        now=now,
        carried=carried,
        period_words=period_words,
    )
    cutoff = cutoff_for(conn, settings)
    period = found.pack.period
    base = dataclasses.replace(base, asked_with=carried_options(options, period))
    if period is not None:
        base = dataclasses.replace(base, period=period_line(period))
    plan = build_messages(
        question,
        found.pack,
        num_ctx=settings.ollama.num_ctx,
        language=options.language,
        excerpt_tokens=settings.queries.excerpt_tokens,
        form=settings.queries.prompt,
        background=background,
    )
    timings["retrieval_s"] = time.monotonic() - started
    try:
        # A period with no notes: nothing to answer from, so the model is not asked; the
        # empty reply goes through the checks and `decide` like any other.
        generation = (
            Generation(reply="")
            if period and not period.notes
            else generate(
                generator,
                plan,
                model=base.model,
                num_ctx=settings.ollama.num_ctx,
                on_token=on_token,
                should_stop=should_stop,
                timings=timings,
                limits=reply_limits(settings),
            )
        )
    except OllamaError as exc:
        return _waiting(base, found, plan, timings, exc, cutoff)
    if settings.queries.prompt == "quote-first":
        generation = dataclasses.replace(
            generation, reply=split_quoted_reply(generation.reply).answer
        )
    safe = sanitize_reply(generation.reply)  # untrusted: checked as published (core/reply.py)
    started = time.monotonic()
    checked = check(conn, settings, notes, safe.text, plan, question)
    timings["checks_s"] = time.monotonic() - started
    verification = Verification()
    if settings.queries.verify == "judge":
        verification = verify(
            generator,
            question,
            checked.report,
            model=base.model,
            num_ctx=settings.ollama.num_ctx,
            should_stop=should_stop,
            limits=reply_limits(settings),
        )
        timings["verify_s"] = verification.seconds
    steady: bool | None = None
    if _ask_again(settings.queries.verify, checked.report):
        started = time.monotonic()
        steady = _asked_again(
            conn,
            settings,
            notes,
            generator,
            checked.report,
            plan,
            question,
            options,
            base.model,
            should_stop,
            background,
        )
        timings["verify_s"] = time.monotonic() - started
    decision = decide(
        safe.text,
        checked.report,
        nearest_distance=found.nearest_distance,
        cutoff=cutoff.value,
        cutoff_from=cutoff.reason_words,
        vector_share=found.vector_share,
        unknown_subjects=checked.unknown_subjects,
        judged=verification.judged.verdict if verification.judged else None,
        steady=steady,
        thread_pages=thread_pages,
    )
    own = OwnQuestion()
    if decision.published and embedder is not None:
        own = _own_question(
            settings, embedder, generator, checked, question, base.model, should_stop, earlier
        )
        if own.seconds:
            timings["own_question_s"] = own.seconds
        if own.elsewhere and own.question:
            decision = another_question(own.question)
        elif own.answers_earlier and own.question:
            decision = earlier_question(own.question)
    if period is not None and not period.notes and not decision.published:
        decision = dataclasses.replace(decision, reason=empty_period_reason(period))
    return _compose(
        conn,
        settings,
        notes,
        base,
        _Steps(found, plan, generation, safe, checked, verification, decision, cutoff, own),
        timings,
    )


def _own_question_trace(own: OwnQuestion) -> tuple[str, ...]:
    """The trace's line on the own-question check, when it was made."""
    if own.question is None or own.cosine is None or own.cutoff is None:
        return ()
    return (trace_line(own.question, own.cosine, own.cutoff, own.earlier_cosine),)


def _own_question(
    settings: Settings,
    embedder: Embedder,
    generator: Generator,
    checked: Checked,
    question: str,
    model: str,
    should_stop: Callable[[], bool],
    earlier: Sequence[str] = (),
) -> OwnQuestion:
    """Which question the answer, as it would be published, answers (`queries.own_question`;
    not asked when off, or when the embedding model has no cut-off)."""
    cut = min_cosine(settings.ollama.embed_model, settings.queries.min_own_question_cosine)
    if not settings.queries.own_question or cut is None:
        return OwnQuestion()
    published = annotate_answer(checked.linked, checked.report, keep_links=True, quotes=False)
    return ask_own_question(
        generator,
        embedder,
        question,
        answer_text([published]),
        cutoff=cut,
        model=model,
        num_ctx=settings.ollama.num_ctx,
        should_stop=should_stop,
        limits=reply_limits(settings),
        earlier=earlier,
    )


def _ask_again(mode: VerifyMode, report: CitationReport) -> bool:
    """Whether the reply is asked a second time: every reply with a supported claim
    (`again`), or only one the notes back in part (`doubtful`: docs/decisions.md, "Asked
    again only when the notes back part of the reply")."""
    if not report.supported_claims:
        return False
    if mode == "again":
        return True
    return mode == "doubtful" and report.supported_claims < len(report.claims)


def _asked_again(
    conn: Connection,
    settings: Settings,
    notes: NoteReads,
    generator: Generator,
    first: CitationReport,
    plan: PromptPlan,
    question: str,
    options: QuestionOptions,
    model: str,
    should_stop: Callable[[], bool],
    background: str = "",
) -> bool | None:
    """Whether a second reply, to the excerpts in reverse order, rests on some sentence the
    first rests on (`queries.verify = again`); None when it could not be asked."""
    again = reordered(
        plan,
        question,
        language=options.language,
        form=settings.queries.prompt,
        background=background,
    )
    try:
        second = generate(
            generator,
            again,
            model=model,
            num_ctx=settings.ollama.num_ctx,
            should_stop=should_stop,
            limits=reply_limits(settings),
        )
    except OllamaError:
        return None  # the first reply stands on its own check
    reply = second.reply
    if settings.queries.prompt == "quote-first":
        reply = split_quoted_reply(reply).answer
    checked = check(conn, settings, notes, sanitize_reply(reply).text, again, question)
    return None if checked.report.error else same_ground(first, checked.report)


@dataclass(frozen=True)
class _Steps:
    """What each step of one answer returned."""

    found: Retrieval
    plan: PromptPlan
    generation: Generation
    safe: SafeReply
    checked: Checked
    verification: Verification
    decision: Decision
    cutoff: Cutoff
    own_question: OwnQuestion = OwnQuestion()

    @property
    def warnings(self) -> list[str]:
        """The retrieval's warnings, what the reply's sanitising changed, and its cut."""
        cut = self.generation.cut
        return [
            *(strip_controls(w) for w in self.found.warnings),  # names of files: no controls
            *self.safe.notes,
            *([cut_note(cut, self.generation.limits)] if cut and self.generation.limits else []),
        ]


def _compose(
    conn: Connection,
    settings: Settings,
    notes: NoteReads,
    base: AnswerNote,
    steps: _Steps,
    timings: dict[str, float],
) -> AnswerResult:
    """The answer note and result of a checked, decided reply."""
    pack, report, decision = steps.found.pack, steps.checked.report, steps.decision
    keeps = decision.keeps_links
    answer = annotate_answer(
        steps.checked.linked, report, keep_links=keeps, quotes=decision.published
    )
    cited = answer_parts.cited_paths(report) if keeps else []
    duplicates = search_store.duplicate_basenames(conn, cited) if cited else set()
    raw = raw_sources_of(settings, [(p, steps.checked.cited_notes.get(p)) for p in cited], notes)
    grounding = list(steps.plan.grounding)
    note = dataclasses.replace(
        base,
        status=decision.status,
        reason=decision.reason,
        answered=iso_now(),
        answer=answer,
        report=report,
        sources=tuple(answer_parts.wikilink_of(pack, p, duplicates) for p in cited),
        supporting=answer_parts.supporting_pages(pack, report, grounding, duplicates)
        if keeps
        else (),
        caveats=answer_parts.caveats(
            pack, report, steps.warnings, decision.status, steps.verification.error
        ),
        ledger=answer_parts.ledger_entries(pack, report, raw, duplicates) if keeps else (),
        passages=answer_parts.passages(pack) if decision.status == "no-answer" else (),
        trace=(
            *answer_parts.trace_lines(
                pack, steps.plan, timings, steps.generation.counted_tokens, cutoff=steps.cutoff
            ),
            *_own_question_trace(steps.own_question),
        ),
    )
    return AnswerResult(
        base.question,
        decision.status,
        note,
        answer=answer,
        reply=steps.generation.reply,
        report=report,
        grounding=grounding,
        cited_paths=cited,
        warnings=steps.warnings,
        timings=timings,
        excerpts=steps.plan.excerpts,
        prompt_tokens=steps.plan.prompt_tokens,
        reason=decision.reason,
        nearest_distance=steps.found.nearest_distance,
        cutoff=steps.cutoff,
        verification=steps.verification,
        own_question=steps.own_question,
        decided_by=decision.decided_by,
        period=pack.period,
    )


def _waiting(
    base: AnswerNote,
    found: Retrieval,
    plan: PromptPlan,
    timings: dict[str, float],
    exc: OllamaError,
    cutoff: Cutoff,
) -> AnswerResult:
    """The note of a question that waits for Ollama: why, and the best passages found."""
    reason = exc.message + (f" — {exc.hint}" if exc.hint else "")
    note = dataclasses.replace(
        base,
        status="waiting",
        reason=reason,
        passages=answer_parts.passages(found.pack),
        trace=answer_parts.trace_lines(found.pack, plan, timings, cutoff=cutoff),
    )
    return AnswerResult(
        base.question,
        "waiting",
        note,
        grounding=list(plan.grounding),
        warnings=list(found.warnings),
        timings=timings,
        reason=reason,
        excerpts=plan.excerpts,
        prompt_tokens=plan.prompt_tokens,
        period=found.pack.period,
        cutoff=cutoff,
    )
