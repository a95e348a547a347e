"""The leak check of every test (STYLE rule 12): what a test opened and left open.

`LeakTracker.install()` wraps, once per session, the two places tests and askvault open
what must be closed: SQLite connections (`sqlean.connect`, `sqlite3.connect`) and listening
sockets (`socket.socket.listen`: every HTTP server, the fake Ollama's included). Between
`open_window()` and `close_window()` it records what they opened; `close_window()` says
what is still open then, with the threads started in the window that still run.
"""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from typing import Any

import pytest
import sqlean

GRACE_S = 2.0  # a thread told to stop may need a moment to end


class LeakTracker:
    """Connections are held strongly (so one dropped without close() is seen too and closed
    here), listening sockets weakly (a server that still runs holds its own socket)."""

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.grace_s = grace_s
        self.connections: list[tuple[Any, str]] = []
        self.listeners: list[weakref.ref[socket.socket]] = []
        self.threads_before: set[threading.Thread] = set()
        self.recording = False
        self._patcher: pytest.MonkeyPatch | None = None

    def install(self) -> None:
        original_listen = socket.socket.listen
        tracker = self

        def listen(self: socket.socket, *args: Any) -> None:
            if tracker.recording:
                tracker.listeners.append(weakref.ref(self))
            return original_listen(self, *args)

        self._patcher = pytest.MonkeyPatch()
        self._patcher.setattr(sqlean, "connect", self._tracking(sqlean.connect))
        self._patcher.setattr(sqlite3, "connect", self._tracking(sqlite3.connect))
        self._patcher.setattr(socket.socket, "listen", listen)

    def uninstall(self) -> None:
        if self._patcher is not None:
            self._patcher.undo()
            self._patcher = None

    def _tracking(self, connect: Callable[..., Any]) -> Callable[..., Any]:
        def tracked_connect(*args: Any, **kwargs: Any) -> Any:
            conn = connect(*args, **kwargs)
            if self.recording:
                self.connections.append((conn, _caller()))
            return conn

        return tracked_connect

    def open_window(self) -> None:
        self.connections.clear()
        self.listeners.clear()
        self.threads_before = set(threading.enumerate())
        self.recording = True

    def close_window(self) -> list[str]:
        """What the window left open, described; its open connections are closed."""
        self.recording = False
        problems = [
            f"thread {t.name!r} ({type(t).__name__})"
            for t in leaked_threads(self.threads_before, self.grace_s)
        ]
        for ref in self.listeners:
            sock = ref()
            if sock is not None and sock.fileno() != -1:
                problems.append(f"listening socket {sock.getsockname()!r}")
        for conn, where in self.connections:
            if _is_open(conn):
                problems.append(f"SQLite connection opened at {where}")
                try:
                    conn.close()
                except (sqlite3.ProgrammingError, sqlean.ProgrammingError):
                    pass  # made for another thread; reported all the same
        self.connections.clear()
        self.listeners.clear()
        return problems


def leaked_threads(
    before: set[threading.Thread], grace_s: float = GRACE_S
) -> list[threading.Thread]:
    """Threads not in `before` still alive after up to `grace_s`: non-daemon ones, and
    watchdog observers (daemon threads that watch a folder until stopped)."""
    try:
        from watchdog.observers.api import BaseObserver

        observer: tuple[type, ...] = (BaseObserver,)
    except ImportError:
        observer = ()

    def alive() -> list[threading.Thread]:
        return [
            t
            for t in threading.enumerate()
            if t not in before and t.is_alive() and (not t.daemon or isinstance(t, observer))
        ]

    deadline = time.monotonic() + grace_s
    found = alive()
    while found and time.monotonic() < deadline:
        found[0].join(max(0.0, deadline - time.monotonic()))
        found = alive()
    return found


def _is_open(conn: Any) -> bool:
    try:
        conn.in_transaction  # noqa: B018 - raises ProgrammingError once closed
    except (sqlite3.ProgrammingError, sqlean.ProgrammingError):
        return False
    return True


def _caller() -> str:
    """Who connected: the innermost frame outside the wrappers, and the test's own frame."""
    frames = [
        f
        for f in reversed(traceback.extract_stack(limit=40)[:-2])
        if not f.filename.endswith(("support/leaks.py", "adapters/db.py"))
    ]
    if not frames:
        return "?"

    def name(frame: traceback.FrameSummary) -> str:
        short = frame.filename.split("/tests/")[-1].split("/daemon/")[-1]
        return f"{short}:{frame.lineno} ({frame.name})"

    in_tests = next((f for f in frames if "/tests/" in f.filename), None)
    if in_tests is None or in_tests is frames[0]:
        return name(frames[0])
    return f"{name(frames[0])}, from {name(in_tests)}"
