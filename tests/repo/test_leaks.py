"""The leak check every test runs under (tests/support/leaks.py, STYLE rule 12)."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest
import sqlean

from askvault.adapters.db import connect
from support.leaks import LeakTracker, leaked_threads


def _window(tmp_path: Path) -> LeakTracker:
    tracker = LeakTracker(grace_s=0.2)
    tracker.install()
    tracker.open_window()
    return tracker


def test_a_connection_left_open_is_reported_with_who_opened_it_and_closed(
    tmp_path: Path,
) -> None:
    tracker = _window(tmp_path)
    try:
        kept = connect(tmp_path / "kept.sqlite")
        connect(tmp_path / "dropped.sqlite").execute("SELECT 1")  # no close(): seen too
        closed = connect(tmp_path / "closed.sqlite")
        closed.close()
        problems = tracker.close_window()
    finally:
        tracker.uninstall()
    assert len(problems) == 2
    assert all("SQLite connection opened at" in p and "test_leaks.py" in p for p in problems)
    with pytest.raises(sqlean.ProgrammingError, match="closed"):
        kept.execute("SELECT 1")  # the tracker closed what it reported


def test_a_running_server_and_a_thread_left_behind_are_reported(tmp_path: Path) -> None:
    tracker = _window(tmp_path)
    stop = threading.Event()
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    worker = threading.Thread(target=stop.wait, name="left-behind")
    worker.start()
    try:
        problems = tracker.close_window()
    finally:
        tracker.uninstall()
        server.server_close()
        stop.set()
        worker.join()
    assert any("listening socket ('127.0.0.1'" in p for p in problems)
    assert any("thread 'left-behind'" in p for p in problems)


def test_a_thread_that_ends_within_the_grace_and_daemon_threads_are_not_leaks() -> None:
    before = set(threading.enumerate())
    ending = threading.Thread(target=threading.Event().wait, args=(0.1,))
    background = threading.Thread(target=threading.Event().wait, args=(0.5,), daemon=True)
    ending.start()
    background.start()
    assert leaked_threads(before, grace_s=1.0) == []
    background.join()
