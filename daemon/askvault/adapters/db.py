"""The SQLite connection: sqlean.py with sqlite-vec loaded, WAL, BEGIN IMMEDIATE, migrations.

sqlean.py is a sqlite3 build that can load extensions; the stock sqlite3 of
pyenv and macOS Pythons cannot, and sqlite-vec is an extension.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlean
import sqlite_vec

from askvault.adapters.migrations import MIGRATIONS, SLOW_MIGRATIONS
from askvault.errors import StoreError

BUSY_TIMEOUT_MS = 15_000
# 64 MiB page cache and 256 MiB of memory-mapped reads: measured in bench/search_bench.py.
CACHE_SIZE_KIB = 65_536
MMAP_SIZE_BYTES = 268_435_456
# The index is a copy of the vault's text: private to its owner (issue 15).
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

Connection = Any  # sqlean.Connection; sqlean ships no type stubs

log = logging.getLogger(__name__)


def connect(path: Path, *, readonly: bool = False, migrate: bool = True) -> Connection:
    """Open the index, load sqlite-vec, set pragmas, apply pending migrations."""
    if not readonly:
        make_private_folder(path.parent)
    elif not path.exists():
        raise StoreError(f"no index at {path}", "run `askvault index` first")
    try:
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        conn = sqlean.connect(uri, uri=True, isolation_level=None, check_same_thread=False,
                              timeout=BUSY_TIMEOUT_MS / 1000)
        if not readonly:
            make_private_files(path)  # before WAL mode makes -wal and -shm from its mode
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA cache_size = -{CACHE_SIZE_KIB}")
        conn.execute(f"PRAGMA mmap_size = {MMAP_SIZE_BYTES}")
        if migrate and not readonly:
            apply_migrations(conn)
    except sqlean.DatabaseError as exc:
        if is_disk_full(exc):
            raise StoreError(f"cannot open the index {path}: {exc}",
                             "free some disk space and try again") from exc
        raise StoreError(
            f"cannot open the index {path}: {exc}",
            "if it is corrupt, delete that file and run `askvault index` to rebuild it",
        ) from exc
    return conn


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
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error (disk full included)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlean.OperationalError as exc:
        raise StoreError(f"the index is busy: {exc}", "another writer holds it; retry") from exc
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        try:
            conn.execute("COMMIT")
        except sqlean.DatabaseError:
            # COMMIT can fail (disk full); the transaction is then still open.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def apply_migrations(conn: Connection) -> list[str]:
    """Apply the numbered migrations not yet recorded in `migrations`; return their names."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
    applied = []
    for name, sql in MIGRATIONS:
        if name in done:
            continue
        if name in SLOW_MIGRATIONS and done:
            # Rewrites every row of a table: seconds per 100k chunks, one time, and other
            # openers wait (or report the index busy) until it is done.
            log.warning("upgrading the index (%s: %s); this happens once",
                        name, SLOW_MIGRATIONS[name])
        with write_transaction(conn):
            # Re-check inside the write lock: another process may have migrated meanwhile.
            if conn.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                continue
            for statement in _split_sql(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
        applied.append(name)
    return applied


def _split_sql(sql: str) -> list[str]:
    """Statements of a migration, split on `;` at line ends (no triggers are used)."""
    return [s.strip() for s in sql.split(";\n") if s.strip() and s.strip() != ";"]


def is_disk_full(exc: BaseException) -> bool:
    """True for SQLite's 'database or disk is full' (SQLITE_FULL)."""
    return "full" in str(exc).lower()


class WriteBatch:
    """Groups whole-note writes into few transactions: each `write` is one note's complete
    change, applied atomically with the others of its batch; a batch commits after
    `max_writes` writes or `max_s` seconds. A note is never split across transactions, so a
    crash loses whole notes only (the next reconcile redoes them), and a COMMIT per note
    (about 1 ms with FTS5 segment flushes) is not paid 6,000 times on a cold index.
    """

    def __init__(self, conn: Connection, *, max_writes: int = 256, max_s: float = 0.25) -> None:
        self.conn = conn
        self.max_writes = max_writes
        self.max_s = max_s
        self._count = 0
        self._began = 0.0

    def write(self, apply: Any) -> None:
        """Run `apply(conn)` inside the open batch transaction (opened if needed)."""
        if not self.conn.in_transaction:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlean.OperationalError as exc:
                raise StoreError(f"the index is busy: {exc}", "another writer holds it; retry"
                                 ) from exc
            self._count, self._began = 0, time.monotonic()
        # No SAVEPOINT per note: FTS5 flushes its pending terms at every savepoint, which
        # tripled the write time (measured). A failing write rolls back the whole batch;
        # the caller's next reconcile redoes those notes.
        try:
            apply(self.conn)
        except BaseException:
            self.rollback()
            raise
        self._count += 1
        if self._count >= self.max_writes or time.monotonic() - self._began >= self.max_s:
            self.commit()

    def commit(self) -> None:
        if self.conn.in_transaction:
            try:
                self.conn.execute("COMMIT")
            except sqlean.DatabaseError:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def __enter__(self) -> WriteBatch:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()
