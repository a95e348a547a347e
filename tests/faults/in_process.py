"""`Daemon.run()` on a thread of the test process, so the socket guard sees every connection."""

from __future__ import annotations

import threading

from askvault.app.daemon import Daemon


class InProcessDaemon:
    """`Daemon.run()` on a thread of the test process (so the socket guard sees it)."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.exit_code: int | None = None
        self.thread = threading.Thread(target=self._run, name="drill-daemon")

    def _run(self) -> None:
        self.exit_code = self.daemon.run()

    def alive(self) -> bool:
        return self.thread.is_alive() and self.daemon.failure is None

    def stop(self) -> int | None:
        self.daemon.stop()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the daemon did not stop"
        return self.exit_code
