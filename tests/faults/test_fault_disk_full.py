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

from drill_vault import write_notes
from in_process import InProcessDaemon
from invariants import FaultWorld, answer_notes, check_invariants, wait_converged, wait_until
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults


@contextlib.contextmanager
def tmpfs(at: Path, size_kib: int) -> Iterator[Path]:
    at.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(at)], capture_output=True
    )
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
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
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
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
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
        wait_until(
            lambda: "No space left" in _log_of(world) or "space" in _log_of(world),
            20,
            "the answer write hits the full disk",
        )
        assert daemon.alive()
        assert (world.vault / "queries/inbox/Ferns.md").read_bytes() == question
        filler.unlink()
        wait_until(
            lambda: (world.vault / "queries/archive/Ferns.md").exists(),
            30,
            "answered once space returns",
        )
        assert len(answer_notes(world, "Ferns")) == 1
        check_invariants(world, alive=daemon.alive, questions={"Ferns": question}, fake=fake_ollama)
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
            record.getMessage() + " " + str(record.exc_info[1] if record.exc_info else "")
        )

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


def test_index_on_a_full_state_disk_prints_one_line_and_indexes_once_space_returns(
    world: FaultWorld,
    fake_ollama: FakeOllama,
) -> None:
    from click.testing import CliRunner

    from askvault.cli.main import cli
    from support.settings_factory import cli_env

    with tmpfs(world.state, 8192):
        write_notes(world.vault, 10, folder="first")
        env = cli_env(world.vault, world.state, fake_ollama.url)
        assert CliRunner().invoke(cli, ["index"], env=env, catch_exceptions=False).exit_code == 0
        filler = fill(world.state)
        write_notes(world.vault, 100, paragraphs=4, folder="while full")
        for attempt in range(2):  # the index open, then (after a little room) its writes
            result = CliRunner().invoke(cli, ["index"], env=env, catch_exceptions=False)
            lines = result.stderr.strip().splitlines()
            assert result.exit_code == 1, result.output
            assert len(lines) == 2 and "full" in lines[0], lines
            assert lines[1] == "hint: free some disk space and try again"
            assert "delete" not in result.stderr  # never "rebuild the index" for a full disk
            if attempt == 0:
                filler.unlink()
                filler = fill_leaving(world.state, 96 * 1024)
        filler.unlink()
        result = CliRunner().invoke(cli, ["index"], env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        wait_converged(world)


def test_run_starts_on_a_full_state_disk_its_lock_holds_without_a_pid_and_it_catches_up(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from askvault.adapters.lockfile import VaultLock, read_lock_holder, vault_lock_path
    from askvault.errors import VaultLocked

    # 4 MiB: the index of ten notes with its WAL before the first checkpoint, every
    # migration's pages included, came to 1.96 MiB at 16 KiB pages once m038 was added:
    # at 2 MiB the first vectors found no room even after the filler went.
    with tmpfs(world.state, 4096):
        runtime = world.state / "run"
        runtime.mkdir()
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # the lock on the full disk too
        write_notes(world.vault, 10, folder="first")
        filler = fill(world.state)
        daemon = inproc()
        wait_until(lambda: "full" in _log_of(world), 20, "the daemon meets the full disk")
        assert daemon.alive(), "a full disk kept the daemon from starting"
        lock = vault_lock_path(world.vault)
        holder = read_lock_holder(lock)
        assert holder is not None and holder.pid is None  # held, its pid not written
        with pytest.raises(VaultLocked, match="holder unknown"):
            VaultLock(world.vault, "index").acquire()
        filler.unlink()
        world.freeze()
        check_invariants(world, alive=daemon.alive, fake=fake_ollama, converge_timeout_s=60)
        assert daemon.stop() == 0


def fill_leaving(folder: Path, room_bytes: int) -> Path:
    """Fill the file system of `folder` but for about `room_bytes`; the filler's path."""
    filler = fill(folder)
    with open(filler, "r+b") as fh:
        fh.truncate(max(0, filler.stat().st_size - room_bytes))
    return filler
