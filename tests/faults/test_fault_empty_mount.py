"""Issue 15 drill 8: the vault root becomes an empty folder (an unmounted drive or share).

The daemon has indexed the vault and answered a question; the vault's contents are
moved aside and an empty folder put in their place. The reconcile is refused (logged,
nothing deleted, retried), status says why; once the contents are back, every note is
still indexed and the answer still askvault's own: an edit of its source marks it stale.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable

import pytest

from askvault.adapters import answer_store
from askvault.adapters.db import connect
from askvault.services.admin.status import collect_status
from in_process import InProcessDaemon
from invariants import (
    FaultWorld,
    answer_notes,
    check_invariants,
    index_state,
    wait_converged,
    wait_until,
)
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults


def _answer_rows(world: FaultWorld) -> list[str]:
    conn = connect(world.db_path, readonly=True)
    try:
        return [r[0] for r in conn.execute("SELECT path FROM answers ORDER BY path")]
    finally:
        conn.close()


def _cited_by_answers(world: FaultWorld, path: str) -> int:
    conn = connect(world.db_path, readonly=True)
    try:
        return len(answer_store.answers_citing(conn, {path}))
    finally:
        conn.close()


def test_an_empty_mount_point_is_not_reconciled_and_the_vault_comes_back_owned_and_fresh(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="askvault")
    world.write("Fern.md", "# Fern\n\nFerns like deep shade and moist soil.\n")
    world.write("Moss.md", "# Moss\n\nMoss grows on north faces of stones.\n")
    question = b"What do ferns like?\n"
    world.write("queries/inbox/Ferns.md", question)
    daemon = inproc()
    wait_until(lambda: (world.vault / "queries/archive/Ferns.md").exists(), 30, "answered")
    wait_converged(world)
    notes_before = index_state(world.db_path)[0]
    answers_before = _answer_rows(world)
    assert answers_before and _cited_by_answers(world, "Fern.md") == 1

    aside = world.root / "aside"
    world.vault.rename(aside)
    world.vault.mkdir()  # the empty mount point
    try:
        daemon.daemon.request_reconcile("drill")
        wait_until(
            lambda: "indexing waits: the vault" in caplog.text,
            20,
            "the reconcile of the empty root is refused",
        )
        daemon.daemon.request_reconcile("drill again")
        time.sleep(1.0)
        assert daemon.alive()
        assert index_state(world.db_path)[0] == notes_before, "notes deleted"
        assert _answer_rows(world) == answers_before, "answer ownership dropped"
        status = collect_status(world.settings(), probe=False)
        assert "holds no notes" in (status.vault_unavailable or "")
    finally:
        shutil.rmtree(world.vault)
        aside.rename(world.vault)  # the drive is back
    wait_until(
        lambda: collect_status(world.settings(), probe=False).vault_unavailable is None,
        90,
        "the retried reconcile finds the vault again",
    )
    assert index_state(world.db_path)[0] == notes_before
    assert _answer_rows(world) == answers_before
    world.write("Fern.md", "# Fern\n\nFerns like deep shade, moist soil and no wind.\n")
    answer = answer_notes(world, "Ferns")
    assert len(answer) == 1
    wait_until(
        lambda: "status: stale" in answer[0].read_text(encoding="utf-8"),
        30,
        "the answer is still askvault's own: its source changed, it is marked stale",
    )
    world.freeze()
    check_invariants(world, alive=daemon.alive, questions={"Ferns": question}, fake=fake_ollama)
    assert len(answer_notes(world, "Ferns")) == 1
    assert daemon.stop() == 0
