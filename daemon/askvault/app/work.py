"""The indexing thread's inbox: paths, dropped folders and reconcile requests, merged.

Producers (the watcher, the scheduler, SIGHUP) add; the one indexing thread takes
everything pending at once, so work that piled up during a long step is done
in one go and a requested reconcile absorbs the paths queued beside it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class IndexWork:
    """One step for the indexing thread. `reconcile` names why a full pass is due, if it is."""

    paths: list[str] = field(default_factory=list)
    dropped_folders: list[str] = field(default_factory=list)
    reconcile: str | None = None


class WorkQueue:
    """Thread-safe accumulator of IndexWork."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._paths: set[str] = set()
        self._folders: set[str] = set()
        self._reconcile: str | None = None

    def add_paths(self, paths: Sequence[str], dropped_folders: Sequence[str] = ()) -> None:
        """Queue note paths to (re)index and folders whose notes are gone."""
        if not paths and not dropped_folders:
            return
        with self._lock:
            self._paths.update(paths)
            self._folders.update(dropped_folders)
        self._ready.set()

    def request_reconcile(self, reason: str) -> None:
        """Queue a full reconcile; requests made before it starts are merged into one."""
        with self._lock:
            if self._reconcile is None:
                self._reconcile = reason
        self._ready.set()

    def take(self, timeout_s: float) -> IndexWork | None:
        """Everything pending (waiting up to `timeout_s` for something), or None."""
        if not self._ready.wait(timeout_s):
            return None
        with self._lock:
            self._ready.clear()
            if not self._paths and not self._folders and self._reconcile is None:
                return None
            work = IndexWork(sorted(self._paths), sorted(self._folders), self._reconcile)
            self._paths.clear()
            self._folders.clear()
            self._reconcile = None
            return work
