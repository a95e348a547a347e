"""Retry delays for outages and busy writers: 1 s, doubling, capped at 60 s, reset on success.

The one backoff policy of askvault (pure: the caller keeps the clock): the daemon's retried
reconciles, the embedding thread, the daemon's connections, the inbox's busy index and each
question put off all count their delays here.
"""

from __future__ import annotations

import math

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0


def delay_after(
    failures: int, first_s: float = BACKOFF_FIRST_S, max_s: float = BACKOFF_MAX_S
) -> float:
    """The wait after `failures` failures in a row (1 or more): `first_s`, doubling, capped
    at `max_s`. The exponent stops at the cap, so a long outage never overflows it."""
    if failures < 1 or first_s <= 0 or max_s < first_s:
        raise ValueError("backoff needs failures >= 1 and 0 < first_s <= max_s")
    doublings = min(failures - 1, math.ceil(math.log2(max_s / first_s)))
    return min(max_s, first_s * 2**doublings)


class Backoff:
    """The delay before the next attempt; `failed()` grows it, `succeeded()` resets it."""

    def __init__(self, first_s: float = BACKOFF_FIRST_S, max_s: float = BACKOFF_MAX_S) -> None:
        if first_s <= 0 or max_s < first_s:
            raise ValueError("backoff needs 0 < first_s <= max_s")
        self.first_s = first_s
        self.max_s = max_s
        self.failures = 0

    def failed(self) -> float:
        """Record a failure; return how long to wait before trying again (seconds)."""
        self.failures += 1
        return delay_after(self.failures, self.first_s, self.max_s)

    def succeeded(self) -> None:
        """Record a success: the next failure waits `first_s` again."""
        self.failures = 0

    @property
    def waiting(self) -> bool:
        """True after a failure not yet followed by a success."""
        return self.failures > 0
