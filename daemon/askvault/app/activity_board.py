"""What the daemon's threads are doing, gathered for `askvault status`: the indexing thread
reports a reconcile's progress, the embedding thread its rate; each report replaces the
activity file (adapters/activity.py), at most once a second per kind, and always when a
reconcile starts or ends."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from askvault.adapters.activity import (
    Activity,
    EmbedActivity,
    ScanActivity,
    remove_activity,
    write_activity,
)

WRITE_EVERY_S = 1.0


class ActivityBoard:
    """Thread-safe; `path` None keeps it in memory only (a test, an embedded daemon)."""

    def __init__(
        self,
        path: Path | None,
        *,
        pid: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self._activity = Activity(pid=os.getpid() if pid is None else pid)
        self._written_at = {"scan": -1e18, "embedding": -1e18}

    @property
    def activity(self) -> Activity:
        with self._lock:
            return self._activity

    def scanning(self, reason: str, done: int, total: int) -> None:
        """A reconcile for `reason` has been through `done` of `total` notes."""
        with self._lock:
            now = self.clock()
            scan = self._activity.scan
            started = scan.started_at if scan and scan.reason == reason else now
            self._activity = replace(
                self._activity, scan=ScanActivity(reason, done, total, started)
            )
            self._write_locked("scan", force=scan is None or done >= total)

    def scan_done(self) -> None:
        with self._lock:
            if self._activity.scan is not None:
                self._activity = replace(self._activity, scan=None)
                self._write_locked("scan", force=True)

    def embedding(self, model: str, texts: int, seconds: float) -> None:
        """The drain under way has embedded `texts` texts in `seconds`."""
        with self._lock:
            self._activity = replace(
                self._activity,
                embedding=EmbedActivity(model, texts, seconds, self.clock()),
            )
            self._write_locked("embedding")

    def embedding_done(self) -> None:
        with self._lock:
            if self._activity.embedding is not None:
                self._activity = replace(self._activity, embedding=None)
                self._write_locked("embedding", force=True)

    def close(self) -> None:
        """The daemon stops: nothing is under way any more."""
        if self.path is not None:
            remove_activity(self.path)

    def _write_locked(self, kind: str, *, force: bool = False) -> None:
        now = self.clock()
        if self.path is None or (not force and now - self._written_at[kind] < WRITE_EVERY_S):
            return
        self._written_at[kind] = now
        write_activity(self.path, self._activity)
