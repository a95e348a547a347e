"""The SQL of the distance calibration (services/index/calibration.py): which notes' titles can
calibrate a model's cut-off, and a title's exact distance to the nearest chunk of another
note. Derived notes (answers) are left out, as a search leaves them out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from askvault.adapters.db import Connection, serialize_float32

# Texts taken nearest first per round: a note's own chunks rarely fill the first 64.
_FIRST_TEXTS = 64


def count_source_notes(conn: Connection) -> int:
    """The vault's notes (answers left out): what a calibration counts to know when the
    vault has changed enough to calibrate again."""
    return int(conn.execute("SELECT count(*) FROM notes WHERE derived = 0").fetchone()[0])


def calibration_notes(conn: Connection, fingerprint_id: int) -> list[tuple[int, str, str]]:
    """(note id, path, title) of every note (answers left out) with at least one chunk
    whose text has a vector of `fingerprint_id`, by path."""
    rows = conn.execute(
        "SELECT n.id, n.path, n.title FROM notes n WHERE n.derived = 0 AND EXISTS "
        "(SELECT 1 FROM chunks c JOIN embedding_cache e ON e.fingerprint_id = ? "
        "AND e.text_key = unhex(c.text_hash) WHERE c.note_id = n.id) ORDER BY n.path",
        (fingerprint_id,),
    ).fetchall()
    return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]


def nearest_other_note_distance(
    conn: Connection, fingerprint_id: int, vector: Sequence[float], note_id: int
) -> float | None:
    """The exact cosine distance from `vector` to the nearest chunk of a note other than
    `note_id` (answers left out), None when no other note has a vector.

    The cached vectors are scanned nearest first (sqlite-vec's distance in SQL, as the exact
    vector channel does) in growing numbers until one of them is a text of another note."""
    blob = serialize_float32(list(vector))
    total = int(
        conn.execute(
            "SELECT count(*) FROM embedding_cache WHERE fingerprint_id = ?", (fingerprint_id,)
        ).fetchone()[0]
    )
    texts = _FIRST_TEXTS
    while True:
        row = conn.execute(
            "SELECT min(t.d) FROM (SELECT text_key, vec_distance_cosine(vector, ?) AS d "
            "FROM embedding_cache WHERE fingerprint_id = ? AND d IS NOT NULL ORDER BY d "
            "LIMIT ?) t WHERE EXISTS (SELECT 1 FROM chunks c JOIN notes n ON n.id = c.note_id "
            "WHERE c.text_hash = lower(hex(t.text_key)) AND c.note_id != ? AND n.derived = 0)",
            (blob, fingerprint_id, texts, note_id),
        ).fetchone()
        if row[0] is not None and math.isfinite(row[0]):
            return float(row[0])
        if texts >= total:
            return None
        texts *= 4
