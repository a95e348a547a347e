"""Fixtures of the fault drills: a FaultWorld, `askvault run` subprocesses, in-process daemons."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from askvault.adapters.db import BUSY_TIMEOUT_S
from askvault.app.daemon import Daemon, default_workers
from in_process import InProcessDaemon
from invariants import FaultWorld
from support.daemon_process import DaemonProcess, launched_daemons
from support.fake_ollama import FakeOllama

# Small batches, fast settle (whether a question looks finished or not) and debounce: the
# drills stay quick at small sizes.
DRILL_ENV = {
    "ASKVAULT_DAEMON__DEBOUNCE_S": "0.05",
    "ASKVAULT_QUERIES__SETTLE_S": "0.2",
    "ASKVAULT_QUERIES__UNFINISHED_SETTLE_S": "0.2",
    "ASKVAULT_OLLAMA__EMBED_BATCH_SIZE": "8",
    "ASKVAULT_OLLAMA__TIMEOUT_S": "5",
    "ASKVAULT_OLLAMA__REPLY_SILENCE_S": "1",
}


@pytest.fixture
def world(tmp_path: Path, fake_ollama: FakeOllama) -> FaultWorld:
    return FaultWorld(tmp_path, fake_ollama.url).create()


@pytest.fixture
def daemons(world: FaultWorld, fake_ollama: FakeOllama) -> Iterator[Callable[..., DaemonProcess]]:
    """Start `askvault run` subprocesses on the world's vault; killed and reaped at teardown."""
    with launched_daemons(
        world.vault, world.state, fake_ollama.url, world.root, DRILL_ENV
    ) as start:
        yield start


@pytest.fixture
def inproc(world: FaultWorld) -> Iterator[Callable[..., InProcessDaemon]]:
    """Start `Daemon`s in this process with the drill settings (by default waiting until
    each has started); stopped at teardown."""
    started: list[InProcessDaemon] = []

    def start(
        *, busy_timeout_s: float = BUSY_TIMEOUT_S, ready: bool = True, **flags: object
    ) -> InProcessDaemon:
        settings = world.settings(
            **{
                "daemon.debounce_s": 0.05,
                "queries.settle_s": 0.2,
                "queries.unfinished_settle_s": 0.2,
                "ollama.embed_batch_size": 8,
                **flags,
            }
        )
        runner = InProcessDaemon(
            Daemon(
                settings,
                default_workers(settings, busy_timeout_s=busy_timeout_s),
                busy_timeout_s=busy_timeout_s,
            )
        )
        started.append(runner)
        runner.thread.start()
        if ready:
            runner.wait_ready()
        return runner

    try:
        yield start
    finally:
        for runner in started:
            if runner.thread.is_alive():
                runner.stop()
