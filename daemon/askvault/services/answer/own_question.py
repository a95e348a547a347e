"""The own-question step: which question does the answer answer, and is it the user's?

One short request per answer that would be published (core/own_question.py builds it and
reads the reply: one line, a question), then one embedding request for the two
questions. A model or embedder that cannot be reached now, an unreadable
reply, or an embedding model with no measured cut-off leave the decision as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from askvault.core.own_question import (
    OWN_QUESTION_MAX_TOKENS,
    cosine,
    own_question_messages,
    read_own_question,
)
from askvault.core.reply import ReplyLimits
from askvault.errors import OllamaError
from askvault.records import Embedder, Generator
from askvault.services.answer.generation import short_reply


@dataclass(frozen=True)
class OwnQuestion:
    """The question the model says the answer answers (None: not asked, or unreadable),
    its cosine with the user's question and the cut-off it was held to, why it could not
    be asked, and how long it took."""

    question: str | None = None
    cosine: float | None = None
    cutoff: float | None = None
    error: str = ""
    seconds: float = 0.0
    # Its cosine with the closest of a follow-up's earlier questions (None: a first one).
    earlier_cosine: float | None = None

    @property
    def elsewhere(self) -> bool:
        """True when the answer's own question is another than the user's: its cosine
        with the user's is below the cut-off."""
        return self.cosine is not None and self.cutoff is not None and self.cosine < self.cutoff

    @property
    def answers_earlier(self) -> bool:
        """True when the answer's own question is closer to one of the thread's earlier
        questions than to the follow-up asked: the reply answers an earlier turn again."""
        return (
            self.cosine is not None
            and self.earlier_cosine is not None
            and self.earlier_cosine > self.cosine
        )


def ask_own_question(
    generator: Generator,
    embedder: Embedder,
    question: str,
    text: str,
    *,
    cutoff: float,
    model: str,
    num_ctx: int,
    should_stop: Callable[[], bool] = lambda: False,
    limits: ReplyLimits | None = None,
    earlier: Sequence[str] = (),
) -> OwnQuestion:
    """Ask which question `text` (the answer, `own_question.answer_text`) answers, and how
    close it is to `question` by the embedder (see the module doc); for a follow-up, also
    how close it is to the closest of the thread's `earlier` questions (one request)."""
    if not text:
        return OwnQuestion()
    started = time.monotonic()
    try:
        read = short_reply(
            generator,
            own_question_messages(text),
            model=model,
            num_ctx=num_ctx,
            schema=None,
            max_tokens=OWN_QUESTION_MAX_TOKENS,
            limits=limits,
            should_stop=should_stop,
            stopped="stopped while the answer was being checked",
        )
        own = read_own_question(read.text)
        if own is None:
            return OwnQuestion(
                error="no question could be read from the model's reply",
                seconds=time.monotonic() - started,
            )
        before = [q for q in earlier if q.strip()]
        vectors = embedder.embed_documents([question, own, *before])
    except OllamaError as exc:
        return OwnQuestion(error=exc.message, seconds=time.monotonic() - started)
    if len(vectors) != 2 + len(before):
        return OwnQuestion(own, None, cutoff, "", time.monotonic() - started)
    value = cosine(vectors[0], vectors[1])
    near = [c for c in (cosine(v, vectors[1]) for v in vectors[2:]) if c is not None]
    closest = max(near) if near else None
    return OwnQuestion(own, value, cutoff, "", time.monotonic() - started, closest)
