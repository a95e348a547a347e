"""What answering one question came to: the note to render and the values behind it."""

from __future__ import annotations

from dataclasses import dataclass, field

from askvault.core.abstention import Cutoff
from askvault.core.answer_note import AnswerNote
from askvault.core.citations import CitationReport, Excerpt
from askvault.core.decision import DecisionReason
from askvault.records import AnswerOutcome, PeriodScope
from askvault.services.answer.own_question import OwnQuestion
from askvault.services.answer.verification import Verification


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
    cutoff: Cutoff | None = None  # the distance cut-off in force, and where it comes from
    verification: Verification = field(default_factory=Verification)
    # Which question the model says the answer answers, and how close it is to the user's.
    own_question: OwnQuestion = field(default_factory=OwnQuestion)
    # What decided the status (core/decision.py); None before a reply was checked.
    decided_by: DecisionReason | None = None
    period: PeriodScope | None = None  # the period the question was read to ask about
