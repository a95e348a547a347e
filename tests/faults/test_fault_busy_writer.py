"""Issue 15 drill 3: another writer holds the index longer than the busy timeout.

The busy timeout is cut to 1 s (15 s by default), so a 4 s hold outlasts it several
times: every daemon thread (indexing, embedding, inbox) meets "database is locked",
logs it, waits with backoff, and finishes its work once the holder lets go.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.app.embed_loop import EmbedLoop
from askvault.core.backoff import Backoff
from askvault.services.index.indexer import reconcile
from drill_vault import write_notes
from in_process import InProcessDaemon
from invariants import FaultWorld, check_invariants, index_state, wait_converged, wait_until
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults

BUSY_TIMEOUT_S = 1.0
HOLD_S = 4.0


def test_a_writer_holding_the_index_past_the_busy_timeout_delays_the_daemon_never_stops_it(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="askvault")
    world.write("Fern.md", "# Fern\n\nFerns like deep shade and moist soil.\n")
    write_notes(world.vault, 5, folder="before")
    daemon = inproc(busy_timeout_s=BUSY_TIMEOUT_S)
    wait_converged(world)
    question = b"What do ferns like?\n"
    holder = connect(world.db_path)
    try:
        holder.execute("BEGIN IMMEDIATE")
        held_at = time.monotonic()
        write_notes(world.vault, 20, folder="during the lock")
        world.write("queries/inbox/Ferns.md", question)
        daemon.daemon.request_reconcile("drill")  # do not depend on inotify under load
        wait_until(
            lambda: "indexing waits: the index is busy" in caplog.text,
            20,
            "the indexing thread meets the busy index",
        )
        wait_until(
            lambda: "Ferns.md stays in the inbox" in caplog.text,
            20,
            "the inbox meets the busy index",
        )
        time.sleep(max(0.0, HOLD_S - (time.monotonic() - held_at)))
        assert daemon.alive(), "a writer holding the index stopped the daemon"
        assert len(index_state(world.db_path)[0]) == 6, "written while another writer held it?"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    world.freeze()
    wait_until(
        lambda: (world.vault / "queries/archive/Ferns.md").exists(),
        60,
        "the question is answered once the holder let go",
    )
    check_invariants(
        world,
        alive=daemon.alive,
        questions={"Ferns": question},
        fake=fake_ollama,
        converge_timeout_s=60,
    )
    assert len(index_state(world.db_path)[0]) == 26
    assert daemon.stop() == 0


def test_the_embedding_thread_waits_out_a_busy_index_and_drains_after(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="askvault")
    write_notes(world.vault, 8)
    settings = world.settings(**{"ollama.embed_batch_size": 4})
    conn = connect(world.db_path)
    try:
        reconcile(conn, settings)  # words only: every chunk waits for a vector
    finally:
        conn.close()
    assert index_state(world.db_path)[1] != 0  # -1: no model registered yet
    loop = EmbedLoop(
        settings, OllamaClients(settings), busy_timeout_s=0.3, backoff=Backoff(0.2, 1.0)
    )
    stop = threading.Event()
    holder = connect(world.db_path)
    thread = threading.Thread(target=loop.run, args=(stop,), name="drill-embed")
    try:
        holder.execute("BEGIN IMMEDIATE")
        thread.start()
        wait_until(
            lambda: "embedding waits: the index is busy" in caplog.text,
            20,
            "the embedding thread meets the busy index",
        )
        time.sleep(1.0)
        assert thread.is_alive(), "a busy index ended the embedding thread"
        holder.execute("ROLLBACK")
        wait_until(
            lambda: index_state(world.db_path)[1] == 0,
            30,
            "the backlog drains once the holder let go",
        )
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
        stop.set()
        loop.wake()
        thread.join(10)
    assert not thread.is_alive()


def test_reconcile_holds_no_write_lock_while_it_reads_and_parses_the_next_note(
    world: FaultWorld,
    fake_ollama: FakeOllama,
) -> None:
    write_notes(world.vault, 30)
    settings = world.settings(**{"index.parse_workers": 1})
    conn = connect(world.db_path)
    other = connect(world.db_path, busy_timeout_s=0.0)
    locked_between_notes: list[int] = []

    def between_notes(done: int, total: int) -> None:
        # Called after each note is handed to the writer and before the next is parsed.
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - "database is locked" is the finding
            locked_between_notes.append(done)

    try:
        report = reconcile(conn, settings, progress=between_notes)
    finally:
        other.close()
        conn.close()
    assert len(report.added) == 30
    assert locked_between_notes == [], "a write transaction stayed open across parsing"
    assert len(index_state(world.db_path)[0]) == 30
