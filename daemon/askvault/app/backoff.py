"""Retry delays for Ollama outages: 1 s, doubling, capped at 60 s, reset on success."""

from __future__ import annotations

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0


class Backoff:
    """The delay before the next attempt; `failed()` grows it, `succeeded()` resets it."""

    def __init__(self, first_s: float = BACKOFF_FIRST_S, max_s: float = BACKOFF_MAX_S) -> None:
        if first_s <= 0 or max_s < first_s:
            raise ValueError("backoff needs 0 < first_s <= max_s")
        self.first_s = first_s
        self.max_s = max_s
        self.attempts = 0

    def failed(self) -> float:
        """Record a failure; return how long to wait before trying again (seconds)."""
        delay = min(self.max_s, self.first_s * 2 ** self.attempts)
        # Stop growing the exponent once capped, so a long outage never overflows it.
        if delay < self.max_s:
            self.attempts += 1
        return delay

    def succeeded(self) -> None:
        """Record a success: the next failure waits `first_s` again."""
        self.attempts = 0

    @property
    def waiting(self) -> bool:
        """True after a failure not yet followed by a success."""
        return self.attempts > 0
