"""Answering one question: retrieve -> prompt -> generate -> check -> decide -> compose.

`answer_question` (pipeline.py) is the entry; each step is a module of this package
with a small result of its own: retrieval (the evidence pack, the pages that can be
read), generation (the streamed reply), checking (links resolved, claims judged), and
sources (the ledger's raw files). The prompt (core/prompt.py), the decision
(core/decision.py) and the note's parts (core/answer_parts.py) are pure.
"""

from askvault.services.answer.followup import (
    FollowUpAnswer,
    ThreadNote,
    answer_follow_up,
    read_thread,
)
from askvault.services.answer.pipeline import answer_question, iso_now
from askvault.services.answer.result import AnswerResult
from askvault.services.answer.sources import resolve_raw_sources, review_candidate_slugs

__all__ = [
    "AnswerResult",
    "FollowUpAnswer",
    "answer_follow_up",
    "answer_question",
    "iso_now",
    "resolve_raw_sources",
    "read_thread",
    "ThreadNote",
    "review_candidate_slugs",
]
