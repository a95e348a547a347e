"""short_reply: the verdict's and the rewrite's reading of a short structured reply."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from askvault.core.followup import REWRITE_MAX_TOKENS
from askvault.core.reply import ReplyLimits
from askvault.errors import AnswerCancelled, OllamaUnavailable
from askvault.services.answer.followup import rewrite_follow_up
from askvault.services.answer.generation import short_reply

LIMITS = ReplyLimits(max_tokens=400, max_bytes=32_768, max_seconds=60.0)
QUESTION = '{"question": "What does an embed of a block show?"}'


class Scripted:
    """A Generator whose stream yields `pieces` and then, with `forever`, spaces without end;
    it records the requests and whether each stream was closed."""

    def __init__(self, pieces: Sequence[str], *, forever: bool = False, fail: bool = False):
        self.pieces = list(pieces)
        self.forever = forever
        self.fail = fail
        self.requests: list[dict[str, Any]] = []
        self.closed = 0
        self.read = 0

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        model: str,
        num_ctx: int,
        format: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Iterator[str]:
        if self.fail:
            raise OllamaUnavailable("Ollama is not running", "start it")
        self.requests.append({"format": format, "options": options})
        return self._pieces()

    def _pieces(self) -> Iterator[str]:
        try:
            tail = itertools.repeat(" ") if self.forever else iter(())
            for piece in itertools.chain(self.pieces, tail):
                self.read += 1
                yield piece
        finally:
            self.closed += 1

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass


def _read(generator: Scripted, **kwargs: Any) -> Any:
    args: dict[str, Any] = {
        "model": "m",
        "num_ctx": 2048,
        "schema": {"type": "object"},
        "max_tokens": 8,
        "limits": LIMITS,
        "should_stop": lambda: False,
        "stopped": "stopped while testing",
    }
    return short_reply(generator, [{"role": "user", "content": "q"}], **{**args, **kwargs})


def test_a_reply_that_ends_is_read_whole_and_asked_at_temperature_0_with_its_schema() -> None:
    generator = Scripted(['{"verdict"', ': "yes"}'])
    read = _read(generator)
    assert (read.text, read.cut) == ('{"verdict": "yes"}', None)
    assert generator.requests == [
        {"format": {"type": "object"}, "options": {"num_predict": 8, "temperature": 0}}
    ]
    assert generator.closed == 1


def test_a_reply_that_never_ends_is_cut_at_its_token_cap_and_its_stream_closed() -> None:
    generator = Scripted(['{"verdict": "yes"}'], forever=True)
    read = _read(generator)
    assert read.cut == "tokens" and read.text == '{"verdict": "yes"}' + " " * 7
    assert generator.read == 9 and generator.closed == 1  # the 9th piece is past the cap


def test_without_limits_the_pieces_are_read_as_they_come() -> None:
    generator = Scripted(["a"] * 20)
    read = _read(generator, limits=None)
    assert (read.text, read.cut) == ("a" * 20, None)


def test_a_reply_over_the_byte_cap_is_cut_at_a_character() -> None:
    read = _read(Scripted(["é" * 10]), limits=ReplyLimits(400, 5, 60.0))
    assert (read.text, read.cut) == ("éé", "bytes")


def test_a_stop_cancels_and_closes_the_stream() -> None:
    generator = Scripted(["a", "b"])
    with pytest.raises(AnswerCancelled, match="stopped while testing"):
        _read(generator, should_stop=lambda: True)
    assert generator.closed == 1


def test_a_model_that_cannot_be_reached_raises_for_the_caller_to_decide() -> None:
    with pytest.raises(OllamaUnavailable):
        _read(Scripted([], fail=True))


def _rewrite(generator: Scripted) -> str | None:
    return rewrite_follow_up(
        generator,
        ["What does an embed show?"],
        "and a block?",
        model="m",
        num_ctx=2048,
        limits=LIMITS,
    )


def test_a_rewrite_that_parses_but_never_ends_is_no_question() -> None:
    """The JSON is whole before the cap; the spaces after it run past REWRITE_MAX_TOKENS."""
    generator = Scripted([QUESTION], forever=True)
    assert _rewrite(generator) is None
    assert generator.read == REWRITE_MAX_TOKENS + 1 and generator.closed == 1
    assert _rewrite(Scripted([QUESTION])) == "What does an embed of a block show?"


def test_a_rewrite_asked_of_a_model_that_is_down_is_no_question() -> None:
    assert _rewrite(Scripted([], fail=True)) is None
