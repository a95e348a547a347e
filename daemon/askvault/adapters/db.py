"""The SQLite connection: sqlean.py with sqlite-vec loaded, WAL, BEGIN IMMEDIATE, migrations.

sqlean.py is a sqlite3 build that can load extensions; the stock sqlite3 of
pyenv and macOS Pythons cannot, and sqlite-vec is an extension.
"""

from __future__ import annotations

import array
import contextlib
import errno
import importlib.util
import logging
import os
import shlex
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import sqlean

from askvault.adapters.migrations import (
    FORMER_NAMES,
    MIGRATIONS,
    PAGE_SIZE_BYTES,
    SLOW_MIGRATIONS,
    split_sql,
)
from askvault.errors import DiskFull, IndexBusy, StoreError

# How long a statement waits for another writer's lock before IndexBusy; the daemon then
# retries with backoff, so this bounds one wait, not the daemon's patience.
BUSY_TIMEOUT_S = 15.0
# 64 MiB page cache and 256 MiB of memory-mapped reads: measured in bench/search_bench.py.
CACHE_SIZE_KIB = 65_536
MMAP_SIZE_BYTES = 268_435_456
# The index is a copy of the vault's text: private to its owner (docs/reliability.md,
# "Fixes (adapters)", 16c).
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


class Cursor(Protocol):
    """What askvault reads of a query's cursor: one row, all rows, or the rows in turn."""

    @property
    def lastrowid(self) -> int:
        """The rowid of the row the cursor's INSERT made (None before any: askvault reads
        it only after one)."""
        ...

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """The part of a SQLite connection askvault uses: sqlean's connection, which ships no
    type stubs, so this is what mypy checks each use against (an attribute askvault does
    not use yet is added here first)."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(
        self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ..., /
    ) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...

    def close(self) -> None: ...

    def enable_load_extension(self, enabled: bool, /) -> None: ...

    def load_extension(self, path: str, /) -> None: ...


log = logging.getLogger(__name__)


def connect(
    path: Path,
    *,
    readonly: bool = False,
    migrate: bool = True,
    busy_timeout_s: float = BUSY_TIMEOUT_S,
) -> Connection:
    """Open the index, load sqlite-vec, set pragmas, apply pending migrations.

    Raises IndexBusy when a migration waits longer than `busy_timeout_s` for another
    writer, DiskFull when the disk is full, StoreError when the file is unusable."""
    _prepare_folder(path, readonly=readonly)
    conn: Connection | None = None
    try:
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        conn = sqlean.connect(
            uri, uri=True, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s
        )
        if not readonly:
            make_private_files(path)  # before WAL mode makes -wal and -shm from its mode
            keep_temp_files_in(conn, path.parent)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec_path())
        conn.enable_load_extension(False)
        _set_pragmas(conn, readonly=readonly, busy_timeout_s=busy_timeout_s)
        if migrate and not readonly:
            apply_migrations(conn)
    except BaseException as exc:
        if conn is not None:
            # Opened, then a pragma or a migration failed: the caller gets no connection,
            # so close it here (a daemon retrying a full disk leaked one per retry).
            conn.close()
        if not isinstance(exc, sqlean.DatabaseError):
            raise
        raise _open_error(exc, path) from exc
    return conn


def _prepare_folder(path: Path, *, readonly: bool) -> None:
    """For a writer, make the index's private folder; for a reader, insist the index exists."""
    if readonly:
        if not path.exists():
            raise StoreError(f"no index at {path}", "run `askvault index` first")
        return
    try:
        make_private_folder(path.parent)
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFull(
                f"cannot create the index folder {path.parent}: the disk is full",
                DISK_FULL_HINT,
            ) from exc
        raise StoreError(
            f"cannot create the index folder {path.parent}: {exc.strerror}",
            "check the permissions of ASKVAULT_STATE_DIR",
        ) from exc


def _set_pragmas(conn: Connection, *, readonly: bool, busy_timeout_s: float) -> None:
    """The pragmas every connection runs with; a writer also gets WAL (and a new file its
    page size)."""
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
    if not readonly:
        if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
            # Only a new file can take it (WAL fixes the page size once written).
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE_BYTES}")
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA cache_size = -{CACHE_SIZE_KIB}")
    conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE_BYTES}")


def _open_error(exc: sqlean.DatabaseError, path: Path) -> StoreError:
    """The error a failed open of the index at `path` is reported as."""
    if is_disk_full(exc) or _no_room_left(path.parent):
        # A full disk often shows as "disk I/O error" here (the -shm file cannot grow):
        # never advise deleting the index for that.
        return DiskFull(f"cannot open the index {path}: the disk is full ({exc})", DISK_FULL_HINT)
    if is_busy(exc):
        return IndexBusy(f"the index {path} is busy: {exc}", BUSY_HINT)
    return StoreError(
        f"cannot open the index {path}: {exc}",
        f"if it is corrupt, `rm -r {shlex.quote(str(path.parent))}` (the index with its"
        " -wal and -shm), then `askvault index` to rebuild it",
    )


_temp_dir_lock = threading.Lock()
_temp_dir_set = False


def keep_temp_files_in(conn: Connection, folder: Path) -> None:
    """Make SQLite write its temporary files (large sorts, VACUUM, temp indexes: copies of
    note text) in `folder`, the private index folder, instead of the first of $TMPDIR,
    /var/tmp, /usr/tmp and /tmp it finds (a run outside systemd used /var/tmp).

    The setting is process-wide and not safe to change while another thread uses SQLite,
    so it is made once per process, by its first connection that may write (the daemon's
    start-up check, a command's one connection), before other threads open theirs. A
    `SQLITE_TMPDIR` the user set wins; a folder gone later makes SQLite use the usual ones.
    """
    global _temp_dir_set
    with _temp_dir_lock:
        if _temp_dir_set or os.environ.get("SQLITE_TMPDIR"):
            return
        quoted = str(folder).replace("'", "''")
        conn.execute(f"PRAGMA temp_store_directory = '{quoted}'")
        _temp_dir_set = True


def set_memory_limits(
    conn: Connection,
    *,
    cache_kib: int,
    mmap_bytes: int,
    wal_limit_bytes: int,
) -> None:
    """Size this connection's page cache and memory-mapped reads, and cap the WAL file
    kept after a checkpoint (SQLite never shrinks it by itself)."""
    conn.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
    conn.execute(f"PRAGMA mmap_size = {int(mmap_bytes)}")
    conn.execute(f"PRAGMA journal_size_limit = {int(wal_limit_bytes)}")


def integrity_problems(conn: Connection, *, limit: int = 5) -> list[str]:
    """SQLite's own check of the file (`PRAGMA integrity_check`): [] when it is sound,
    else its first `limit` findings."""
    rows = conn.execute("PRAGMA integrity_check").fetchall()
    return [] if rows == [("ok",)] else [str(row[0]) for row in rows[:limit]]


def serialize_float32(vector: Sequence[float]) -> bytes:
    """A vector as the float32 bytes sqlite-vec reads (as `sqlite_vec.serialize_float32`)."""
    return array.array("f", vector).tobytes()


def sqlite_vec_path() -> str:
    """The sqlite-vec loadable extension shipped in the `sqlite_vec` package, found without
    importing it: its `__init__` imports numpy (~0.15 s), which a words-only command never
    needs. Same path as `sqlite_vec.loadable_path()`."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise StoreError(
            "the sqlite-vec package is not installed", "reinstall askvault (pip install askvault)"
        )
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


def make_private_folder(folder: Path) -> None:
    """Create the index's folder 0700 (tightened if it is older and more open).

    The index holds a full copy of the vault's text, so it must not be readable by others
    whatever the umask.
    """
    folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    _tighten(folder, PRIVATE_DIR_MODE)


def make_private_files(path: Path) -> None:
    """Make the index file, and its `-wal` and `-shm` if present, 0600.

    SQLite creates the `-wal` and `-shm` files with the mode of the main file, so doing
    this right after opening it, before WAL mode, covers them too.
    """
    for member in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        _tighten(member, PRIVATE_FILE_MODE)


def _tighten(path: Path, mode: int) -> None:
    # Only what we own, and only ever removing bits: never an error that stops the index.
    with contextlib.suppress(OSError):
        st = os.stat(path)
        if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & ~mode:
            os.chmod(path, stat.S_IMODE(st.st_mode) & mode)


@contextlib.contextmanager
def write_transaction(conn: Connection) -> Iterator[Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error (disk full included).

    A BEGIN that waited out the busy timeout raises IndexBusy; a full disk, DiskFull."""
    begin(conn)
    try:
        yield conn
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        _raise_store_error(exc)
        raise
    else:
        commit(conn)


def begin(conn: Connection) -> None:
    """BEGIN IMMEDIATE: take the write lock now (IndexBusy after the busy timeout)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlean.OperationalError as exc:
        _raise_store_error(exc)
        raise


def commit(conn: Connection) -> None:
    """COMMIT; on failure (disk full) roll back, since the transaction then stays open."""
    try:
        conn.execute("COMMIT")
    except sqlean.DatabaseError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        _raise_store_error(exc)
        raise


BUSY_HINT = (
    "another program writes to the index (an `sqlite3` shell, a backup tool?); close it and retry"
)
DISK_FULL_HINT = "free some disk space and try again"


def _raise_store_error(exc: BaseException) -> None:
    """Re-raise SQLite's busy and disk-full errors as IndexBusy / DiskFull (with hints)."""
    if isinstance(exc, sqlean.DatabaseError):
        if is_busy(exc):
            raise IndexBusy(f"the index is busy: {exc}", BUSY_HINT) from exc
        if is_disk_full(exc):
            raise DiskFull(f"the disk under the index is full: {exc}", DISK_FULL_HINT) from exc


def apply_migrations(conn: Connection) -> list[str]:
    """Apply the numbered migrations not yet recorded in `migrations`; return their names."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
    if done & FORMER_NAMES.keys():
        rename_former_migrations(conn)
        done = {FORMER_NAMES.get(name, name) for name in done}
    applied = []
    for name, sql in MIGRATIONS:
        if name in done:
            continue
        if callable(sql):
            # Runs its own transactions (resumable after a kill); recorded once it returns.
            # Another opener may have run it since `done` was read: then it is not run again.
            if conn.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                continue
            sql(conn, write_transaction, lambda line: log.warning("%s", line))
            with write_transaction(conn):
                conn.execute("INSERT OR IGNORE INTO migrations VALUES (?, ?)", (name, time.time()))
            applied.append(name)
            continue
        if name in SLOW_MIGRATIONS and done:
            # Rewrites every row of a table: seconds per 100k chunks, one time, and other
            # openers wait (or report the index busy) until it is done.
            log.warning(
                "upgrading the index (%s: %s); this happens once", name, SLOW_MIGRATIONS[name]
            )
        with write_transaction(conn):
            # Re-check inside the write lock: another process may have migrated meanwhile.
            if conn.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                continue
            for statement in split_sql(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
        applied.append(name)
    return applied


def rename_former_migrations(conn: Connection) -> None:
    """Rename the rows of migrations recorded under a former name (`FORMER_NAMES`), so an
    index made before the renaming does not run them again."""
    with write_transaction(conn):
        for old, new in FORMER_NAMES.items():
            # OR IGNORE, then DELETE: a row under both names (two openers racing) ends as one.
            conn.execute("UPDATE OR IGNORE migrations SET name = ? WHERE name = ?", (new, old))
            conn.execute("DELETE FROM migrations WHERE name = ?", (old,))


_split_sql = split_sql  # the name the migration tests import


def is_disk_full(exc: BaseException) -> bool:
    """True for SQLite's SQLITE_FULL ('database or disk is full', told by its error code, not
    its text), ENOSPC / EDQUOT and DiskFull: the one test of a full disk, wherever it shows."""
    if isinstance(exc, DiskFull):
        return True
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return _sqlite_result_code(exc) == sqlean.SQLITE_FULL


def _sqlite_result_code(exc: BaseException) -> int | None:
    """The primary result code of an error SQLite raised (the extended code's low byte);
    None for any other exception, one built by hand included."""
    if not isinstance(exc, sqlean.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def _no_room_left(folder: Path) -> bool:
    """True when the file system of `folder` has no block left for us."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail == 0


def is_busy(exc: BaseException) -> bool:
    """True for SQLite's 'database is locked' (SQLITE_BUSY) and IndexBusy."""
    if isinstance(exc, IndexBusy):
        return True
    if not isinstance(exc, sqlean.OperationalError):
        return False
    text = str(exc).lower()
    return "database is locked" in text or "busy" in text


class WriteBatch:
    """Groups whole-note writes into few short transactions: each `write` is one note's
    complete change; writes are held until `max_writes` of them or `max_s` seconds since the
    first, then applied together in one transaction. A note is never split across
    transactions, so a crash loses whole notes only (the next reconcile redoes them), and a
    COMMIT per note (about 1 ms with FTS5 segment flushes) is not paid 6,000 times on a cold
    index.

    The write lock is taken only to apply a group, never while the caller reads, parses or
    chunks the next note: a slow note (a 5 MB line) would otherwise hold every other writer
    of the index (the daemon's inbox, an `sqlite3` shell) out for as long as it takes.
    """

    def __init__(self, conn: Connection, *, max_writes: int = 256, max_s: float = 0.25) -> None:
        self.conn = conn
        self.max_writes = max_writes
        self.max_s = max_s
        self._held: list[Any] = []
        self._began = 0.0

    def write(self, apply: Any) -> None:
        """Hold `apply(conn)` for the next group (applied at once when the group is full)."""
        if not self._held:
            self._began = time.monotonic()
        self._held.append(apply)
        if len(self._held) >= self.max_writes or time.monotonic() - self._began >= self.max_s:
            self.commit()

    def commit(self) -> None:
        """Apply the held writes in one BEGIN IMMEDIATE ... COMMIT (IndexBusy, DiskFull)."""
        if not self._held:
            return
        held, self._held = self._held, []
        # No SAVEPOINT per note: FTS5 flushes its pending terms at every savepoint, which
        # tripled the write time (measured). A failing write rolls back the whole group;
        # the caller's next reconcile redoes those notes.
        with write_transaction(self.conn):
            for apply in held:
                apply(self.conn)

    def rollback(self) -> None:
        """Forget the held writes (nothing of them reached the index)."""
        self._held = []

    def __enter__(self) -> WriteBatch:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()
