"""The embedding cache (issue 11): one float vector per text and model in a rowid table keyed
by raw hash bytes, the migration that converts an older index in place (resumable), and the
promise that unchanged text is never embedded twice."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from askvault.adapters import store
from askvault.adapters.db import _split_sql, connect, write_transaction
from askvault.adapters.migrations import MIGRATIONS, m036_embedding_cache
from askvault.adapters.ollama import PROBE_TEXT
from askvault.app.clients import OllamaClients
from askvault.services.index.index_pass import index_vault
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.settings_factory import settings_for
from support.vault_factory import make_fixture_vault

DIM = 16
OLD_ROWS = 23


def _hash(i: int) -> str:
    return hashlib.sha256(f"text {i}".encode()).hexdigest()


def _vector(i: int) -> np.ndarray:
    v = np.random.default_rng(i).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _old_layout_index(path: Path) -> None:
    """An index as askvault made it before m036: vectors in the WITHOUT ROWID `embeddings`
    table keyed by hex hashes, and again per chunk in a float vec0 table."""
    conn = connect(path, migrate=False)
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    for name, sql in MIGRATIONS:
        if callable(sql):
            continue
        for statement in _split_sql(sql):
            conn.execute(statement)
        conn.execute("INSERT INTO migrations VALUES (?, 0)", (name,))
    conn.execute("INSERT INTO fingerprints VALUES (1, 'm@0', 'm', '0', ?, 'active', 0)", (DIM,))
    conn.execute(
        "INSERT INTO notes(id, path, folder, title, size, mtime_ns, inode, content_hash,"
        " indexed_at) VALUES (1, 'n.md', '', 'n', 0, 0, 0, '', 0)"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE vec_fp1 USING vec0(chunk_id INTEGER PRIMARY KEY, "
        f"embedding float[{DIM}] distance_metric=cosine, derived INTEGER)"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE vecbits_fp1 USING vec0(chunk_id INTEGER PRIMARY KEY, "
        f"embedding bit[{DIM}])"
    )
    for i in range(OLD_ROWS):
        conn.execute("INSERT INTO embeddings VALUES (1, ?, ?)", (_hash(i), _vector(i).tobytes()))
        if i < OLD_ROWS - 3:  # three cached texts of notes deleted since: kept in the cache
            conn.execute(
                "INSERT INTO chunks(id, note_id, position, text_hash, heading_path,"
                " start_line, end_line, text) VALUES (?, 1, ?, ?, '[]', 1, 1, 'x')",
                (i + 1, i, _hash(i)),
            )
            conn.execute(
                "INSERT INTO vec_fp1(chunk_id, embedding, derived) VALUES (?, ?, 0)",
                (i + 1, _vector(i).tobytes()),
            )
            conn.execute(
                "INSERT INTO vecbits_fp1(chunk_id, embedding) VALUES (?, vec_quantize_binary(?))",
                (i + 1, _vector(i).tobytes()),
            )
    conn.close()


def _assert_converted(path: Path) -> None:
    conn = connect(path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "embeddings" not in tables and "vec_fp1" not in tables
        assert "m036_embedding_cache" in {r[0] for r in conn.execute("SELECT name FROM migrations")}
        rows = conn.execute(
            "SELECT text_key, vector FROM embedding_cache WHERE fingerprint_id = 1"
        ).fetchall()
        assert len(rows) == OLD_ROWS  # every vector once, orphans included
        by_key = {bytes(k): bytes(v) for k, v in rows}
        for i in range(OLD_ROWS):
            assert by_key[bytes.fromhex(_hash(i))] == _vector(i).tobytes()
        assert all(len(k) == 32 for k in by_key)  # raw sha256 bytes, not 64 hex characters
        fp = store.active_fingerprint(conn)
        assert fp is not None
        assert store.count_pending(conn, fp) == 0
        assert store.count_missing_vectors(conn, fp) == 0
        from askvault.adapters import search_store

        hits = search_store.vector_chunks(
            conn, fp.id, _vector(4).tolist(), k=3, bits_table=fp.bits_table
        )
        assert hits[0][0] == 5
    finally:
        conn.close()


def test_an_old_layout_index_is_converted_in_place_keeping_every_vector(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    _old_layout_index(path)
    _assert_converted(path)


def test_the_cache_migration_says_what_it_does_with_a_progress_line(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "index.sqlite"
    _old_layout_index(path)
    with caplog.at_level("WARNING", logger="askvault.adapters.db"):
        connect(path).close()
        connect(path).close()
    lines = [r.getMessage() for r in caplog.records]
    assert any("moving 23 cached vectors" in line for line in lines)
    assert any("23 / 23 cached vectors moved" in line for line in lines)
    assert sum("moving" in line for line in lines) == 1  # once, not at every open


def test_an_interrupted_cache_migration_resumes_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    _old_layout_index(path)
    conn = connect(path, migrate=False)
    with pytest.raises(InterruptedError):
        m036_embedding_cache(
            conn, write_transaction, lambda line: None, batch_rows=5, stop_after_batches=2
        )
    # Half moved: each row is in exactly one of the two tables.
    left = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    moved = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
    assert (left, moved) == (OLD_ROWS - 10, 10)
    conn.close()
    _assert_converted(path)


def test_two_openers_running_the_cache_migration_at_once_both_finish(tmp_path: Path) -> None:
    # One opener moves the first batch; before its second, another opener runs the whole
    # step on its own connection (two processes opening an old index at once). The first
    # must then find the old table gone and stop, not fail on it ("no such table").
    path = tmp_path / "index.sqlite"
    _old_layout_index(path)
    first, other = connect(path, migrate=False), connect(path, migrate=False)
    entered = 0

    @contextlib.contextmanager
    def racing(conn: Any) -> Iterator[None]:
        nonlocal entered
        entered += 1
        if entered == 4:  # the cache table, the counts, one batch; then the other opener
            m036_embedding_cache(other, write_transaction, lambda line: None, batch_rows=5)
        with write_transaction(conn):
            yield

    try:
        m036_embedding_cache(first, racing, lambda line: None, batch_rows=5)
        assert entered >= 4
    finally:
        first.close()
        other.close()
    _assert_converted(path)


def test_a_cache_migration_killed_mid_batch_resumes_after_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    _old_layout_index(path)
    # The migration in a child that is killed (SIGKILL) while a batch's transaction is open.
    script = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        from askvault.adapters.db import connect, write_transaction
        from askvault.adapters.migrations import m036_embedding_cache
        conn = connect(Path({str(path)!r}), migrate=False)
        batches = []
        def report(line):
            pass
        class Killing:
            def __init__(self, conn): self.conn = conn
            def __enter__(self):
                conn.execute("BEGIN IMMEDIATE")
                return conn
            def __exit__(self, *exc):
                batches.append(1)
                if len(batches) == 5:  # table made, counts read, 2 batches in, the 3rd open
                    os.kill(os.getpid(), signal.SIGKILL)
                conn.execute("COMMIT")
        m036_embedding_cache(conn, Killing, report, batch_rows=5)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    conn = connect(path, migrate=False)
    moved = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
    left = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    conn.close()
    assert (moved, left) == (10, OLD_ROWS - 10)  # the open batch was rolled back whole
    _assert_converted(path)


def test_a_new_index_keeps_one_float_vector_per_text_and_no_float_vec0_table(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    vault = make_fixture_vault(tmp_path / "vault")
    shutil.copy(vault / "Welcome.md", vault / "Welcome copy.md")  # same texts twice
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    try:
        distinct = conn.execute("SELECT count(DISTINCT text_hash) FROM chunks").fetchone()[0]
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        cached = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
        assert cached == distinct < chunks
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert not any(n.startswith("vec_fp") for n in names)
        # No cache row spills to an overflow page.
        overflow = conn.execute(
            "SELECT count(*) FROM dbstat WHERE name = 'embedding_cache' AND pagetype = 'overflow'"
        ).fetchone()[0]
        assert overflow == 0
    finally:
        conn.close()


def test_switching_back_to_an_earlier_model_after_a_restart_embeds_nothing(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    vault = make_fixture_vault(tmp_path / "vault")
    first = settings_for(vault, tmp_path / "state", fake_ollama.url)
    other = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"ollama.embed_model": "all-minilm"}
    )
    index_vault(first, OllamaClients(first))
    # Builds all-minilm and promotes it; nomic's tables are dropped.
    index_vault(other, OllamaClients(other))
    conn = connect(other.db_path)
    active = store.active_fingerprint(conn)
    conn.close()
    assert active is not None and active.fingerprint.model == "all-minilm"
    calls = fake_ollama.embed_calls_without(PROBE_TEXT)  # the dimension probe aside
    report = index_vault(first, OllamaClients(first))  # back to the first model, a new process
    assert report.embed.texts_embedded == 0 and report.pending_embeddings == 0
    assert fake_ollama.embed_calls_without(PROBE_TEXT) == calls
    conn = connect(first.db_path)
    active = store.active_fingerprint(conn)
    missing = store.count_missing_vectors(conn, active) if active else -1
    conn.close()
    assert active is not None and active.fingerprint.model == FAKE_EMBED_MODEL
    assert missing == 0


def test_a_note_deleted_and_restored_later_embeds_nothing(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    vault = make_fixture_vault(tmp_path / "vault")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    kept = (vault / "Embeds.md").read_bytes()
    (vault / "Embeds.md").unlink()
    index_vault(settings, OllamaClients(settings))
    (vault / "Restored").mkdir()
    (vault / "Restored" / "Embeds again.md").write_bytes(kept)
    before = len(fake_ollama.embedded_inputs)
    report = index_vault(settings, OllamaClients(settings))
    assert report.pending_embeddings == 0
    assert len(fake_ollama.embedded_inputs) == before
