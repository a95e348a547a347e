"""Drill 4: the vault changes under the daemon (a burst of files, renamed and moved-out
folders, a case-only rename, NFC vs NFD names, a note deleted between event and read)."""

from __future__ import annotations

import os
import shutil
import unicodedata
from collections.abc import Callable

import pytest

from drill_vault import write_notes
from in_process import InProcessDaemon
from invariants import FaultWorld, check_invariants, index_state, wait_converged
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults

BURST_FILES = int(os.environ.get("ASKVAULT_DRILL_BURST_FILES", "1000"))


def test_vault_changes_under_the_daemon_keep_rows_and_files_one_to_one(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
) -> None:
    write_notes(world.vault, 5, folder="Projects")
    write_notes(world.vault, 5, folder="Leaving")
    world.write("Case.md", "# Case\n\nA note renamed only in case.\n")
    daemon = inproc()
    wait_converged(world)

    write_notes(world.vault, BURST_FILES, paragraphs=1, folder="burst")
    (world.vault / "Projects").rename(world.vault / "Projects 2025")
    shutil.move(str(world.vault / "Leaving"), str(world.outside / "Leaving"))
    (world.vault / "Case.md").rename(world.vault / "case.md")
    nfc = unicodedata.normalize("NFC", "Café")
    nfd = unicodedata.normalize("NFD", "Café")
    world.write(f"{nfc}.md", "# Cafe NFC\n\ncomposed name espresso\n")
    world.write(f"{nfd}.md", "# Cafe NFD\n\ndecomposed name ristretto\n")
    for i in range(20):  # created and deleted before the debounce lets the event through
        (world.write(f"flash {i}.md", f"# Flash {i}\n\ngone at once\n")).unlink()
    world.freeze()

    check_invariants(world, alive=daemon.alive, fake=fake_ollama, converge_timeout_s=90)
    paths, _, _ = index_state(world.db_path)
    assert f"{nfc}.md" in paths and f"{nfd}.md" in paths, "both spellings are distinct notes"
    assert "case.md" in paths and "Case.md" not in paths
    assert not [p for p in paths if p.startswith(("Leaving/", "Projects/", "flash "))]
    assert len([p for p in paths if p.startswith("burst/")]) == BURST_FILES
    assert daemon.stop() == 0
