"""The single-instance lock of a vault's daemon: an flock'ed file holding the pid.

flock is released by the kernel when the process dies, so a lock left by a
dead daemon (kill -9, power loss) is simply taken over by the next one.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from askvault.errors import DaemonAlreadyRunning


class DaemonLock:
    """Hold with `acquire()` / `release()` or as a context manager."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        # Private like the index beside it (adapters/db.py: 0700 folder, 0600 files).
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = read_lock_pid(self.path)
            raise DaemonAlreadyRunning(
                f"another askvault daemon (pid {pid}) is already running on this vault",
                "stop it first (`systemctl --user stop askvault` or kill that pid)",
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> DaemonLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_lock_pid(path: Path) -> int | None:
    """The pid of the live daemon holding `path`, or None if no daemon holds it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 64).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
