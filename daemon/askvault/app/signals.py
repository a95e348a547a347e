"""Signals of the daemon: SIGTERM/SIGINT stop it, SIGHUP asks for a reconcile.

Handlers only set flags; the work happens in the daemon's threads, so a signal
never interrupts a transaction half-way.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
RECONCILE_SIGNAL = signal.SIGHUP


def install_signal_handlers(
    on_stop: Callable[[int], None], on_reconcile: Callable[[], None]
) -> Callable[[], None]:
    """Route TERM/INT to `on_stop(signum)` and HUP to `on_reconcile()`.

    Must run in the main thread. Returns a function restoring the previous handlers.
    """
    previous: dict[int, Any] = {}

    def stop(signum: int, frame: FrameType | None) -> None:
        on_stop(signum)

    def reconcile(signum: int, frame: FrameType | None) -> None:
        on_reconcile()

    for sig in STOP_SIGNALS:
        previous[sig] = signal.signal(sig, stop)
    previous[RECONCILE_SIGNAL] = signal.signal(RECONCILE_SIGNAL, reconcile)

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    return restore
