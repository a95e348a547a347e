"""`answer_follow_up`: a follow-up question answered with its thread's earlier questions.

The follow-up is made standalone by rules (core/followup.py) and that is what is searched,
over the whole vault: the earlier turns' pages are not a cage (fusing them in as extra
candidates measured no better: docs/benchmarks.md). The model reads the follow-up with
the thread's first question beside it, so "and on mobile?" is asked about the ribbon.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from askvault.adapters.db import Connection
from askvault.core.followup import is_elliptic, standalone_question
from askvault.records import Embedder, Generator, QuestionOptions
from askvault.services.answer.pipeline import answer_question
from askvault.services.answer.result import AnswerResult
from askvault.settings import Settings


@dataclass(frozen=True)
class FollowUpAnswer:
    """The answer of one follow-up, and what was searched and asked for it."""

    result: AnswerResult
    searched: str
    asked_as: str


def asked_as(earlier: Sequence[str], follow_up: str) -> str:
    """The follow-up as the model reads it: with the first question beside it when it
    leans on it, else as written."""
    follow_up = follow_up.strip()
    if not earlier or not earlier[0].strip() or not is_elliptic(follow_up):
        return follow_up
    return f"{follow_up}\n(A follow-up to the earlier question: {earlier[0].strip()})"


def answer_follow_up(
    conn: Connection,
    settings: Settings,
    follow_up: str,
    earlier: Sequence[str],
    *,
    embedder: Embedder | None,
    generator: Generator,
    options: QuestionOptions | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    asked: str | None = None,
) -> FollowUpAnswer:
    """Answer `follow_up`, given the thread's earlier questions (first first)."""
    searched = standalone_question(earlier, follow_up)
    question = asked_as(earlier, follow_up)
    result = answer_question(
        conn,
        settings,
        question,
        options or QuestionOptions(),
        embedder=embedder,
        generator=generator,
        should_stop=should_stop,
        asked=asked,
        search_as=searched,
    )
    return FollowUpAnswer(result, searched, question)
