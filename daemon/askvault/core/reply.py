"""A model reply is untrusted input: how much of it askvault reads (DESIGN §3).

Pure. `ReplyBudget` counts a streamed reply against its `ReplyLimits` (tokens, bytes,
seconds of writing): a model that never stops, or a server that ignores `num_predict`,
keeps nobody waiting; what arrived is checked and the note says the reply was cut. It is
handed the time, so it stays pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# -- the reply's limits ----------------------------------------------------------------

Cut = Literal["tokens", "bytes", "time"]


@dataclass(frozen=True)
class ReplyLimits:
    """How much of a reply is read: pieces (Ollama streams one token a piece), UTF-8
    bytes, and seconds of writing (from the first piece: the wait for it, the model
    reading the prompt, is bounded by the silence timeout of the client)."""

    max_tokens: int
    max_bytes: int
    max_seconds: float


class ReplyBudget:
    """Counts a streamed reply against its `ReplyLimits`; `cut` says which one stopped it.

    `take(piece, now)` returns what of the piece is kept: all of it while within the
    limits; at most the bytes left (cut at a character); nothing for a piece past the
    token cap or arriving after the time limit. Once `cut` is set, reading stops.
    """

    def __init__(self, limits: ReplyLimits) -> None:
        self.limits = limits
        self.first: float | None = None
        self.pieces = 0
        self.bytes = 0
        self.cut: Cut | None = None

    def take(self, piece: str, now: float) -> str:
        """The part of `piece` within the limits (see the class)."""
        if self.cut is not None:
            return ""
        if self.first is None:
            self.first = now
        if now - self.first > self.limits.max_seconds:
            self.cut = "time"
            return ""
        self.pieces += 1
        if self.pieces > self.limits.max_tokens:
            self.cut = "tokens"
            return ""
        size = len(piece.encode("utf-8", "surrogatepass"))
        if self.bytes + size > self.limits.max_bytes:
            piece = _utf8_prefix(piece, self.limits.max_bytes - self.bytes)
            size = len(piece.encode("utf-8", "surrogatepass"))
            self.cut = "bytes"
        self.bytes += size
        return piece


def _utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of `text` of at most `max_bytes` UTF-8 bytes."""
    return text.encode("utf-8", "surrogatepass")[: max(0, max_bytes)].decode("utf-8", "ignore")


# The setting behind each limit, named in the note of a reply cut at it.
CUT_SETTINGS: dict[Cut, str] = {
    "tokens": "ollama.num_predict",
    "bytes": "ollama.reply_max_bytes",
    "time": "ollama.reply_max_s",
}


def cut_note(cut: Cut, limits: ReplyLimits) -> str:
    """The caveat of a reply cut at one of its limits."""
    what = {
        "tokens": f"{limits.max_tokens} tokens",
        "bytes": f"{limits.max_bytes:,} bytes",
        "time": f"{limits.max_seconds:g} s of writing",
    }[cut]
    return (
        f"The model's reply was cut at {what} (`{CUT_SETTINGS[cut]}`): what arrived was "
        "checked and is shown, the rest was never read."
    )
