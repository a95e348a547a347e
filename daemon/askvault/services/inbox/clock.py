"""The inbox's clock: every time it reads comes from one injected `Clock`.

The daemon runs on `SYSTEM_CLOCK`; the tests and the replayed typing sessions hand in a
clock they move by hand, so that settling, backoff and the problem note's rate limit are
driven without a thread and without sleeping.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """The two times the inbox reads."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (delays, quiet time, backoff)."""

    def time(self) -> float:
        """Seconds since the epoch (compared with file times, written into notes)."""


class SystemClock:
    """The real clocks of the machine."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()


SYSTEM_CLOCK = SystemClock()
