"""Issue 25 item 6: after the vault's drive comes back, the daemon follows edits again.

The daemon has indexed the vault and answered a question. The drive goes away (the
vault's path is an empty mount point: reconciles are refused) and comes back as another
folder at the same path: a copy with new inodes, or a tmpfs unmounted and mounted again
(root only). The watch died with the old folder. Once the retried reconcile has found the
vault again, an edit of the cited note must be indexed and mark the answer stale at once,
not at the periodic reconcile (600 s): before the fix, nothing watched the new folder.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from askvault.adapters.db import connect
from askvault.services.admin.status import collect_status
from askvault.services.retrieval.search import search
from in_process import InProcessDaemon
from invariants import FaultWorld, answer_notes, check_invariants, wait_converged, wait_until
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults

FERN = "# Fern\n\nFerns like deep shade and moist soil.\n"
EDITED = "# Fern\n\nFerns like deep shade, moist soil and a quillwort neighbour.\n"
QUESTION = b"What do ferns like?\n"


class Drive:
    """The vault's folder as a drive that can go away and come back as another folder."""

    def __init__(self, world: FaultWorld, kind: str) -> None:
        self.world = world
        self.kind = kind
        self.saved = world.root / "drive contents"

    @contextmanager
    def mounted(self) -> Iterator[None]:
        if self.kind == "tmpfs":
            _mount_tmpfs(self.world.vault)
        try:
            yield
        finally:
            if self.kind == "tmpfs":
                subprocess.run(["umount", "-l", str(self.world.vault)], check=False)

    def go_away(self) -> None:
        shutil.copytree(self.world.vault, self.saved, symlinks=True)
        if self.kind == "tmpfs":
            subprocess.run(["umount", "-l", str(self.world.vault)], check=True)
        else:
            shutil.rmtree(self.world.vault)
            self.world.vault.mkdir()  # the empty mount point left behind

    def come_back(self) -> None:
        vault = self.world.vault
        if self.kind == "tmpfs":
            _mount_tmpfs(vault)
        else:
            vault.rmdir()
            vault.mkdir()  # another folder: the one the old watch followed is gone
        for entry in self.saved.iterdir():
            target = vault / entry.name
            if entry.is_dir():
                shutil.copytree(entry, target, symlinks=True)
            else:
                shutil.copy2(entry, target)
        shutil.rmtree(self.saved)


def _mount_tmpfs(at: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(at)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")


def _finds(world: FaultWorld, word: str) -> bool:
    conn = connect(world.db_path, readonly=True)
    try:
        return any(h.note_path == "Fern.md" for h in search(conn, world.settings(), word).hits)
    finally:
        conn.close()


@pytest.mark.parametrize("kind", ["copy", "tmpfs"])
def test_edits_after_the_vault_comes_back_are_indexed_and_mark_answers_stale_at_once(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
    caplog: pytest.LogCaptureFixture,
    kind: str,
) -> None:
    caplog.set_level(logging.INFO, logger="askvault")
    drive = Drive(world, kind)
    with drive.mounted():
        world.write("Fern.md", FERN)
        world.write("Moss.md", "# Moss\n\nMoss grows on north faces of stones.\n")
        world.write("queries/inbox/Ferns.md", QUESTION)
        daemon = inproc()
        wait_until(lambda: (world.vault / "queries/archive/Ferns.md").exists(), 30, "answered")
        wait_converged(world)

        drive.go_away()
        daemon.daemon.request_reconcile("drill")
        wait_until(
            lambda: "indexing waits: the vault" in caplog.text, 20, "the empty folder is refused"
        )
        drive.come_back()
        wait_until(
            lambda: collect_status(world.settings(), probe=False).vault_unavailable is None,
            90,
            "the retried reconcile finds the vault again",
        )
        wait_converged(world)

        world.write("Fern.md", EDITED)
        answer = answer_notes(world, "Ferns")
        assert len(answer) == 1
        wait_until(lambda: _finds(world, "quillwort"), 20, "the edit is indexed")
        wait_until(
            lambda: "status: stale" in answer[0].read_text(encoding="utf-8"),
            20,
            "the answer citing the edited note is marked stale",
        )
        world.freeze()
        check_invariants(world, alive=daemon.alive, questions={"Ferns": QUESTION}, fake=fake_ollama)
        assert daemon.stop() == 0
