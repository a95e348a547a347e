"""The `askvault ask --json` document, also the MCP `ask` tool's result.

Built from an answer's result (`AnswerResult`) and what became of it (the note saved, the
log line), field by field: the answer path hands over its result, this module decides what
an agent or a script sees of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from askvault.core.abstention import CutoffSource
from askvault.core.decision import DecisionReason
from askvault.core.schema import document, prop
from askvault.records import AnswerOutcome, CitationState, SupportVerdict
from askvault.services.documents.search import PeriodDocument, period_document

if TYPE_CHECKING:
    from askvault.core.citations import Citation, ClaimCheck
    from askvault.services.answer import AnswerResult


@document
class SentenceSupport:
    """How well one sentence that cites a page is backed by that page's text."""

    sentence: str = prop("The sentence judged.")
    verdict: SupportVerdict
    coverage: float = prop("Share of the sentence's content words the text holds.")
    span: str | None = prop("The text's words that back it best.")


@document
class CitationDocument:
    """One unique wikilink of the answer and what became of it."""

    target: str = prop("The link as written, without label: `A`, `A#Heading`, `A#^block`.")
    state: CitationState
    path: str | None = prop("The note it resolves to, vault-relative.")
    heading: str | None
    block: str | None
    reason: str | None = prop("Why it is broken or pending.")
    support: SupportVerdict | None = prop("The best verdict over the citing sentences.")
    added_by_askvault: bool = prop("askvault linked a sentence the model left uncited.")
    grounded: bool = prop("The page's text reached the model.")
    sentences: tuple[SentenceSupport, ...]


@document
class ClaimDocument:
    """One sentence (claim) of the answer as askvault judged it."""

    sentence: str = prop("The sentence as the model wrote it.")
    verdict: SupportVerdict = prop("How well the best excerpt backs it.")
    coverage: float = prop("Share of its content words that excerpt holds.")
    cited: tuple[str, ...] = prop("The targets the model cited for it.")
    source: str | None = prop("The link whose excerpt backs it best.")
    added: str | None = prop("The link askvault added, when it did.")
    reason: str | None = prop("Why it is flagged, when it is.")
    span: str | None = prop("The excerpt's words that back it best.")
    quote: str | None = prop(
        "The note's sentence(s) a supported claim rests on, copied by askvault; null "
        "unless supported."
    )


@document
class SourceEntry:
    """One `## Sources` entry of the answer note."""

    page: str = prop("The cited page as a wikilink.")
    raw: tuple[str, ...] = prop("The raw files its `sources:` lead to.")


@document
class AnswerDocument:
    """`askvault ask --json`: the checked answer and its report."""

    question: str = prop("The question as asked.")
    status: AnswerOutcome = prop("`answered` only when some claim is supported.")
    answer: str = prop("The answer with its links as published (unsupported ones as text).")
    reason: str | None = prop("Why it is not `answered`.")
    decided_by: DecisionReason | None = prop(
        "What decided the status: supported, unchecked, refusal, reversed, nothing-supported, "
        "answer-unsupported, pasted-excerpt, mostly-unsupported, "
        "too-far, judged-wrong, unsteady, unknown-subject, another-question, "
        "earlier-question or off-thread (none when no reply was checked)."
    )
    citations: tuple[CitationDocument, ...] = prop("Each unique link, in first-use order.")
    citations_error: str | None = prop("Why the citations could not be collected.")
    sentences: tuple[ClaimDocument, ...] = prop("Each claim of the answer, judged.")
    sources: tuple[SourceEntry, ...]
    grounding: tuple[str, ...] = prop("The pages whose text reached the model.")
    nearest_distance: float | None = prop(
        "Distance of the question to the nearest chunk (vectors only)."
    )
    distance_cutoff: float | None = prop(
        "The cut-off beyond which no answer is published; null when none is in force."
    )
    distance_cutoff_source: CutoffSource | None = prop(
        "Where the cut-off comes from: setting (queries.max_distance), measured (for the"
        " embedding model), calibrated (from the vault's note titles) or none."
    )
    warnings: tuple[str, ...] = prop("Pages that could not be read, options ignored, ...")
    timings: dict[str, float] = prop("Seconds per step.")
    saved: str | None = prop("The answer note written (with save), vault-relative.")
    logged: str | None = prop("The line appended to the log note, if any.")
    period: PeriodDocument | None = prop(
        "The period the question was read to ask about; absent when it names none.",
        omitted=True,
    )
    turn: int | None = prop(
        "The turn written into the answer note `saved` (2 for its first follow-up); absent "
        "unless a follow-up was written.",
        omitted=True,
    )


def answer_document(
    result: AnswerResult,
    *,
    saved: str | None = None,
    logged: str | None = None,
    turn: int | None = None,
) -> AnswerDocument:
    """The document of an answer; `saved` is the note written, `logged` the log line,
    `turn` the follow-up's turn written into `saved`."""
    report = result.report
    return AnswerDocument(
        question=result.question,
        status=result.status,
        answer=result.answer,
        reason=result.reason or None,
        decided_by=result.decided_by,
        citations=tuple(_citation(c) for c in report.citations) if report else (),
        citations_error=report.error if report else None,
        sentences=tuple(_claim(c) for c in report.claims) if report else (),
        sources=tuple(SourceEntry(e.wikilink, e.raw_paths) for e in result.note.ledger),
        grounding=tuple(result.grounding),
        nearest_distance=result.nearest_distance,
        distance_cutoff=result.cutoff.value if result.cutoff else None,
        distance_cutoff_source=result.cutoff.source if result.cutoff else None,
        warnings=tuple(result.warnings),
        timings={k: round(v, 3) for k, v in result.timings.items()},
        saved=saved,
        logged=logged,
        period=period_document(result.period),
        turn=turn,
    )


def _citation(c: Citation) -> CitationDocument:
    return CitationDocument(
        target=c.target,
        state=c.state,
        path=c.path,
        heading=c.heading,
        block=c.link.block,
        reason=c.reason or None,
        support=c.support,
        added_by_askvault=c.added,
        grounded=c.grounded,
        sentences=tuple(
            SentenceSupport(s.sentence, s.verdict, s.coverage, s.span) for s in c.supports
        ),
    )


def _claim(c: ClaimCheck) -> ClaimDocument:
    return ClaimDocument(
        sentence=c.sentence,
        verdict=c.verdict,
        coverage=c.coverage,
        cited=c.cited,
        source=c.source,
        added=c.added,
        reason=c.reason or None,
        span=c.span,
        quote=c.quote if c.verdict == "supported" else None,
    )
