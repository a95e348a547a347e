"""The inbox worker on a thread of the test, and waiting for what it does."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from askvault.app.clients import OllamaClients
from askvault.app.inbox_loop import InboxWorker
from askvault.services.index_pass import index_vault
from askvault.settings import Settings
from support.settings_factory import settings_for
from support.vault_factory import make_fixture_vault


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


def wait_for_logged(
    caplog: pytest.LogCaptureFixture, text: str, count: int, timeout: float = 10.0
) -> None:
    """Until `count` log records say `text`: retries counted, rather than guessed from a
    sleep (what a slow machine would stretch and a fast one could cut short)."""
    wait_for(lambda: sum(text in r.getMessage() for r in caplog.records) >= count, timeout)


def inbox_vault(root: Path) -> Path:
    """The fixture vault at `root`, with an empty `queries/inbox/`."""
    make_fixture_vault(root)
    (root / "queries" / "inbox").mkdir(parents=True)
    return root


def inbox_settings(vault: Path, state: Path, host: str) -> Settings:
    """Settings over `vault` with a short settle time, the vault indexed."""
    settings = settings_for(vault, state, host, **{"queries.settle_s": 0.2})
    index_vault(settings, OllamaClients(settings))
    return settings


@contextmanager
def worker_starter(settings: Settings, **defaults: Any) -> Iterator[Callable[..., Running]]:
    """`start(**kw)` runs an InboxWorker (short backoff, then `defaults`, then `kw`) on its
    own thread; on exit every worker still running, or one that failed, is halted (and so
    checked for errors). A test may halt one itself first."""
    started: list[Running] = []

    def start(**kw: Any) -> Running:
        running = Running(
            InboxWorker(
                settings, OllamaClients(settings), **{"backoff_first_s": 0.2, **defaults, **kw}
            )
        )
        running.thread.start()
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread.is_alive() or running.errors:
            running.halt()
