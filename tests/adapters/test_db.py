"""The index file's privacy (issue 15, item 16c): it holds a full copy of the vault's text."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlean

from askvault.adapters import db
from askvault.adapters.db import connect, write_transaction
from askvault.app.clients import OllamaClients
from askvault.errors import DiskFull, IndexBusy, StoreError
from askvault.services.index.index_pass import index_vault
from support.fake_ollama import FakeOllama
from support.settings_factory import settings_for


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The most permissive umask: privacy must not depend on the user's."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def _write_something(db: Path) -> None:
    conn = connect(db)
    try:
        with write_transaction(conn):
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('probe', 'x')")
        assert db.with_name(db.name + "-wal").exists()
        assert db.with_name(db.name + "-shm").exists()
    finally:
        conn.close()


def test_connect_creates_the_folder_0700_and_the_index_wal_and_shm_0600_under_umask_0(
    tmp_path: Path,
    open_umask: None,
) -> None:
    db = tmp_path / "state" / "vault-1234" / "index.sqlite"
    conn = connect(db)
    try:
        with write_transaction(conn):
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('probe', 'x')")
        assert _mode(db.parent) == 0o700
        for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
            assert _mode(db.parent / name) == 0o600, name
    finally:
        conn.close()


def test_connect_tightens_an_index_made_world_readable_before(tmp_path: Path) -> None:
    db = tmp_path / "state" / "vault-1234" / "index.sqlite"
    _write_something(db)
    conn = connect(db)  # keeps -wal and -shm in place while their modes are opened up
    try:
        os.chmod(db.parent, 0o755)
        for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
            os.chmod(db.parent / name, 0o644)
        connect(db).close()
        assert _mode(db.parent) == 0o700
        for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
            assert _mode(db.parent / name) == 0o600, name
    finally:
        conn.close()


def test_index_pass_and_daemon_lock_leave_nothing_readable_by_others(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    open_umask: None,
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("# Note\n\nprivate words\n")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    # Takes the vault lock too (its folder: tests/adapters/test_vault_lock.py).
    index_vault(settings, OllamaClients(settings))
    found = [settings.state_path, *settings.state_path.iterdir()]
    assert len(found) >= 2
    assert all(_mode(p) & 0o077 == 0 for p in found), {p.name: oct(_mode(p)) for p in found}


def test_an_index_that_cannot_be_opened_leaves_no_connection_behind(tmp_path: Path) -> None:
    """connect() opened the file, then its first pragma failed: it closes what it opened
    (a daemon retrying a full disk once leaked a connection per retry). The autouse leak
    check fails this test otherwise."""
    path = tmp_path / "index.sqlite"
    path.write_bytes(b"not a database, " * 512)
    with pytest.raises(StoreError, match="cannot open the index"):
        connect(path)


# A process of its own: SQLite's temp folder is a setting of the whole process, made by its
# first connection. The sort spills to temp files (a tiny cache); the function called for
# each row lists the process's open files while they exist, at every 500th row (each row:
# 20,000 listings, most of the test's 3-7 s).
_SPILL = """
import os, sys
from itertools import count
from pathlib import Path
from askvault.adapters.db import connect

conn = connect(Path(sys.argv[1]))
conn.execute("PRAGMA cache_size = 10")
conn.execute("CREATE TABLE big(a)")
conn.executemany("INSERT INTO big VALUES (?)", ((os.urandom(200).hex(),) for _ in range(20000)))
seen = set()
rows = count()

def probe(value):
    if next(rows) % 500:
        return value
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if "etilqs_" in target:
            seen.add(os.path.dirname(target))
    return value

conn.create_function("probe", 1, probe)
conn.execute("SELECT probe(a) FROM big ORDER BY a").fetchall()
print("\\n".join(sorted(seen)))
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("users_choice", [False, True])
def test_sqlite_temp_files_go_to_the_private_index_folder_unless_the_user_chose_one(
    tmp_path: Path, users_choice: bool
) -> None:
    db_path = tmp_path / "state" / "vault-1234" / "index.sqlite"
    env = {k: v for k, v in os.environ.items() if k not in ("SQLITE_TMPDIR", "TMPDIR")}
    chosen = tmp_path / "my temp"
    if users_choice:
        chosen.mkdir()
        env["SQLITE_TMPDIR"] = str(chosen)
    done = subprocess.run(
        [sys.executable, "-c", _SPILL, str(db_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    folders = done.stdout.splitlines()
    assert folders, "the sort made no temp file: the drill proves nothing"
    assert folders == [str(chosen if users_choice else db_path.parent)]


def test_a_reader_of_a_missing_index_is_told_to_index_first(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no index at") as caught:
        connect(tmp_path / "state" / "index.sqlite", readonly=True)
    assert "askvault index" in caught.value.hint
    assert not (tmp_path / "state").exists()  # a reader creates nothing


def test_an_index_folder_that_cannot_be_made_is_a_store_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("a file where the folder should be")
    with pytest.raises(StoreError, match="cannot create the index folder") as caught:
        connect(tmp_path / "state" / "index.sqlite")
    assert not isinstance(caught.value, DiskFull)


def test_an_index_folder_on_a_full_disk_is_disk_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(folder: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(db, "make_private_folder", full)
    with pytest.raises(DiskFull, match="cannot create the index folder .*the disk is full"):
        connect(tmp_path / "state" / "index.sqlite")


def test_a_corrupt_index_is_a_store_error_that_says_how_to_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    path.write_bytes(b"not a database, " * 512)
    with pytest.raises(StoreError) as caught:
        connect(path)
    assert type(caught.value) is StoreError
    assert "askvault index" in caught.value.hint


def test_a_migration_kept_waiting_by_another_writer_is_index_busy(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    connect(path, migrate=False).close()
    holder = connect(path, migrate=False)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(IndexBusy, match="is busy"):
            connect(path, busy_timeout_s=0.05)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_sqlite_full_is_told_by_its_error_code() -> None:
    conn = sqlean.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t(a)")
        conn.execute("PRAGMA max_page_count = 2")
        with pytest.raises(sqlean.OperationalError) as caught:
            conn.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 100)
    finally:
        conn.close()
    assert db.is_disk_full(caught.value)
    assert not db.is_disk_full(sqlean.OperationalError("database or disk is full"))
    assert not db.is_disk_full(sqlean.OperationalError("database is locked"))
    assert not db.is_disk_full(ValueError("database or disk is full"))
