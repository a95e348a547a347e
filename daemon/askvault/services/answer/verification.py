"""The verify step: the chat model judges whether the quoted passages answer the question.

One short request per answer (core/verification.py builds it and reads the verdict),
grammar-constrained to `{"verdict": "yes" | "no"}`, sent only when some claim rests on a
passage. A model that cannot be reached now leaves the lexical verdicts standing, and the
answer says it was not checked for meaning.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from askvault.core.citations import CitationReport, ClaimCheck
from askvault.core.reply import ReplyLimits
from askvault.core.verification import (
    VERDICT_MAX_TOKENS,
    VERDICT_SCHEMA,
    Judged,
    judge_messages,
    judged_claims,
    read_verdict,
)
from askvault.errors import OllamaError
from askvault.records import Generator
from askvault.services.answer.generation import short_reply


@dataclass(frozen=True)
class Verification:
    """The verdict (None: not asked, or unreadable), the claims it is about, why it could
    not be asked, and how long it took."""

    judged: Judged | None = None
    claims: tuple[ClaimCheck, ...] = ()
    error: str = ""
    seconds: float = 0.0


def verify(
    generator: Generator,
    question: str,
    report: CitationReport,
    *,
    model: str,
    num_ctx: int,
    should_stop: Callable[[], bool] = lambda: False,
    limits: ReplyLimits | None = None,
) -> Verification:
    """Ask the model whether the claims' passages answer `question` (see the module doc);
    its reply is read up to VERDICT_MAX_TOKENS pieces and `limits`' bytes and seconds."""
    claims = judged_claims(report.claims) if report.error is None else ()
    if not claims:
        return Verification()
    started = time.monotonic()
    try:
        read = short_reply(
            generator,
            judge_messages(question, claims),
            model=model,
            num_ctx=num_ctx,
            schema=VERDICT_SCHEMA,
            max_tokens=VERDICT_MAX_TOKENS,
            limits=limits,
            should_stop=should_stop,
            stopped="stopped while the answer was being checked",
        )
    except OllamaError as exc:
        return Verification(None, claims, exc.message, time.monotonic() - started)
    # A verdict cut short is read as far as it came: unreadable, it is no verdict.
    return Verification(read_verdict(read.text), claims, "", time.monotonic() - started)
