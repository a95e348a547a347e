"""Issue 15: the vault adapter's side of the question/answer protocol under a hostile world.

The archive move is idempotent by inode, the log is appended only to a regular file of its
own, only askvault's own temp files are cleaned, and a rewrite keeps a save that lands
while the temp file is written.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from askvault.adapters.vault import (
    TEMP_PREFIX,
    append_line,
    cleanup_temp_files,
    move_to_free_name,
    temp_name,
    write_atomic,
)
from askvault.errors import VaultError

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
LINE = "## [2026-01-01] query | What is it?\n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "queries" / "archive").mkdir(parents=True)
    (root / "queries" / "inbox").mkdir(parents=True)
    return root


def put(path: Path, data: bytes | str = "the question\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def immutable_supported(folder: Path) -> bool:
    if not IS_ROOT or shutil.which("chattr") is None:
        return False
    probe = folder / "probe"
    probe.write_text("x")
    ok = subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode == 0
    subprocess.run(["chattr", "-i", str(probe)], capture_output=True)
    probe.unlink()
    return ok


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[list[Path]]:
    """Paths appended here get `chattr +i` from the test and lose it at teardown."""
    if not immutable_supported(tmp_path):
        pytest.skip("needs root and chattr on this file system")
    marked: list[Path] = []
    yield marked
    for path in marked:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def chattr_immutable(path: Path, marked: list[Path]) -> None:
    subprocess.run(["chattr", "+i", str(path)], check=True)
    marked.append(path)


# ---- the archive move, idempotent by inode


def test_move_after_a_crash_between_link_and_unlink_only_removes_the_inbox_name(
    vault: Path,
) -> None:
    src = put(vault / "queries/inbox/Q.md")
    os.link(src, vault / "queries/archive/Q.md")  # what a kill -9 after the link leaves
    moved = move_to_free_name(src, vault / "queries/archive/Q.md")
    assert moved == vault / "queries/archive/Q.md"
    assert not src.exists()
    assert sorted(p.name for p in (vault / "queries/archive").iterdir()) == ["Q.md"]


def test_move_finds_its_earlier_link_under_a_numbered_name(vault: Path) -> None:
    put(vault / "queries/archive/Q.md", "an older question")
    src = put(vault / "queries/inbox/Q.md")
    os.link(src, vault / "queries/archive/Q (2).md")
    (vault / "queries/archive/Q.md").unlink()  # the lower name became free meanwhile
    moved = move_to_free_name(src, vault / "queries/archive/Q.md")
    assert moved == vault / "queries/archive/Q (2).md"
    assert sorted(p.name for p in (vault / "queries/archive").iterdir()) == ["Q (2).md"]


def test_move_whose_inbox_unlink_fails_raises_and_a_retry_adds_no_second_link(
    vault: Path,
    immutable: list[Path],
) -> None:
    src = put(vault / "queries/inbox/Q.md")
    chattr_immutable(vault / "queries/inbox", immutable)
    for _ in range(3):
        with pytest.raises(OSError) as caught:
            move_to_free_name(src, vault / "queries/archive/Q.md")
        assert caught.value.errno == errno.EPERM
    assert sorted(p.name for p in (vault / "queries/archive").iterdir()) == ["Q.md"]
    subprocess.run(["chattr", "-i", str(vault / "queries/inbox")], check=True)
    assert move_to_free_name(src, vault / "queries/archive/Q.md") == vault / "queries/archive/Q.md"
    assert not src.exists()


def test_move_records_each_name_before_it_tries_it(vault: Path) -> None:
    put(vault / "queries/archive/Q.md", "taken")
    claimed: list[str] = []
    src = put(vault / "queries/inbox/Q.md")
    moved = move_to_free_name(
        src, vault / "queries/archive/Q.md", claim=lambda p: claimed.append(p.name)
    )
    assert moved is not None and moved.name == "Q (2).md"
    assert claimed == ["Q (2).md"]  # a taken name is never claimed


# ---- the log: a regular file of its own


def test_append_line_appends_and_starts_a_new_line(vault: Path) -> None:
    log = put(vault / "queries/log.md", "no newline at the end")
    assert append_line(vault, "queries/log.md", LINE)
    assert log.read_text() == "no newline at the end\n" + LINE
    assert append_line(vault, "queries/new/log.md", LINE)
    assert (vault / "queries/new/log.md").read_text() == LINE


def test_append_line_unless_last_skips_a_line_already_there(vault: Path) -> None:
    log = put(vault / "queries/log.md", LINE)
    assert not append_line(vault, "queries/log.md", LINE, unless_last=True)
    assert append_line(vault, "queries/log.md", LINE)
    assert log.read_text() == LINE * 2
    put(vault / "queries/log.md", "x" + LINE)  # a longer line that merely ends the same
    assert append_line(vault, "queries/log.md", LINE, unless_last=True)


def test_append_line_never_writes_through_a_symlinked_log(vault: Path) -> None:
    journal = put(vault / "Journal.md", "# my journal\n")
    (vault / "queries/log.md").symlink_to("../Journal.md")
    with pytest.raises(VaultError, match="symlink"):
        append_line(vault, "queries/log.md", LINE)
    assert journal.read_text() == "# my journal\n"


def test_append_line_never_writes_to_a_hard_linked_log_or_a_fifo(vault: Path) -> None:
    journal = put(vault / "Journal.md", "# my journal\n")
    os.link(journal, vault / "queries/log.md")
    with pytest.raises(VaultError, match="hard link"):
        append_line(vault, "queries/log.md", LINE)
    assert journal.read_text() == "# my journal\n"
    os.mkfifo(vault / "queries/fifo.md")
    with pytest.raises((VaultError, OSError)):
        append_line(vault, "queries/fifo.md", LINE)  # refused, never a hang


def test_append_line_refuses_a_log_folder_symlinked_out_of_the_vault(
    vault: Path,
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "queries/logs").symlink_to(outside)
    with pytest.raises(VaultError):
        append_line(vault, "queries/logs/log.md", LINE)
    assert list(outside.iterdir()) == []


# ---- temp files: only askvault's own, only once their writer is gone


def test_cleanup_keeps_user_files_that_merely_start_with_the_prefix(vault: Path) -> None:
    folder = vault / "queries/answers"
    for name in (TEMP_PREFIX + "notes.md", TEMP_PREFIX + "1", TEMP_PREFIX + "123-abc-def"):
        os.utime(put(folder / name, "a user's file"), (1, 1))
    assert cleanup_temp_files(folder) == 0
    assert len(list(folder.iterdir())) == 3


def test_cleanup_removes_temp_files_of_dead_writers_and_of_this_pid_before_a_restart(
    vault: Path,
) -> None:
    folder = vault / "queries/answers"
    dead = put(folder / temp_name(dead_pid()), "half an answer")
    reused = put(folder / f"{TEMP_PREFIX}{os.getpid()}-00000000-0123456789abcdef", "old")
    mine = put(folder / temp_name(), "being written by this process")
    alive = put(folder / temp_name(os.getppid()), "being written by a live process")
    legacy_fresh = put(folder / f"{TEMP_PREFIX}0123456789abcdef", "maybe an older version's")
    assert cleanup_temp_files(folder) == 2
    assert not dead.exists() and not reused.exists()
    assert mine.exists() and alive.exists() and legacy_fresh.exists()


def test_temp_names_carry_the_writer_and_are_ignored_by_the_inbox(vault: Path) -> None:
    name = temp_name()
    assert name.startswith(f"{TEMP_PREFIX}{os.getpid()}-") and len(name.split("-")) == 5


# ---- a rewrite keeps a save landing while the temp file is written


def test_write_atomic_keeps_a_save_that_lands_while_the_temp_file_is_written(
    vault: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = put(vault / "queries/answers/A.md", "askvault's bytes")
    real_fsync = os.fsync
    saved: list[bool] = []

    def fsync_then_user_saves(fd: int) -> None:
        real_fsync(fd)
        if not saved:  # the temp file's fsync: the user's save lands right now
            saved.append(True)
            target.write_text("the user's edit")

    monkeypatch.setattr(os, "fsync", fsync_then_user_saves)
    replaced = write_atomic(target, b"new answer", still_ours=lambda b: b == b"askvault's bytes")
    assert replaced is False
    assert target.read_text() == "the user's edit"
    assert [p.name for p in target.parent.iterdir()] == ["A.md"]


def test_write_atomic_replaces_when_the_bytes_are_still_ours(vault: Path) -> None:
    target = put(vault / "queries/answers/A.md", "askvault's bytes")
    assert write_atomic(target, b"new", still_ours=lambda b: b == b"askvault's bytes")
    assert target.read_bytes() == b"new"
    target.unlink()
    assert not write_atomic(target, b"new", still_ours=lambda b: True)  # vanished: not ours
    assert not target.exists()
