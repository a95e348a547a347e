"""The inbox driven by the test: an `Inbox` stepped on the test's thread, its clock moved by
hand (no thread, no sleeping), as the daemon's inbox thread would step it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.app.inbox_loop import POLL_S
from askvault.errors import DiskFull, IndexBusy
from askvault.services.inbox.inbox import Inbox, Step
from askvault.settings import Settings
from support.index_templates import index_copy
from support.settings_factory import settings_for
from support.vault_factory import make_fixture_vault

# A driver gives up on a condition after this many steps that moved no time (a loop).
MAX_STEPS = 5_000


class FakeClock:
    """A clock that starts at the real time and moves only when told to."""

    def __init__(self) -> None:
        self._monotonic = 1_000.0
        self._wall = time.time()

    def monotonic(self) -> float:
        return self._monotonic

    def time(self) -> float:
        return self._wall

    def advance(self, seconds: float) -> None:
        self._monotonic += seconds
        self._wall += seconds


class InboxDriver:
    """One `Inbox` over `settings`, with its own connection, started (`prepare`) and
    stepped by the test; `restart()` is a new daemon on the same index."""

    def __init__(self, settings: Settings, clock: FakeClock | None = None, **inbox_kw: Any) -> None:
        self.settings = settings
        self.clock = clock or FakeClock()
        self.inbox_kw = {"backoff_first_s": 0.2, **inbox_kw}
        self.stopping = False
        self.steps: list[Step] = []
        self.conn = connect(settings.db_path)
        self.inbox = self._start()

    def _start(self) -> Inbox:
        inbox = Inbox(
            self.settings, OllamaClients(self.settings), clock=self.clock, **self.inbox_kw
        )
        inbox.prepare(self.conn)
        return inbox

    def step(self) -> Step:
        """One pass of the inbox thread; the clock moves on by the wait that follows it
        (none after a question: the thread goes on at once)."""
        try:
            step = self.inbox.step(self.conn, lambda: self.stopping)
        except (IndexBusy, DiskFull):
            step = "idle"
        self.steps.append(step)
        if step not in ("question", "follow-up"):
            self.clock.advance(POLL_S)
        return step

    def run_until(self, check: Callable[[], Any], within_s: float = 60.0) -> Any:
        """Step until `check()` is true (its value), or fail after `within_s` seconds of
        the inbox's clock."""
        deadline = self.clock.monotonic() + within_s
        for _ in range(MAX_STEPS):
            value = check()
            if value:
                return value
            if self.clock.monotonic() > deadline:
                break
            self.step()
        raise AssertionError(f"condition not met within {within_s} s of the inbox's clock")

    def run_for(self, seconds: float) -> None:
        """Step for `seconds` of the inbox's clock."""
        until = self.clock.monotonic() + seconds
        for _ in range(MAX_STEPS):
            if self.clock.monotonic() >= until:
                return
            self.step()
        raise AssertionError("the inbox kept answering without its clock moving")

    def notice(self, paths: list[str]) -> None:
        """What the watcher reports of `queries/`."""
        self.inbox.notice(paths)

    def on_notes_changed(self, changed: list[str], deleted: list[str]) -> None:
        """What the indexing thread reports."""
        self.inbox.queue_changes(changed, deleted)

    def restart(self) -> None:
        """The daemon stopped and started again: a new inbox (nothing kept in memory) on
        a new connection, started like the first."""
        self.conn.close()
        self.conn = connect(self.settings.db_path)
        self.inbox = self._start()

    def close(self) -> None:
        self.conn.close()


def inbox_vault(root: Path) -> Path:
    """The fixture vault at `root`, with an empty `queries/inbox/`."""
    make_fixture_vault(root)
    (root / "queries" / "inbox").mkdir(parents=True)
    return root


def inbox_settings(vault: Path, state: Path, host: str, **flags: Any) -> Settings:
    """Settings over `vault` with short settle times (whether a question looks finished
    or not: these tests are not about typing), then `flags`; the vault indexed (from a
    template: support/index_templates.py)."""
    quick = {"queries.settle_s": 0.2, "queries.unfinished_settle_s": 0.2}
    settings = settings_for(vault, state, host, **{**quick, **flags})
    index_copy(settings)
    return settings


@contextmanager
def driver_starter(settings: Settings, **defaults: Any) -> Iterator[Callable[..., InboxDriver]]:
    """`start(**kw)` starts an InboxDriver (a short backoff, then `defaults`, then `kw`);
    every driver started is closed on exit."""
    started: list[InboxDriver] = []

    def start(**kw: Any) -> InboxDriver:
        driver = InboxDriver(settings, **{**defaults, **kw})
        started.append(driver)
        return driver

    try:
        yield start
    finally:
        for driver in started:
            driver.close()
