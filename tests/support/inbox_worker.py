"""The inbox worker on a thread of the test, and waiting for what it does."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from askvault.services.inbox import InboxWorker


class Running:
    """An InboxWorker running on its own thread until `halt()`."""

    def __init__(self, worker: InboxWorker) -> None:
        self.worker = worker
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.worker.run(self.stop)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def halt(self) -> None:
        """Stop the worker; it must stop promptly and without an error."""
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the worker must stop promptly"
        assert not self.errors, self.errors


def wait_for(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """The first true value of `check()`, polled for up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")
