"""Drill 6: the disk fills up under the index and under the answer notes.

A small tmpfs is mounted (root only; skipped elsewhere) and filled with a filler
file; removing the filler is "space returns".
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from in_process import InProcessDaemon
from drill_vault import write_notes
from invariants import FaultWorld, answer_notes, check_invariants, wait_converged, wait_until

from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults


@contextlib.contextmanager
def tmpfs(at: Path, size_kib: int) -> Iterator[Path]:
    at.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(at)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield at
    finally:
        subprocess.run(["umount", "-l", str(at)], check=False)


def fill(folder: Path) -> Path:
    """Fill the file system of `folder` to the last byte; the filler's path."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0")
    finally:
        os.close(fd)
    return filler


def test_disk_full_under_the_index_rolls_back_and_recovers_when_space_returns(
    world: FaultWorld, fake_ollama: FakeOllama, inproc: Callable[..., InProcessDaemon],
) -> None:
    with tmpfs(world.state, 16384):
        write_notes(world.vault, 10, folder="first")
        daemon = inproc()
        wait_converged(world)
        filler = fill(world.state)
        write_notes(world.vault, 300, paragraphs=4, folder="while full")
        wait_until(lambda: "full" in _log_of(world), 20, "the daemon hits the full disk")
        assert daemon.alive(), "a full disk stopped the daemon"
        filler.unlink()  # space returns
        world.freeze()
        check_invariants(world, alive=daemon.alive, fake=fake_ollama, converge_timeout_s=60)
        assert daemon.stop() == 0


def test_disk_full_under_the_answer_notes_keeps_the_question_and_recovers(
    world: FaultWorld, fake_ollama: FakeOllama, inproc: Callable[..., InProcessDaemon],
) -> None:
    world.write("Fern.md", "# Fern\n\nFerns like deep shade and moist soil.\n")
    with tmpfs(world.vault / "queries", 256):
        question = b"What do ferns like?\n"
        daemon = inproc()
        wait_converged(world)
        (world.vault / "queries" / "inbox").mkdir()
        (world.vault / "queries" / "answers").mkdir()
        filler = fill(world.vault / "queries")
        with contextlib.suppress(OSError):
            world.write("queries/inbox/Ferns.md", question)
        if (world.vault / "queries/inbox/Ferns.md").read_bytes() != question:
            # The question itself did not fit: make just enough room for it.
            filler.unlink()
            world.write("queries/inbox/Ferns.md", question)
            filler = fill(world.vault / "queries")
        world.freeze()
        wait_until(lambda: "No space left" in _log_of(world) or "space" in _log_of(world), 20,
                   "the answer write hits the full disk")
        assert daemon.alive()
        assert (world.vault / "queries/inbox/Ferns.md").read_bytes() == question
        filler.unlink()
        wait_until(lambda: (world.vault / "queries/archive/Ferns.md").exists(), 30,
                   "answered once space returns")
        assert len(answer_notes(world, "Ferns")) == 1
        check_invariants(world, alive=daemon.alive, questions={"Ferns": question},
                         fake=fake_ollama)
        assert daemon.stop() == 0


def _log_of(world: FaultWorld) -> str:
    return LOG.text()


class _Capture:
    """The daemon's log records, kept in memory (the in-process daemon logs here)."""

    def __init__(self) -> None:
        import logging

        self.lines: list[str] = []
        self.handler = logging.Handler()
        self.handler.emit = lambda record: self.lines.append(  # type: ignore[method-assign]
            record.getMessage() + " " + str(record.exc_info[1] if record.exc_info else ""))

    def text(self) -> str:
        return "\n".join(self.lines)


LOG = _Capture()


@pytest.fixture(autouse=True)
def _capture_log() -> Iterator[None]:
    import logging

    root = logging.getLogger("askvault")
    LOG.lines.clear()
    root.addHandler(LOG.handler)
    old = root.level
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(LOG.handler)
        root.setLevel(old)
