"""Quantized vector search: a Hamming scan of sign bits, then exact cosine rescoring.

Each fingerprint has a per-chunk vec0 table of sign bits (`bit[D]`, filled by
store.py); the float vectors live once per text in the embedding cache. vec0's own
KNN picks its top k with a pass over each 1024-row chunk per result, so its cost
grows with n * k: measured at 100k chunks, 9 ms for k = 100 but 42 ms for k = 400,
far too slow at 1M for the ~1000 candidates good recall needs. So the bits are read
straight from the vec0 table's storage (`<table>_chunks` and
`<table>_vector_chunks00`, the layout of sqlite-vec 0.1.x) and scanned with numpy:
4 ms at 100k. The best candidates are then rescored exactly from the float vectors
of the embedding cache. Filters are masks applied before the candidates are picked.
Below `MIN_CHUNKS`, or when that storage does not look as expected (a future
sqlite-vec), callers search exactly (search_store.vector_chunks).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import sqlean

from askvault.adapters.db import Connection

# Below this many chunks the exact scan of the cache is fast enough (measured:
# bench/search_bench.py).
MIN_CHUNKS = 20_000
# Candidates rescored exactly: at least this many, and at least RESCORE_FACTOR * k.
RESCORE_MIN = 200
RESCORE_FACTOR = 6

IdSource = Callable[[], "list[int] | None"]


def search(
    conn: Connection,
    bits_table: str,
    fingerprint_id: int,
    query: np.ndarray,
    *,
    k: int,
    exclude_ids: IdSource,
    allow_ids: IdSource,
    min_chunks: int = MIN_CHUNKS,
) -> list[tuple[int, float]] | None:
    """(chunk id, cosine distance) of the k nearest chunks, best first, ties by id;
    None when the index is small or its bit storage cannot be read (search exactly).

    `exclude_ids` and `allow_ids` give chunk ids to leave out and the only ids
    allowed (None: no constraint); they are called only when the scan goes ahead.
    """
    scan = _read_bits(conn, bits_table, query.shape[0])
    if scan is None:
        return None
    ids, valid, bits = scan
    if int(valid.sum()) < min_chunks:
        return None
    mask = valid
    excluded = exclude_ids()
    if excluded:
        mask &= ~np.isin(ids, np.asarray(excluded, dtype=np.int64))
    allowed = allow_ids()
    if allowed is not None:
        mask &= np.isin(ids, np.asarray(allowed, dtype=np.int64))
    passing = int(mask.sum())
    if passing == 0:
        return []
    query_bits = np.packbits(query > 0, bitorder="little")
    distance = _hamming(bits, query_bits)
    distance[~mask] = np.iinfo(np.int32).max
    n = min(passing, max(RESCORE_MIN, RESCORE_FACTOR * k))
    picked = ids[np.argpartition(distance, n - 1)[:n]] if n < len(ids) else ids[mask]
    return _rescore(conn, fingerprint_id, query, picked.tolist(), k)


def _read_bits(
    conn: Connection, table: str, dim: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(row ids, validity, packed bits) of every slot of the vec0 bit table, or None."""
    width = dim // 8
    try:
        # ORDER BY v.rowid, not c.chunk_id (equal values): ordered by the table scanned
        # first, SQLite needs no temp B-tree, which copied every blob once more (1M chunks
        # at 384 dims: 20 ms instead of 37-56 ms).
        rows = conn.execute(
            f'SELECT c.size, c.validity, c.rowids, v.vectors FROM "{table}_chunks" c '
            f'JOIN "{table}_vector_chunks00" v ON v.rowid = c.chunk_id ORDER BY v.rowid'
        ).fetchall()
    except sqlean.OperationalError:
        return None
    if not rows:
        return None
    for size, validity, rowids, vectors in rows:
        if len(validity) * 8 != size or len(rowids) != 8 * size or len(vectors) != width * size:
            return None
    ids = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.int64)
    valid = np.unpackbits(
        np.frombuffer(b"".join(r[1] for r in rows), dtype=np.uint8), bitorder="little"
    ).astype(bool)
    bits = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.uint8).reshape(-1, width)
    return ids, valid, bits


def _hamming(bits: np.ndarray, query_bits: np.ndarray) -> np.ndarray:
    """Hamming distance of each row of `bits` to `query_bits` (both packed uint8)."""
    if bits.shape[1] % 8 == 0:
        # Eight bytes at a time: three times faster than byte-wise on 384 bits.
        bits, query_bits = bits.view(np.uint64), query_bits.view(np.uint64)
    return np.bitwise_count(bits ^ query_bits).sum(axis=1, dtype=np.int32)


def _rescore(
    conn: Connection,
    fingerprint_id: int,
    query: np.ndarray,
    candidates: list[int],
    k: int,
) -> list[tuple[int, float]]:
    """Exact cosine distances of the candidates, best k, ties by chunk id."""
    # The embedding cache is a plain table: one indexed lookup per candidate, where a
    # vec0 point lookup costs 15 us (measured). CROSS JOIN fixes the order: left to the
    # planner, it scanned every cached vector of the fingerprint (1 s at 10k chunks).
    rows = dict(
        conn.execute(
            "SELECT c.id, e.vector FROM json_each(?) j CROSS JOIN chunks c ON c.id = j.value "
            "CROSS JOIN embedding_cache e ON e.fingerprint_id = ? "
            "AND e.text_key = unhex(c.text_hash)",
            (json.dumps(candidates), fingerprint_id),
        ).fetchall()
    )
    if not rows:
        return []
    found = np.fromiter(rows.keys(), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(rows.values()), dtype=np.float32).reshape(len(rows), -1)
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(query))
    similarity = (matrix @ query) / np.where(norms == 0, 1.0, norms)
    distance = (1.0 - similarity).astype(np.float32)
    ranked = np.isfinite(distance)  # a NaN vector cannot be ranked (as in exact search)
    found, distance = found[ranked], distance[ranked]
    order = np.lexsort((found, distance))[:k]
    return [(int(found[i]), float(distance[i])) for i in order]
