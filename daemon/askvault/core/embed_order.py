"""Which texts of the embedding backlog get their vectors first (issue 22, item 4).

A first index with a slow embedder (nomic-embed-text on a CPU: ~2.8 texts/s, hours for
a big vault) is searchable by words at once; its vector side fills in over time. The
texts most likely to be asked about go first: the word hits of a question waiting for its
answer, then the notes edited most recently and the most linked, taken in turns so that
neither kind waits for the whole of the other. Pure: the adapter reads the facts.
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
