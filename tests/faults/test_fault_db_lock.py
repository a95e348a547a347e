"""Drill 7: the index locked by another writer for 10 s; a long-lived reader during indexing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import pytest

from askvault.adapters.db import connect
from drill_vault import write_notes
from in_process import InProcessDaemon
from invariants import FaultWorld, check_invariants, index_state, wait_converged, wait_until
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults

LOCK_HOLD_S = 10.0


def _wal_size(world: FaultWorld) -> int:
    wal = world.db_path.with_name(world.db_path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_a_writer_holding_the_index_for_10_s_delays_but_loses_nothing(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
) -> None:
    write_notes(world.vault, 5, folder="before")
    daemon = inproc()
    wait_converged(world)
    other = connect(world.db_path)
    try:
        other.execute("BEGIN IMMEDIATE")
        write_notes(world.vault, 50, folder="during the lock")
        time.sleep(LOCK_HOLD_S)
        assert daemon.alive(), "a locked index stopped the daemon"
        other.execute("ROLLBACK")
    finally:
        other.close()
    world.freeze()
    check_invariants(world, alive=daemon.alive, fake=fake_ollama)
    assert len(index_state(world.db_path)[0]) == 55
    assert daemon.stop() == 0


def test_wal_growth_under_a_long_lived_reader_is_bounded_after_it_ends(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
) -> None:
    daemon = inproc()
    wait_converged(world)
    reader = connect(world.db_path, readonly=True)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM chunks").fetchone()  # holds its snapshot
        write_notes(world.vault, 300, paragraphs=4, folder="while read")
        daemon.daemon.request_reconcile("drill")  # do not depend on inotify under load
        wait_until(lambda: len(index_state(world.db_path)[0]) == 300, 60, "indexed meanwhile")
        wait_converged(world, 60)
        during = _wal_size(world)
    finally:
        reader.execute("COMMIT")
        reader.close()
    write_notes(world.vault, 300, paragraphs=4, folder="after read")
    daemon.daemon.request_reconcile("drill")
    world.freeze()
    check_invariants(world, alive=daemon.alive, fake=fake_ollama, converge_timeout_s=60)
    after = _wal_size(world)
    assert after <= max(during, 16 * 1024 * 1024), f"WAL grew from {during} to {after} bytes"
    assert daemon.stop() == 0
    os.sync()
