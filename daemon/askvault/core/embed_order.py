"""Which texts of the embedding backlog get their vectors first (issue 22, item 4).

A first index with a slow embedder (nomic-embed-text on a CPU: ~2.8 texts/s, hours for
a big vault) is searchable by words at once; its vector side fills in over time. The
texts most likely to be asked about go first: the word hits of a question waiting for its
answer, then the notes edited most recently and the most linked, taken in turns so that
neither kind waits for the whole of the other. And how many go in one request: as many as
the embedder does in a few seconds at its measured rate, since a question waits for the
request in flight before it searches. Pure: the adapter reads the facts and the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class BacklogText:
    """A text waiting for its vector, with what its notes tell about it: the newest
    modification time of a note holding it and the most links pointing to such a note."""

    text_hash: str
    mtime_ns: int
    inbound_links: int


def order_backlog(texts: Sequence[BacklogText], urgent: Iterable[str] = ()) -> list[str]:
    """The hashes of `texts` in the order to embed them.

    First the `urgent` hashes that are in the backlog, in their given order (a pending
    question's word hits, best first); then, in turns, the next most recently edited and
    the next most linked text not yet taken. Ties keep a stable order by hash, so the
    same backlog is always drained the same way."""
    pending = {t.text_hash for t in texts}
    order: list[str] = []
    taken: set[str] = set()
    for text_hash in urgent:
        if text_hash in pending and text_hash not in taken:
            taken.add(text_hash)
            order.append(text_hash)
    recent = sorted(texts, key=lambda t: (-t.mtime_ns, t.text_hash))
    linked = sorted(texts, key=lambda t: (-t.inbound_links, -t.mtime_ns, t.text_hash))
    i = j = 0
    while i < len(recent) or j < len(linked):
        i = _take_next(recent, i, taken, order)
        j = _take_next(linked, j, taken, order)
    return order


def _take_next(ranked: Sequence[BacklogText], at: int, taken: set[str], order: list[str]) -> int:
    """Append the first text of `ranked` from `at` not taken yet; the position after it."""
    while at < len(ranked):
        text_hash = ranked[at].text_hash
        at += 1
        if text_hash not in taken:
            taken.add(text_hash)
            order.append(text_hash)
            break
    return at


# Texts in a drain's first request, before the embedder's rate is known: a slow model's
# first request is as short as its later ones, a fast one's grows at the next.
FIRST_BATCH_TEXTS = 4
# Weight of the latest request's rate in the running figure (the rest: the figure so far).
RATE_SMOOTHING = 0.5


def next_batch_size(texts_per_s: float | None, *, seconds: float, maximum: int) -> int:
    """Texts for the next embedding request: what the embedder does in `seconds` at
    `texts_per_s`, at least 1 and at most `maximum`; FIRST_BATCH_TEXTS (at most
    `maximum`) while no rate is known; `maximum` when `seconds` is 0 (fixed batches).

    A question waits for the request in flight (docs/decisions.md, "A request of a few
    seconds"): at 1.5 texts/s a batch of 32 is 21 s of waiting, 4 s is 6 texts."""
    if seconds <= 0:
        return maximum
    if texts_per_s is None:
        return max(1, min(maximum, FIRST_BATCH_TEXTS))
    return max(1, min(maximum, int(texts_per_s * seconds)))


def smoothed_rate(previous: float | None, texts: int, seconds: float) -> float | None:
    """The running texts-per-second figure after a request of `texts` in `seconds`
    (`previous` until a request with both > 0 gives a rate)."""
    if texts <= 0 or seconds <= 0:
        return previous
    latest = texts / seconds
    if previous is None:
        return latest
    return RATE_SMOOTHING * latest + (1 - RATE_SMOOTHING) * previous
