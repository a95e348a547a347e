"""A model reply is untrusted input: what of it askvault reads and publishes (DESIGN §3).

Pure. `sanitize_reply` runs once, where the reply arrives in the answer path and before
anything checks it, so the checker judges the text that is published:
- control characters (C0 but newline and tab, DEL, C1) are removed, terminal escape
  sequences whole; carriage returns and Unicode line separators become newlines (the
  lines askvault quotes are the lines Obsidian sees), tabs spaces;
- nothing in it loads, links or passes for askvault's own text (core/inert.py): images,
  HTML and web addresses as code, headings, callouts, `---` blocks and unsure fences
  escaped, askvault's markers as code, a code block left open closed; so the note holds
  exactly one report and one set of askvault's callouts.
Nothing is dropped but control characters: what the model wrote stays readable.

`ReplyBudget` counts a streamed reply against its `ReplyLimits` (tokens, bytes, seconds
of writing); it is handed the time, so it stays pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from askvault.core.controls import strip_counted
from askvault.core.inert import Change, count, escape_blocks, escape_fences, neutralise_inline

# -- the sanitised reply -------------------------------------------------------------

CHANGES: tuple[Change, ...] = ("remote", "markup", "links", "imitations", "fence", "controls")
_CHANGE_NOTES: dict[Change, str] = {
    "remote": (
        "The model's reply held {n} image(s), HTML element(s) or embed(s) that would load "
        "content from outside the vault when this note is opened (a note the model read may "
        "have asked for it): shown as code, nothing is loaded."
    ),
    "markup": "{n} image(s) or HTML element(s) of the model's reply are shown as code.",
    "links": "{n} web address(es) of the model's reply are shown as code, not as links.",
    "imitations": (
        "{n} heading(s), callout(s) or askvault marker(s) written by the model are escaped: "
        "the report and the callouts of this note are askvault's own."
    ),
    "fence": (
        "{n} code fence(s) of the model's reply left a block open or could be read two "
        "ways: askvault closed or escaped them."
    ),
    "controls": "askvault removed {n} control character(s) from the model's reply.",
}


@dataclass(frozen=True)
class SafeReply:
    """The reply as published, and what was changed in it (kind, how many), in the order
    of `CHANGES`."""

    text: str
    changes: tuple[tuple[Change, int], ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        """One sentence per kind of change, for the answer note's caveats."""
        return tuple(_CHANGE_NOTES[kind].format(n=n) for kind, n in self.changes)


def sanitize_reply(text: str) -> SafeReply:
    """The reply as askvault publishes it (see the module docstring), and what changed."""
    counts: dict[Change, int] = {}
    text, removed = strip_counted(text)
    count(counts, "controls", removed)
    # Quoted in a callout, a tab would stand for other columns: code would not stay code.
    text = text.expandtabs(4) if "\t" in text else text
    text, fences = escape_fences(text, counts)
    text = neutralise_inline(text, counts)
    # After: a link made text may have put its label at the start of a line.
    text = escape_blocks(text, fences.rows, counts)
    closer = fences.closer
    if closer is not None:
        text = text.rstrip("\n") + "\n" + closer
        count(counts, "fence", 1)
    return SafeReply(text, tuple((kind, counts[kind]) for kind in CHANGES if kind in counts))


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
