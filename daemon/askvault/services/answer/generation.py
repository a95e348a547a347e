"""The generate step: the model's whole reply, streamed, with the time it took.

Waits on silence, not on total time (the Generator's timeouts); a piece at a time goes
to `on_token`; `should_stop()` is asked between pieces, and the stream is closed on every
way out so that the server stops generating.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from askvault.core.prompt import PromptPlan
from askvault.errors import AnswerCancelled
from askvault.records import Generator

TokenSink = Callable[[str], None]


@dataclass(frozen=True)
class Generation:
    """The reply, and the wait for its first piece (the model reading the prompt) and the
    rest (writing)."""

    reply: str
    timings: dict[str, float] = field(default_factory=dict)
    counted_tokens: int | None = None  # the prompt tokens the model counted, if it said


def generate(
    generator: Generator,
    plan: PromptPlan,
    *,
    model: str,
    num_ctx: int,
    on_token: TokenSink | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    timings: dict[str, float] | None = None,
) -> Generation:
    """The whole reply to `plan`; raises OllamaError (Ollama away, the stream died) and
    AnswerCancelled (`should_stop()` turned true). `timings` gets the stages measured so
    far, even when it raises."""
    timings = {} if timings is None else timings
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
            pieces.append(piece)
            if on_token is not None:
                on_token(piece)
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
    return Generation("".join(pieces).strip(), timings, counted)
