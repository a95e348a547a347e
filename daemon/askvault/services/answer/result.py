"""What answering one question came to: the note to render and the values behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from askvault.core.answer_note import AnswerNote
from askvault.core.citations import CitationReport, Excerpt
from askvault.records import AnswerOutcome
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
    verification: Verification = field(default_factory=Verification)

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
                    "quote": c.quote if c.verdict == "supported" else None,
                }
                for c in (self.report.claims if self.report else ())
            ],
            "sources": [{"page": e.wikilink, "raw": list(e.raw_paths)} for e in self.note.ledger],
            "grounding": self.grounding,
            "nearest_distance": self.nearest_distance,
            "warnings": self.warnings,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }
