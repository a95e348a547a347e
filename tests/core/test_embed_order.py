"""The order in which the embedding backlog is drained (issue 22, item 4)."""

from __future__ import annotations

import pytest

from askvault.core.embed_order import (
    FIRST_BATCH_TEXTS,
    BacklogText,
    next_batch_size,
    order_backlog,
    smoothed_rate,
)


def _text(name: str, mtime_ns: int = 0, links: int = 0) -> BacklogText:
    return BacklogText(name, mtime_ns, links)


def test_order_backlog_takes_recent_and_linked_in_turns() -> None:
    texts = [
        _text("old-hub", mtime_ns=1, links=50),
        _text("new", mtime_ns=9, links=0),
        _text("mid-linked", mtime_ns=5, links=10),
        _text("newer", mtime_ns=8, links=0),
        _text("lonely", mtime_ns=2, links=0),
    ]
    # recent: new, newer, mid-linked, lonely, old-hub; linked: old-hub, mid-linked, ...
    assert order_backlog(texts) == ["new", "old-hub", "newer", "mid-linked", "lonely"]


def test_order_backlog_puts_urgent_hashes_first_in_their_order() -> None:
    texts = [_text("a", 3), _text("b", 2), _text("c", 1)]
    assert order_backlog(texts, urgent=["c", "b"]) == ["c", "b", "a"]


def test_order_backlog_ignores_urgent_hashes_already_embedded_or_repeated() -> None:
    texts = [_text("a", 3), _text("b", 2)]
    assert order_backlog(texts, urgent=["gone", "b", "b"]) == ["b", "a"]


def test_order_backlog_holds_every_text_once() -> None:
    texts = [_text(f"t{i}", mtime_ns=i % 7, links=i % 5) for i in range(100)]
    order = order_backlog(texts, urgent=["t3", "t50"])
    assert sorted(order) == sorted(t.text_hash for t in texts)
    assert order[:2] == ["t3", "t50"]


def test_order_backlog_breaks_ties_by_hash() -> None:
    texts = [_text("b"), _text("a"), _text("c")]
    assert order_backlog(texts) == ["a", "b", "c"]
    assert order_backlog(list(reversed(texts))) == ["a", "b", "c"]


def test_order_backlog_of_nothing_is_empty() -> None:
    assert order_backlog([], urgent=["x"]) == []


@pytest.mark.parametrize(
    ("rate", "seconds", "maximum", "expected"),
    [
        (None, 4.0, 32, FIRST_BATCH_TEXTS),  # no rate yet: a short first request
        (None, 4.0, 2, 2),  # ... never above the maximum
        (1.5, 4.0, 32, 6),  # nomic-embed-text on 2 cores: 6 texts, not 32 (21 s)
        (16.0, 4.0, 32, 32),  # a fast model keeps full batches
        (0.05, 4.0, 32, 1),  # slower than a text in the aim: still one text
        (1.5, 0.0, 32, 32),  # 0 seconds: fixed batches of the maximum
        (None, 0.0, 32, 32),
    ],
)
def test_next_batch_size_holds_what_the_embedder_does_in_the_aim(
    rate: float | None, seconds: float, maximum: int, expected: int
) -> None:
    assert next_batch_size(rate, seconds=seconds, maximum=maximum) == expected


def test_smoothed_rate_starts_at_the_first_request_and_follows_later_ones() -> None:
    assert smoothed_rate(None, 4, 2.0) == 2.0
    assert smoothed_rate(2.0, 8, 2.0) == 3.0  # half the latest (4/s), half the figure
    # A request that gives no rate (nothing sent, or no time measured) changes nothing.
    assert smoothed_rate(None, 0, 1.0) is None
    assert smoothed_rate(2.0, 4, 0.0) == 2.0
