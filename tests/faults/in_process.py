"""`Daemon.run()` on a thread of the test process, so the socket guard sees every connection."""

from __future__ import annotations

import threading
import time

from askvault.app.daemon import Daemon

START_TIMEOUT_S = 15.0


class InProcessDaemon:
    """`Daemon.run()` on a thread of the test process (so the socket guard sees it)."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.exit_code: int | None = None
        self.thread = threading.Thread(target=self._run, name="drill-daemon")

    def _run(self) -> None:
        self.exit_code = self.daemon.run()

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Wait until `Daemon.start()` has returned: its index is migrated and the vault
        watched before the drill reads the one or changes the other."""
        deadline = time.monotonic() + timeout_s
        while not self.daemon.started.wait(0.05):
            assert self.thread.is_alive(), f"the daemon ended before it started: {self.exit_code}"
            assert time.monotonic() < deadline, f"the daemon did not start in {timeout_s} s"

    def alive(self) -> bool:
        return self.thread.is_alive() and self.daemon.failure is None

    def stop(self) -> int | None:
        self.daemon.stop()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the daemon did not stop"
        return self.exit_code
