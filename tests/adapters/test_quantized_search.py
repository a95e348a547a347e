"""The quantized vector path: sign-bit Hamming scan plus exact rescoring (adapters/quantized.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from askvault.adapters import quantized, search_store, store
from askvault.adapters.db import Connection, connect, write_transaction
from askvault.records import Fingerprint, SearchFilters

DIM = 384
CHUNKS = 1500
PER_NOTE = 5


def _h(name: object) -> str:
    """A text hash as the index keys texts (hex sha256)."""
    return hashlib.sha256(str(name).encode()).hexdigest()


def _vectors(n: int, seed: int) -> np.ndarray:
    """Unit vectors with the low-rank structure of sentence embeddings (not white noise)."""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(1).standard_normal((24, DIM)).astype(np.float32)
    v = rng.standard_normal((n, 24)).astype(np.float32) @ basis
    v += 0.3 * rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[Connection, store.FingerprintRow, np.ndarray]]:
    conn = connect(tmp_path / "index.sqlite")
    vectors = _vectors(CHUNKS, seed=5)
    with write_transaction(conn):
        for note in range(1, CHUNKS // PER_NOTE + 1):
            folder = "answers" if note % 10 == 0 else f"f{note % 3}"
            conn.execute(
                "INSERT INTO notes(id, path, folder, title, size, mtime_ns, inode, content_hash,"
                " derived, indexed_at) VALUES (?,?,?,?,0,0,0,'',?,0)",
                (note, f"{folder}/n{note}.md", folder, f"n{note}", int(folder == "answers")),
            )
        conn.executemany(
            "INSERT INTO chunks(id, note_id, position, text_hash, heading_path, start_line,"
            " end_line, text) VALUES (?,?,?,?,'[]',1,2,'x')",
            [(i + 1, i // PER_NOTE + 1, i % PER_NOTE, _h(i + 1)) for i in range(CHUNKS)],
        )
        fp = store.ensure_fingerprint(conn, Fingerprint("m", "0" * 12, DIM), 0.0)
        store.store_vectors(conn, fp, [(_h(i + 1), vectors[i].tolist()) for i in range(CHUNKS)])
    yield conn, fp, vectors
    conn.close()


def _quantized(
    conn: Connection,
    fp: store.FingerprintRow,
    query: np.ndarray,
    k: int,
    filters: SearchFilters | None = None,
) -> list[tuple[int, float]] | None:
    filters = filters or SearchFilters()
    return quantized.search(
        conn,
        fp.bits_table,
        fp.id,
        query,
        k=k,
        min_chunks=0,
        exclude_ids=lambda: search_store._derived_chunk_ids(conn, filters),
        allow_ids=lambda: search_store._allowed_chunk_ids(conn, filters),
    )


def _queries(vectors: np.ndarray) -> list[np.ndarray]:
    rng = np.random.default_rng(9)
    out = []
    for i in rng.integers(0, len(vectors), 8):
        q = vectors[i] + 0.05 * rng.standard_normal(DIM).astype(np.float32)
        out.append(q / np.linalg.norm(q))
    return out


def test_quantized_search_returns_the_exact_top_hits(index) -> None:
    conn, fp, vectors = index
    for q in _queries(vectors):
        exact = search_store.vector_chunks(conn, fp.id, q.tolist(), k=10)
        got = _quantized(conn, fp, q, 10)
        assert got is not None
        assert [cid for cid, _ in got] == [cid for cid, _ in exact]
        assert [d for _, d in got] == pytest.approx([d for _, d in exact], abs=1e-5)


def test_quantized_search_applies_filters_before_picking_candidates(index) -> None:
    conn, fp, vectors = index
    folders = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT c.id, n.folder FROM chunks c JOIN notes n ON n.id = c.note_id"
        )
    }
    q = _queries(vectors)[0]
    plain = _quantized(conn, fp, q, 50)
    assert plain is not None and len(plain) == 50
    assert all(folders[cid] != "answers" for cid, _ in plain)
    only = _quantized(conn, fp, q, 50, SearchFilters(folders=("f1",)))
    assert only is not None and len(only) == 50
    assert all(folders[cid] == "f1" for cid, _ in only)
    exact = search_store.vector_chunks(
        conn, fp.id, q.tolist(), k=50, filters=SearchFilters(folders=("f1",))
    )
    assert [cid for cid, _ in only[:10]] == [cid for cid, _ in exact[:10]]
    with_derived = _quantized(conn, fp, q, CHUNKS, SearchFilters(include_derived=True))
    assert with_derived is not None and len(with_derived) == CHUNKS


def test_quantized_search_returns_nothing_when_no_chunk_passes(index) -> None:
    conn, fp, vectors = index
    assert _quantized(conn, fp, vectors[0], 10, SearchFilters(folders=("nowhere",))) == []


def test_a_small_index_is_searched_exactly_from_the_cache(index) -> None:
    conn, fp, vectors = index
    assert (
        quantized.search(
            conn,
            fp.bits_table,
            fp.id,
            vectors[0],
            k=10,
            exclude_ids=lambda: None,
            allow_ids=lambda: None,
        )
        is None
    )
    for q in _queries(vectors):
        got = search_store.vector_chunks(conn, fp.id, q.tolist(), k=40, bits_table=fp.bits_table)
        # The truth, by numpy over every chunk that passes (derived notes left out).
        derived = set(search_store._derived_chunk_ids(conn, SearchFilters()) or [])
        ids = np.array([i + 1 for i in range(CHUNKS) if i + 1 not in derived])
        distance = 1.0 - vectors[ids - 1] @ q / np.linalg.norm(q)
        truth = ids[np.lexsort((ids, distance))][:40]
        assert [cid for cid, _ in got] == truth.tolist()


def test_the_exact_scan_finds_k_chunks_past_copies_orphans_and_filters(index) -> None:
    conn, fp, vectors = index
    q = vectors[3]
    with write_transaction(conn):
        # Cached texts that no chunk holds any more, all nearer than any chunk.
        store.store_vectors(conn, fp, [(_h(f"orphan{i}"), q.tolist()) for i in range(300)])
        # A copy of chunk 4's text in another note: both chunks come back.
        conn.execute(
            "INSERT INTO chunks(id, note_id, position, text_hash, heading_path,"
            " start_line, end_line, text) VALUES (9002, 2, 99, ?, '[]', 1, 2, 'x')",
            (_h(4),),
        )
    got = search_store.vector_chunks(conn, fp.id, q.tolist(), k=50)
    assert len(got) == 50 and {4, 9002} <= {cid for cid, _ in got[:2]}
    only = search_store.vector_chunks(
        conn, fp.id, q.tolist(), k=20, filters=SearchFilters(folders=("f1",))
    )
    folders = dict(
        conn.execute(
            "SELECT c.id, n.folder FROM chunks c JOIN notes n ON n.id = c.note_id"
        ).fetchall()
    )
    assert len(only) == 20 and all(folders[cid] == "f1" for cid, _ in only)


def test_deleting_a_note_removes_its_bit_rows(index) -> None:
    conn, fp, vectors = index
    before = conn.execute(f"SELECT count(*) FROM {fp.bits_table}").fetchone()[0]
    assert before == CHUNKS
    with write_transaction(conn):
        assert store.delete_note(conn, "f1/n1.md")
    assert conn.execute(f"SELECT count(*) FROM {fp.bits_table}").fetchone()[0] == CHUNKS - 5
    got = _quantized(conn, fp, vectors[0], 10)
    assert got is not None and all(cid > 5 for cid, _ in got)


def test_an_index_without_a_bit_table_gets_it_back_filled(index) -> None:
    conn, fp, vectors = index
    with write_transaction(conn):
        conn.execute(f"DROP TABLE {fp.bits_table}")
    assert _quantized(conn, fp, vectors[0], 10) is None  # falls back to exact KNN
    with write_transaction(conn):
        store.ensure_fingerprint(conn, fp.fingerprint, 0.0)
    assert conn.execute(f"SELECT count(*) FROM {fp.bits_table}").fetchone()[0] == CHUNKS
    got = _quantized(conn, fp, vectors[0], 1)
    assert got is not None and got[0][0] == 1


def test_a_dimension_not_divisible_by_eight_has_no_bit_table(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.sqlite")
    try:
        with write_transaction(conn):
            fp = store.ensure_fingerprint(conn, Fingerprint("odd", "0" * 12, 6), 0.0)
        assert not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ?", (fp.bits_table,)
        ).fetchone()
        assert (
            search_store.vector_chunks(conn, fp.id, [1.0] * 6, k=3, bits_table=fp.bits_table) == []
        )
    finally:
        conn.close()


def test_storing_an_already_cached_text_again_adds_only_missing_bit_rows(
    index: tuple[Connection, store.FingerprintRow, np.ndarray],
) -> None:
    conn, fp, vectors = index
    with write_transaction(conn):
        # A second chunk with the text of chunk 1 (copied in the same note), no vec row yet.
        conn.execute(
            "INSERT INTO chunks(id, note_id, position, text_hash, heading_path,"
            " start_line, end_line, text) VALUES (9001, 1, 99, ?, '[]', 1, 2, 'x')",
            (_h(1),),
        )
        added = store.store_vectors(
            conn, fp, [(_h(1), vectors[0].tolist()), (_h("fresh"), vectors[1].tolist())]
        )
    assert added == 1  # chunk 9001 only; chunk 1 kept its row, 'fresh' has no chunk
    assert store.count_missing_vectors(conn, fp) == 0
    assert conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == CHUNKS + 1
    bits = conn.execute(f"SELECT count(*) FROM {fp.bits_table}").fetchone()[0]
    assert bits == CHUNKS + 1
    assert store.store_vectors(conn, fp, []) == 0


def test_a_zero_or_nan_vector_is_left_out_of_both_vector_paths(
    index: tuple[Connection, store.FingerprintRow, np.ndarray],
) -> None:
    conn, fp, vectors = index
    zero, nan = np.zeros(DIM, dtype=np.float32), np.full(DIM, np.nan, dtype=np.float32)
    with write_transaction(conn):
        for cid, vec in ((7, zero), (8, nan)):
            conn.execute(
                "UPDATE embedding_cache SET vector = ? WHERE text_key = ?",
                (vec.tobytes(), store.text_key(_h(cid))),
            )
    query = vectors[7]
    exact = search_store.vector_chunks(conn, fp.id, query.tolist(), k=CHUNKS)
    assert 8 not in {cid for cid, _ in exact}
    assert all(np.isfinite(d) for _, d in exact)
    found = _quantized(conn, fp, query, k=CHUNKS)
    assert found is not None and 8 not in {cid for cid, _ in found}
    assert all(np.isfinite(d) for _, d in found)
