"""The vault's single-writer lock: flock'ed files named by the vault's identity.

Only one askvault process writes a vault's index and its `queries/` at a time:
`askvault run` and `askvault index` both take this lock. It is keyed by the vault
itself — the device and inode of its root folder — not by the path it was reached
by, so a symlinked path or a bind mount finds the same lock. It is two files, both
held: one in `$XDG_RUNTIME_DIR/askvault/` (a per-user tmpfs on systemd machines;
`/run/user/<uid>/askvault` when that variable is unset but the folder exists, else a
private `askvault-<uid>` folder of the temp dir), which another ASKVAULT_STATE_DIR
meets, and one in the state dir's `locks/` folder, beside the indexes, which every
process that can write this vault's index meets whatever its runtime dir (another
`$XDG_RUNTIME_DIR`, none, a sandbox's own /tmp).

flock is released by the kernel when the process dies, so a lock left by a dead
process (kill -9, power loss) is simply taken over by the next one. The file holds
the holder's pid and command for the refusal message; writing them is best-effort,
so a full disk never keeps the lock from working.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import stat
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from askvault.core.service_files import service_name
from askvault.errors import AskvaultError, VaultLocked
from askvault.settings import vault_id

log = logging.getLogger(__name__)

# A status probe holds the lock shared for a moment: retry briefly before refusing.
ACQUIRE_TRIES = 5
ACQUIRE_RETRY_S = 0.05
HOLDER_MAX_BYTES = 256
SYSTEMD_RUNTIME_ROOT = "/run/user"


@dataclass(frozen=True)
class LockHolder:
    """Who holds a vault's lock (either may be unknown when it could not be written)."""

    pid: int | None
    command: str | None


def lock_folder(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_RUNTIME_DIR/askvault`, else `<tmp>/askvault-<uid>`; created private (0700)."""
    env = os.environ if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if not (runtime and os.path.isabs(runtime) and os.path.isdir(runtime)):
        # A cron job or a bare ssh command has no XDG_RUNTIME_DIR while the systemd user
        # service has: both must find the same lock, so try the folder systemd uses.
        runtime = _own_folder(Path(SYSTEMD_RUNTIME_ROOT) / str(os.getuid()))
    if runtime:
        folder = Path(runtime) / "askvault"
    else:
        folder = Path(tempfile.gettempdir()) / f"askvault-{os.getuid()}"
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise AskvaultError(
            f"cannot create the lock folder {folder}: {exc.strerror}", _hint_for(exc)
        ) from exc
    st = os.lstat(folder)
    # In a shared temp dir another user could have made it first: never use theirs.
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise AskvaultError(
            f"the lock folder {folder} is not a folder of this user",
            "remove it, or set XDG_RUNTIME_DIR to a private folder",
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder


def vault_lock_path(vault_root: Path, folder: Path | None = None) -> Path:
    """The lock file of the vault whose root folder is `vault_root` (symlinks followed)."""
    try:
        st = os.stat(vault_root)
    except OSError as exc:
        raise AskvaultError(
            f"the vault {vault_root} cannot be read: {exc.strerror}",
            "pass --vault PATH to your Obsidian vault",
        ) from exc
    return (folder or lock_folder()) / f"{st.st_dev}-{st.st_ino}.lock"


class VaultLock:
    """Hold with `acquire()` / `release()` or as a context manager; `command` (`run`,
    `index`) names the holder in the message another process gets."""

    def __init__(
        self,
        vault_root: Path,
        command: str,
        *,
        folder: Path | None = None,
        state_dir: Path | None = None,
    ) -> None:
        """`folder` replaces the runtime lock folder; `state_dir` (the folder of the
        indexes, `ASKVAULT_STATE_DIR`) adds the lock beside the indexes."""
        self.vault_root = vault_root
        self.command = command
        self.folder = folder
        self.state_dir = state_dir
        self.path: Path | None = None
        self.paths: list[Path] = []
        self._fds: list[int] = []

    def acquire(self) -> None:
        """Take the lock or raise VaultLocked naming the holder."""
        self.path = vault_lock_path(self.vault_root, self.folder)
        paths = [self.path]
        if self.state_dir is not None:
            state_lock = self._state_lock_path()
            if state_lock is not None:
                paths.append(state_lock)
        try:
            for path in paths:
                self._fds.append(self._take(path))
                self.paths.append(path)
        except BaseException:
            self.release()
            raise
        for fd in self._fds:
            write_holder(fd, LockHolder(os.getpid(), self.command))

    def _state_lock_path(self) -> Path | None:
        assert self.state_dir is not None
        try:
            return state_lock_path(self.vault_root, self.state_dir)
        except AskvaultError as exc:
            cause = exc.__cause__
            if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
                # A full state disk: the runtime lock alone holds until there is room.
                log.warning("%s; only the lock in the runtime folder is held", exc.message)
                return None
            raise

    def _take(self, path: Path) -> int:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise AskvaultError(
                f"cannot open the vault's lock {path}: {exc.strerror}", _hint_for(exc)
            ) from exc
        for attempt in range(ACQUIRE_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if attempt + 1 < ACQUIRE_TRIES:
                    time.sleep(ACQUIRE_RETRY_S)
        os.close(fd)
        raise self._refusal(read_lock_holder(path))

    def release(self) -> None:
        """Let the lock go (the kernel does it too when the process dies)."""
        fds, self._fds, self.paths = self._fds, [], []
        for fd in fds:
            try:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
            finally:
                os.close(fd)

    def _refusal(self, holder: LockHolder | None) -> VaultLocked:
        pid = holder.pid if holder else None
        command = holder.command if holder else None
        who = ", ".join(
            part
            for part in (f"pid {pid}" if pid else "", f"`askvault {command}`" if command else "")
            if part
        )
        # The unit `askvault service install` writes for this vault (docs/how-to).
        unit = service_name(vault_id(self.vault_root))
        stop = f"`systemctl --user stop {unit}`" + (f" or `kill {pid}`" if pid else "")
        if command == "index":
            hint = "wait for that `askvault index` to finish, then try again"
        elif self.command == "index":
            hint = (
                "the daemon keeps the index fresh by itself; to run `askvault index`, stop "
                f"it first ({stop})"
            )
        else:
            hint = f"stop it first ({stop})"
        return VaultLocked(
            f"another askvault process ({who or 'holder unknown'}) is already running on "
            f"this vault ({self.vault_root})",
            hint,
        )

    def __enter__(self) -> VaultLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def state_lock_path(vault_root: Path, state_dir: Path) -> Path:
    """The lock file of the vault `vault_root` in the state dir `state_dir`: `locks/` beside
    the indexes, created private (0700)."""
    folder = state_dir / "locks"
    try:
        # Its parents too, as the index's folder is made: on a fresh account
        # ~/.local/state (the default state dir's parent) does not exist yet.
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    except OSError as exc:
        raise AskvaultError(
            f"cannot create the lock folder {folder}: {exc.strerror}",
            "check the permissions of ASKVAULT_STATE_DIR",
        ) from exc
    return vault_lock_path(vault_root, folder)


def lock_holder(vault_root: Path, state_dir: Path | None = None) -> LockHolder | None:
    """Who holds the vault's lock, in either of its files; None when nobody does."""
    paths = [vault_lock_path(vault_root)]
    if state_dir is not None and (state_dir / "locks").is_dir():
        paths.append(vault_lock_path(vault_root, state_dir / "locks"))
    for path in paths:
        holder = read_lock_holder(path)
        if holder is not None:
            return holder
    return None


def write_holder(fd: int, holder: LockHolder) -> bool:
    """Record who holds the lock; best-effort (ENOSPC, EIO: the lock holds all the same)."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{holder.pid} {holder.command}\n".encode(), 0)
    except OSError:
        return False
    return True


def read_lock_holder(path: Path) -> LockHolder | None:
    """Who holds the lock at `path`, or None if no live process holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _parse_holder(os.pread(fd, HOLDER_MAX_BYTES, 0))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _parse_holder(data: bytes) -> LockHolder:
    pid_text, _, command = data.decode("ascii", "replace").strip().partition(" ")
    return LockHolder(int(pid_text) if pid_text.isdigit() else None, command.strip() or None)


def _own_folder(path: Path) -> str:
    """`path` if it is a folder of this user, else ''."""
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    return str(path) if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() else ""


def _hint_for(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free some disk space (or set XDG_RUNTIME_DIR to a folder with room)"
    return "set XDG_RUNTIME_DIR to a private folder you can write"
