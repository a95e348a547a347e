"""The generate step: the model's whole reply, streamed, with the time it took.

Waits on silence (the Generator's timeouts) for each piece; a reply is read up to its
`ReplyLimits` (tokens, bytes, seconds of writing: core/reply.py) and no further, so a
model that never stops keeps nobody waiting; a piece at a time goes to `on_token`;
`should_stop()` is asked between pieces, and the stream is closed on every way out so
that the server stops generating. `short_reply` reads the short, grammar-constrained
replies of the other turns (the verdict, the follow-up's rewrite) the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True)
class ShortReply:
    """A short structured reply as read, and the limit that stopped it (None: it ended)."""

    text: str
    cut: Cut | None = None


def short_reply(
    generator: Generator,
    messages: Sequence[dict[str, str]],
    *,
    model: str,
    num_ctx: int,
    schema: Mapping[str, Any] | None,
    max_tokens: int,
    limits: ReplyLimits | None,
    should_stop: Callable[[], bool],
    stopped: str,
) -> ShortReply:
    """The reply to `messages` in the JSON `schema` (Ollama's `format`; None: plain text),
    asked for at most `max_tokens` at temperature 0 and read up to `max_tokens` pieces and
    `limits`' bytes and seconds (None: as the pieces come); reading stops at the first limit
    reached and the stream is closed on every way out. Raises OllamaError (the model cannot
    be reached now) and AnswerCancelled(`stopped`) when `should_stop()` turns true."""
    budget = (
        ReplyBudget(ReplyLimits(max_tokens, limits.max_bytes, limits.max_seconds))
        if limits is not None
        else None
    )
    pieces: list[str] = []
    stream = None
    try:
        stream = generator.stream(
            messages,
            model=model,
            num_ctx=num_ctx,
            format=schema,
            options={"num_predict": max_tokens, "temperature": 0},
        )
        for piece in stream:
            if should_stop():
                raise AnswerCancelled(stopped)
            pieces.append(budget.take(piece, time.monotonic()) if budget else piece)
            if budget is not None and budget.cut is not None:
                break  # a reply that never ends is closed here: the model stops writing
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    return ShortReply("".join(pieces), budget.cut if budget is not None else None)
