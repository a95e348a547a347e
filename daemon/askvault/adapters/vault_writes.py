"""Writes to the vault: atomic replace, new files that never overwrite, the archive move,
and askvault's own temp files.

Only `queries/` is ever written (the callers resolve the paths with
`vault.resolve_inside`). Every write goes through a temp file in the target's own folder,
named so that a start-up can tell askvault's leftovers from a user's files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat as stat_mod
import time
from collections.abc import Callable
from pathlib import Path

from askvault.errors import VaultError

MAX_NAME_BYTES = 255
TEMP_PREFIX = ".askvault-tmp-"
# Our temp files are `.askvault-tmp-<pid>-<process token>-<16 hex>`: a start-up removes one
# only when the process that made it is gone (its pid is dead, or is ours with another
# token: a restarted container reuses pids). Names of older versions (`<16 hex>` only) go
# once they are older than LEGACY_TEMP_MAX_AGE_S; any other name is a user's file.
_PROCESS_TOKEN = secrets.token_hex(4)
_TEMP_NAME = re.compile(r"\.askvault-tmp-(\d+)-([0-9a-f]{8})-[0-9a-f]{16}")
_LEGACY_TEMP_NAME = re.compile(r"\.askvault-tmp-[0-9a-f]{16}")
LEGACY_TEMP_MAX_AGE_S = 600.0
LIVE_OWNER_TEMP_MAX_AGE_S = 3600.0


def write_atomic(
    path: Path, data: bytes, still_ours: Callable[[bytes], bool] | None = None
) -> bool:
    """Replace `path` with `data` atomically (temp file in the same folder, fsync, rename).

    Readers see the old bytes or the new bytes, never a mix; the temp file name
    starts with TEMP_PREFIX so the scanner and the watcher ignore it. With
    `still_ours`, the bytes at `path` are read again once the temp file is written, right
    before the rename: if they are gone or `still_ours(bytes)` is false (a user's save
    landed meanwhile), nothing is replaced and False is returned.
    """
    try:
        mode = stat_mod.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    tmp = _write_temp(path.parent, data, mode)
    try:
        if still_ours is not None and not _holds_ours(path, still_ours):
            _unlink_quietly(tmp)
            return False
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(path.parent)
    return True


def _holds_ours(path: Path, still_ours: Callable[[bytes], bool]) -> bool:
    try:
        fd = os.open(
            path,
            os.O_RDONLY
            | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_NONBLOCK", 0)
            | getattr(os, "O_CLOEXEC", 0),
        )
    except OSError:
        return False  # vanished, or replaced by a symlink or something else: not ours
    try:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            return False
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return False
    finally:
        os.close(fd)
    return still_ours(b"".join(chunks))


def write_new_file(path: Path, data: bytes, claim: Callable[[Path], None] | None = None) -> Path:
    """Write `data` to `path`, or `<stem> (2)<suffix>`, `(3)`, ... if taken; return the path used.

    Never overwrites: the finished temp file is hard-linked to the free name,
    which fails rather than replacing a file created in the meantime. `claim(candidate)`
    runs just before each link attempt, so a caller can record the name first: a crash
    then never leaves a file it does not know about.
    """
    tmp = _write_temp(path.parent, data, None)
    try:
        for n in range(1, 10_000):
            candidate = path if n == 1 else _numbered(path, n)
            if claim is not None and not candidate.exists():
                claim(candidate)
            try:
                _link_exclusive(tmp, candidate)
            except FileExistsError:
                continue
            _fsync_dir(path.parent)
            return candidate
        raise VaultError(f"no free name for {path} after 9999 tries")
    finally:
        _unlink_quietly(tmp)


def move_to_free_name(
    src: Path, path: Path, claim: Callable[[Path], None] | None = None
) -> Path | None:
    """Move `src` (never following a symlink) to `path`, or `<stem> (2)<suffix>`, `(3)`, ...
    if taken; return the path used, or None if `src` is gone.

    Never overwrites: the file is hard-linked to the free name (which fails rather than
    replacing a file created in the meantime), then its old name is removed. Idempotent:
    if `path`'s folder already holds `src` itself (the same inode: an earlier move was
    cut short between the link and the unlink), only the old name is removed. `claim`
    runs before each attempt, as in `write_new_file`. Raises OSError if the old name
    cannot be removed (the link stays; calling again finishes the move).
    """
    already = _same_file_in(src, path.parent)
    if already is not None:
        _unlink_if_same(src, already)
        _fsync_dir(path.parent)
        return already
    for n in range(1, 10_000):
        candidate = path if n == 1 else _numbered(path, n)
        if claim is not None and not os.path.lexists(candidate):
            claim(candidate)
        try:
            linked = _link_exclusive(src, candidate)
        except FileExistsError:
            continue
        except FileNotFoundError:
            return None
        # After a rename (no hard links here) `src` is already gone: whatever is there now
        # is a new file. After a link, remove `src` only if it is still the file we linked
        # (an app's atomic save may have put a new version there meanwhile).
        if linked:
            _unlink_if_same(src, candidate)
        _fsync_dir(path.parent)
        return candidate
    raise VaultError(f"no free name for {path} after 9999 tries")


def _same_file_in(src: Path, folder: Path) -> Path | None:
    """The entry of `folder` that is the very file `src` (same device and inode), if any."""
    try:
        st = os.lstat(src)
        if st.st_nlink < 2:
            return None  # no other name anywhere: it cannot be in the folder already
        with os.scandir(folder) as it:
            for entry in it:
                if entry.inode() == st.st_ino and Path(entry.path) != src:
                    other = os.lstat(entry.path)
                    if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                        return Path(entry.path)
    except OSError:
        return None
    return None


def _unlink_if_same(src: Path, moved: Path) -> None:
    if _same_file(src, moved):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(src)


def cleanup_temp_files(folder: Path, *, now: float | None = None) -> int:
    """Remove leftover askvault temp files (from a crash mid-write) in `folder`; return how many.

    Only names askvault generates are touched, and only once their writer is gone (see
    `_TEMP_NAME`); a user's `.askvault-tmp-notes.md` is never removed.
    """
    removed = 0
    now = time.time() if now is None else now
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if not entry.name.startswith(TEMP_PREFIX) or not entry.is_file(
                    follow_symlinks=False
                ):
                    continue
                if _abandoned_temp(entry.name, entry.stat(follow_symlinks=False).st_mtime, now):
                    _unlink_quietly(Path(entry.path))
                    removed += 1
    except FileNotFoundError:
        return 0
    return removed


def _abandoned_temp(name: str, mtime: float, now: float) -> bool:
    match = _TEMP_NAME.fullmatch(name)
    if match is None:
        return _LEGACY_TEMP_NAME.fullmatch(name) is not None and now - mtime > LEGACY_TEMP_MAX_AGE_S
    pid, token = int(match.group(1)), match.group(2)
    if pid == os.getpid():
        return token != _PROCESS_TOKEN
    if not _pid_alive(pid):
        return True
    return now - mtime > LIVE_OWNER_TEMP_MAX_AGE_S  # a pid reused by an unrelated process


def _pid_alive(pid: int) -> bool:
    if os.name == "nt" or pid <= 0:
        return True  # no cheap check there: the age rule decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def temp_name(pid: int | None = None) -> str:
    """A temp file name as askvault makes them (of process `pid`, by default this one)."""
    token = _PROCESS_TOKEN if pid is None or pid == os.getpid() else secrets.token_hex(4)
    return f"{TEMP_PREFIX}{os.getpid() if pid is None else pid}-{token}-{secrets.token_hex(8)}"


def _write_temp(folder: Path, data: bytes, mode: int | None) -> Path:
    tmp = folder / temp_name()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    os.close(fd)
    return tmp


def _same_file(a: Path, b: Path) -> bool:
    try:
        first, second = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def _link_exclusive(tmp: Path, target: Path) -> bool:
    """Give `tmp` the new name `target`, failing if `target` exists: a hard link (True; `tmp`
    keeps its name too), or where links are refused, a rename onto a placeholder reserved
    with O_EXCL (False; `tmp` is gone)."""
    try:
        os.link(tmp, target, follow_symlinks=False)
        return True
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (
            errno.EPERM,
            errno.ENOTSUP,
            errno.EOPNOTSUPP,
            errno.EMLINK,
            errno.ENOSYS,
            errno.EXDEV,
        ):
            raise
        # No hard links on this file system: reserve the name with O_EXCL, then
        # rename the finished temp file onto our own empty placeholder.
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        try:
            os.replace(tmp, target)
        except OSError:
            _unlink_quietly(target)  # our empty placeholder, not a user's file
            raise
        return False


def _numbered(path: Path, n: int) -> Path:
    suffix = f" ({n}){path.suffix}"
    stem = path.stem
    while len((stem + suffix).encode()) > MAX_NAME_BYTES and stem:
        stem = stem[:-1]
    return path.with_name(stem + suffix)


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # not supported on this platform (Windows): the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
