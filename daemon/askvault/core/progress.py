"""Honest progress: a rate from a moving window, and an ETA only once that rate means something.

Pure: the caller passes the clock's readings in. The window starts at the first step of real
progress, so the time spent before the first item (listing a vault, starting a process pool,
loading a model) never turns into a five-hour ETA, and a jump (every unchanged note counted
at once) does not promise a rate the remaining work will not keep.
"""

from __future__ import annotations

from collections import deque

WINDOW_S = 10.0  # the rate of the last ten seconds: it follows a change of pace quickly
MIN_SPAN_S = 1.0  # below this the rate is noise; no ETA is shown
MIN_STEPS = 2  # and at least this many steps of progress within the window


class RateWindow:
    """Items per second over the last `window_s` seconds of updates."""

    def __init__(self, window_s: float = WINDOW_S, min_span_s: float = MIN_SPAN_S) -> None:
        self.window_s = window_s
        self.min_span_s = min_span_s
        self._samples: deque[tuple[float, int]] = deque()
        self._last_done: int | None = None

    def add(self, now: float, done: int) -> None:
        """Record that `done` items were complete at time `now` (seconds, monotonic)."""
        if self._last_done is None:
            # The first reading is the baseline: work counted at once (unchanged notes) or
            # nothing yet. The window opens at the first step after it.
            self._last_done = done
            return
        if done <= self._last_done:
            return
        # The first step opens the window at its own time and count: how long the work
        # before it took is unknown (it includes the start-up), so it is not a rate.
        self._last_done = done
        self._samples.append((now, done))
        while len(self._samples) > 2 and self._samples[1][0] < now - self.window_s:
            self._samples.popleft()

    def rate(self) -> float | None:
        """Items per second, or None while the window is too short to say."""
        if len(self._samples) < MIN_STEPS:
            return None
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        if t1 - t0 < self.min_span_s or d1 <= d0:
            return None
        return (d1 - d0) / (t1 - t0)

    def eta_s(self, done: int, total: int) -> float | None:
        """Seconds left for `total - done` items at the window's rate, or None."""
        rate = self.rate()
        if rate is None or total <= 0:
            return None
        return max(0.0, (total - done) / rate)


def format_duration(seconds: float) -> str:
    """`0.4 s`, `23 s`, `4 min 05 s`, `2 h 03 min`."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
