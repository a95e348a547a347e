"""The generate step: the model's whole reply, streamed, with the time it took.

Waits on silence (the Generator's timeouts) for each piece; a reply is read up to its
`ReplyLimits` (tokens, bytes, seconds of writing: core/reply.py) and no further, so a
model that never stops keeps nobody waiting; a piece at a time goes to `on_token`;
`should_stop()` is asked between pieces, and the stream is closed on every way out so
that the server stops generating.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from askvault.core.prompt import PromptPlan
from askvault.core.reply import Cut, ReplyBudget, ReplyLimits
from askvault.errors import AnswerCancelled
from askvault.records import Generator
from askvault.settings import Settings

TokenSink = Callable[[str], None]


@dataclass(frozen=True)
class Generation:
    """The reply, and the wait for its first piece (the model reading the prompt) and the
    rest (writing)."""

    reply: str
    timings: dict[str, float] = field(default_factory=dict)
    counted_tokens: int | None = None  # the prompt tokens the model counted, if it said
    cut: Cut | None = None  # the limit that stopped the reply (None: it ended by itself)
    limits: ReplyLimits | None = None  # what it was read up to


def reply_limits(settings: Settings) -> ReplyLimits:
    """The limits a reply is read to: `ollama.num_predict` (asked of Ollama too),
    `ollama.reply_max_bytes`, `ollama.reply_max_s`."""
    ollama = settings.ollama
    return ReplyLimits(ollama.num_predict, ollama.reply_max_bytes, ollama.reply_max_s)


def generate(
    generator: Generator,
    plan: PromptPlan,
    *,
    model: str,
    num_ctx: int,
    on_token: TokenSink | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    timings: dict[str, float] | None = None,
    limits: ReplyLimits | None = None,
) -> Generation:
    """The reply to `plan`, up to `limits` (None: the whole of it); raises OllamaError
    (Ollama away, the stream died) and AnswerCancelled (`should_stop()` turned true).
    `timings` gets the stages measured so far, even when it raises."""
    timings = {} if timings is None else timings
    budget = ReplyBudget(limits) if limits is not None else None
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
            if budget is not None:
                piece = budget.take(piece, time.monotonic())
            pieces.append(piece)
            if on_token is not None and piece:
                on_token(piece)
            if budget is not None and budget.cut is not None:
                break  # the stream is closed below: the model stops writing
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
    usage = getattr(generator, "usage", None)
    counted = getattr(usage, "prompt_tokens", None)
    cut = budget.cut if budget is not None else None
    if cut is None and getattr(usage, "done_reason", None) == "length":
        cut = "tokens"  # Ollama itself stopped at num_predict
    return Generation("".join(pieces).strip(), timings, counted, cut, limits)
