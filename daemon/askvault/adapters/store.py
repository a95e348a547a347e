"""The index store: notes, chunks, links, FTS rows and vectors in one SQLite file.

Callers wrap writes in `db.write_transaction`; functions here never commit on
their own, so one note is always one transaction. A float vector is stored once per
distinct text and model, in the content-addressed cache `embedding_cache` (a rowid table
keyed by fingerprint and the 32 raw bytes of the text's sha256; migration
m036_embedding_cache): renames, copies, restarts and switching back to an earlier model
cost no embedding. Per chunk there is only a vec0 table of sign bits (`bit[D]`, 48 bytes at
384 dims) for the vector scan (see adapters/quantized.py), filled from the cache; the
floats the scan rescores are read from the cache. Indexes whose bit table is missing get
it created and back-filled by the first write that touches vectors.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from askvault.adapters import link_store
from askvault.adapters.db import Connection, serialize_float32
from askvault.core.backoff import delay_after
from askvault.core.embed_order import BacklogText
from askvault.core.query import has_cjk
from askvault.records import Chunk, Fingerprint, FingerprintState, NoteFile, ParsedNote, Skipped

# A text Ollama refused is tried again after 1 min, doubling to 1 h (its row counts the tries).
EMBED_RETRY_FIRST_S = 60.0
EMBED_RETRY_MAX_S = 3600.0


@dataclass(frozen=True)
class StoredNote:
    """What the index remembers of a note for change detection."""

    id: int
    path: str
    size: int
    mtime_ns: int
    inode: int
    content_hash: str


@dataclass(frozen=True)
class FingerprintRow:
    id: int
    fingerprint: Fingerprint
    state: FingerprintState

    @property
    def bits_table(self) -> str:
        return bits_table_name(self.id)


def vec_table_name(fingerprint_id: int) -> str:
    """The per-chunk float vec0 table of indexes made before m036_embedding_cache (dropped
    by it: the floats are read from the embedding cache)."""
    return f"vec_fp{int(fingerprint_id)}"


def bits_table_name(fingerprint_id: int) -> str:
    """The per-chunk vec0 table of sign bits of a fingerprint."""
    return f"vecbits_fp{int(fingerprint_id)}"


def stored_notes(conn: Connection) -> dict[str, StoredNote]:
    """Every indexed note by path, with its stamps and content hash."""
    rows = conn.execute("SELECT id, path, size, mtime_ns, inode, content_hash FROM notes")
    return {r[1]: StoredNote(*r) for r in rows}


def stored_note(conn: Connection, path: str) -> StoredNote | None:
    """The indexed note at `path`, with its stamps and content hash; None if not indexed."""
    row = conn.execute(
        "SELECT id, path, size, mtime_ns, inode, content_hash FROM notes WHERE path = ?", (path,)
    ).fetchone()
    return StoredNote(*row) if row else None


def content_hashes(conn: Connection, paths: Iterable[str]) -> dict[str, str]:
    """The indexed content hash of each of `paths` that has a note row."""
    wanted = list(dict.fromkeys(paths))
    found: dict[str, str] = {}
    for start in range(0, len(wanted), 500):
        part = wanted[start : start + 500]
        marks = ",".join("?" * len(part))
        found.update(
            conn.execute(
                f"SELECT path, content_hash FROM notes WHERE path IN ({marks})", part
            ).fetchall()
        )
    return found


def folder_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def upsert_note(
    conn: Connection,
    parsed: ParsedNote,
    file: NoteFile,
    chunks: Sequence[Chunk],
    *,
    derived: bool = False,
    now: float | None = None,
) -> int:
    """Write a note's row, chunks, links, FTS rows and vec rows; return the note id.

    On a change, chunks whose text and heading path are unchanged keep their rows (FTS,
    vectors): only the chunks an edit touched are deleted and inserted, so an append to a
    long note rewrites one chunk, not thirty (DESIGN §5). When the note's title or aliases
    changed (a rename, mostly), the kept chunks' word rows are updated in place; vector
    rows carry no note metadata, so they stay as they are. New chunks get vectors from the
    embedding cache; the rest wait in the backlog.
    """
    now = time.time() if now is None else now
    folder = folder_of(parsed.path)
    aliases_json = _json(parsed.aliases)
    existing = conn.execute(
        "SELECT id, folder, title, aliases, type, derived FROM notes WHERE path = ?",
        (parsed.path,),
    ).fetchone()
    values = (
        parsed.path,
        folder,
        parsed.title,
        file.stamp.size,
        file.stamp.mtime_ns,
        file.stamp.inode,
        file.content_hash,
        aliases_json,
        _json(parsed.tags),
        parsed.type,
        _json(parsed.sources),
        _json(parsed.related),
        _json([[h.level, h.text, h.line] for h in parsed.headings]),
        _json(parsed.block_ids),
        _json(parsed.frontmatter),
        _json(list(parsed.problems) + list(file.problems)),
        int(derived),
        now,
    )
    to_insert = list(chunks)
    if existing:
        note_id = existing[0]
        same_words = tuple(existing[2:4]) == (parsed.title, aliases_json)
        kept, to_insert = _match_chunks(conn, note_id, chunks)
        stale = [
            cid
            for (cid,) in conn.execute("SELECT id FROM chunks WHERE note_id = ?", (note_id,))
            if cid not in kept
        ]
        _delete_chunks(conn, stale)
        conn.executemany(
            "UPDATE chunks SET position = ?, start_line = ?, end_line = ? WHERE id = ?",
            [(c.position, c.start_line, c.end_line, cid) for cid, c in kept.items()],
        )
        if not same_words:
            _rewrite_word_rows(conn, parsed, kept)
        conn.execute("DELETE FROM links WHERE note_id = ?", (note_id,))
        conn.execute(
            "UPDATE notes SET path=?, folder=?, title=?, size=?, mtime_ns=?, inode=?, "
            "content_hash=?, aliases=?, tags=?, type=?, sources=?, related=?, headings=?, "
            "block_ids=?, frontmatter=?, problems=?, derived=?, indexed_at=?, date_key=NULL "
            "WHERE id=?",
            (*values, note_id),
        )
    else:
        note_id = conn.execute(
            "INSERT INTO notes(path, folder, title, size, mtime_ns, inode, content_hash, aliases,"
            " tags, type, sources, related, headings, block_ids, frontmatter, problems, derived,"
            " indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            values,
        ).lastrowid
    link_store.file_note_names(
        conn,
        int(note_id),
        parsed.path,
        parsed.aliases,
        (parsed.path, json.loads(existing[3])) if existing else None,
    )
    aliases_text = " ".join(parsed.aliases)
    new_ids = []
    for chunk in to_insert:
        chunk_id = conn.execute(
            "INSERT INTO chunks(note_id, position, text_hash, heading_path, start_line, end_line,"
            " text) VALUES (?,?,?,?,?,?,?)",
            (
                note_id,
                chunk.position,
                chunk.text_hash,
                _json(chunk.heading_path),
                chunk.start_line,
                chunk.end_line,
                chunk.text,
            ),
        ).lastrowid
        new_ids.append(chunk_id)
        conn.execute(
            "INSERT INTO chunks_fts(rowid, title, aliases, headings, body) VALUES (?,?,?,?,?)",
            (chunk_id, parsed.title, aliases_text, " ".join(chunk.heading_path), chunk.text),
        )
        # Scripts written without spaces between words also go in the trigram index, by
        # the same character class the query side uses (core/query.py).
        if has_cjk(chunk.text) or has_cjk(parsed.title):
            conn.execute(
                "INSERT INTO chunks_trigram(rowid, body) VALUES (?, ?)",
                (chunk_id, parsed.title + "\n" + chunk.text),
            )
    # Each link with the note it resolves to now; links elsewhere that this note's names
    # can change were resolved again by `file_note_names` (adapters/link_store.py).
    conn.executemany(
        link_store.INSERT_LINK, link_store.link_rows(conn, int(note_id), parsed.path, parsed.links)
    )
    if new_ids:
        for fp in live_fingerprints(conn):
            copy_cached_vectors(conn, fp, chunk_ids=new_ids)
    conn.execute("DELETE FROM skipped WHERE path = ?", (parsed.path,))
    return int(note_id)


def _rewrite_word_rows(conn: Connection, parsed: ParsedNote, kept: dict[int, Chunk]) -> None:
    """Give kept chunks the note's new title and aliases in the word indexes (FTS5 updates
    a row by rowid, a point operation)."""
    aliases_text = " ".join(parsed.aliases)
    conn.executemany(
        "UPDATE chunks_fts SET title = ?, aliases = ? WHERE rowid = ?",
        [(parsed.title, aliases_text, cid) for cid in kept],
    )
    conn.executemany("DELETE FROM chunks_trigram WHERE rowid = ?", [(cid,) for cid in kept])
    conn.executemany(
        "INSERT INTO chunks_trigram(rowid, body) VALUES (?, ?)",
        [
            (cid, parsed.title + "\n" + c.text)
            for cid, c in kept.items()
            if has_cjk(c.text) or has_cjk(parsed.title)
        ],
    )


def move_note(conn: Connection, old_path: str, new_path: str) -> bool:
    """Give the note at `old_path` the path `new_path` (a rename or move: the same bytes),
    keeping its chunk, word and vector rows; `upsert_note` then updates what the new name
    changes. False when `old_path` is not indexed or `new_path` already is."""
    if conn.execute("SELECT 1 FROM notes WHERE path = ?", (new_path,)).fetchone():
        return False
    moved = conn.execute(
        "UPDATE notes SET path = ?, folder = ? WHERE path = ?",
        (new_path, folder_of(new_path), old_path),
    ).rowcount
    if moved:
        note_id, aliases = conn.execute(
            "SELECT id, aliases FROM notes WHERE path = ?", (new_path,)
        ).fetchone()
        link_store.file_note_names(
            conn, note_id, new_path, json.loads(aliases), (old_path, json.loads(aliases))
        )
    return bool(moved)


def _match_chunks(
    conn: Connection, note_id: int, chunks: Sequence[Chunk]
) -> tuple[dict[int, Chunk], list[Chunk]]:
    """Pair new chunks with stored ones of the same text and heading path: (kept by id, new)."""
    stored: dict[tuple[str, str], list[int]] = {}
    for cid, text_hash, heading_path in conn.execute(
        "SELECT id, text_hash, heading_path FROM chunks WHERE note_id = ? ORDER BY position",
        (note_id,),
    ):
        stored.setdefault((text_hash, heading_path), []).append(cid)
    kept: dict[int, Chunk] = {}
    new: list[Chunk] = []
    for chunk in chunks:
        ids = stored.get((chunk.text_hash, _json(chunk.heading_path)))
        if ids:
            kept[ids.pop(0)] = chunk
        else:
            new.append(chunk)
    return kept, new


def update_stamp(conn: Connection, path: str, size: int, mtime_ns: int, inode: int) -> None:
    """Record new stat stamps for a note whose bytes did not change (touch, copy back)."""
    conn.execute(
        "UPDATE notes SET size=?, mtime_ns=?, inode=? WHERE path=?", (size, mtime_ns, inode, path)
    )


def delete_note(conn: Connection, path: str) -> bool:
    """Remove a note and everything derived from it; True if it was indexed."""
    row = conn.execute("SELECT id, aliases FROM notes WHERE path = ?", (path,)).fetchone()
    if not row:
        return False
    link_store.forget_note_names(conn, row[0], path, json.loads(row[1]))
    _delete_note_rows(conn, row[0], keep_note=False)
    return True


def delete_notes_under(conn: Connection, folder: str) -> list[str]:
    """Remove every note below `folder` (a deleted or moved-out folder); return their paths."""
    prefix = folder.rstrip("/") + "/"
    paths = [
        r[0]
        for r in conn.execute(
            "SELECT path FROM notes WHERE substr(path, 1, ?) = ?", (len(prefix), prefix)
        )
    ]
    for path in paths:
        delete_note(conn, path)
    return paths


def _delete_note_rows(conn: Connection, note_id: int, *, keep_note: bool) -> None:
    _delete_chunks(
        conn, [r[0] for r in conn.execute("SELECT id FROM chunks WHERE note_id = ?", (note_id,))]
    )
    conn.execute("DELETE FROM links WHERE note_id = ?", (note_id,))
    if not keep_note:
        conn.execute("DELETE FROM notes WHERE id = ?", (note_id,))


def _delete_chunks(conn: Connection, chunk_ids: Sequence[int]) -> None:
    """Delete chunks with their FTS, trigram, vector and sign-bit rows."""
    if not chunk_ids:
        return
    # One statement per row: FTS5 and vec0 plan `rowid IN (...)` as a full scan
    # (measured: 20 ms per note on 50k chunks), but `rowid = ?` as a point lookup.
    params = [(cid,) for cid in chunk_ids]
    conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", params)
    conn.executemany("DELETE FROM chunks_trigram WHERE rowid = ?", params)
    for fp in live_fingerprints(conn):
        if ensure_bits_table(conn, fp):
            conn.executemany(f"DELETE FROM {fp.bits_table} WHERE chunk_id = ?", params)
    conn.executemany("DELETE FROM chunks WHERE id = ?", params)


def replace_skipped(conn: Connection, skipped: Iterable[Skipped], now: float) -> None:
    """Set the full list of skipped files (after a full scan)."""
    conn.execute("DELETE FROM skipped")
    conn.executemany(
        "INSERT OR REPLACE INTO skipped(path, reason, seen_at) VALUES (?,?,?)",
        [(s.path, s.reason, now) for s in skipped],
    )


def record_skipped(conn: Connection, item: Skipped, now: float) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO skipped(path, reason, seen_at) VALUES (?,?,?)",
        (item.path, item.reason, now),
    )


def forget_skipped(conn: Connection, paths: Iterable[str]) -> None:
    """Drop these paths from the skipped list (they are gone from the vault)."""
    conn.executemany("DELETE FROM skipped WHERE path = ?", [(path,) for path in paths])


def list_skipped(conn: Connection) -> list[Skipped]:
    return [
        Skipped(p, r) for p, r in conn.execute("SELECT path, reason FROM skipped ORDER BY path")
    ]


# --- fingerprints and vectors -------------------------------------------------------------


def fingerprint_rows(conn: Connection) -> list[FingerprintRow]:
    rows = conn.execute(
        "SELECT id, model, digest, dimension, state FROM fingerprints ORDER BY id"
    ).fetchall()
    return [FingerprintRow(r[0], Fingerprint(r[1], r[2], r[3]), r[4]) for r in rows]


def live_fingerprints(conn: Connection) -> list[FingerprintRow]:
    """The active fingerprint and one being built (during a model change)."""
    return [fp for fp in fingerprint_rows(conn) if fp.state in ("active", "building")]


def active_fingerprint(conn: Connection) -> FingerprintRow | None:
    return next((fp for fp in fingerprint_rows(conn) if fp.state == "active"), None)


def ensure_fingerprint(conn: Connection, fingerprint: Fingerprint, now: float) -> FingerprintRow:
    """Register a fingerprint: active if none is, else building (the old one keeps serving)."""
    row = conn.execute(
        "SELECT id, state FROM fingerprints WHERE key = ?", (fingerprint.key,)
    ).fetchone()
    if row and row[1] != "retired":
        fp = FingerprintRow(row[0], fingerprint, row[1])
        ensure_bits_table(conn, fp)  # upgrades an index made before the bit tables
        return fp
    state: FingerprintState = "building" if active_fingerprint(conn) else "active"
    if row:
        conn.execute("UPDATE fingerprints SET state = ? WHERE id = ?", (state, row[0]))
        fp_id = row[0]
    else:
        fp_id = conn.execute(
            "INSERT INTO fingerprints(key, model, digest, dimension, state, created_at)"
            " VALUES (?,?,?,?,?,?)",
            (
                fingerprint.key,
                fingerprint.model,
                fingerprint.digest,
                fingerprint.dimension,
                state,
                now,
            ),
        ).lastrowid
    # Any other building fingerprint is abandoned: only one model change at a time.
    conn.execute(
        "UPDATE fingerprints SET state = 'retired' WHERE state = 'building' AND id != ?", (fp_id,)
    )
    fp = FingerprintRow(int(fp_id), fingerprint, state)
    ensure_bits_table(conn, fp)
    _drop_retired(conn)
    return fp


def ensure_bits_table(conn: Connection, fp: FingerprintRow) -> bool:
    """Create the sign-bit table of `fp` if missing, back-filled from the embedding cache;
    False when the dimension is not a multiple of 8 (bit[D] refuses it: no bit table, the
    vector channel then scans the cache exactly)."""
    dim = int(fp.fingerprint.dimension)
    if dim % 8:
        return False
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (fp.bits_table,)
    ).fetchone()
    if not exists:
        conn.execute(
            f"CREATE VIRTUAL TABLE {fp.bits_table} USING vec0("
            f"chunk_id INTEGER PRIMARY KEY, embedding bit[{dim}])"
        )
        copy_cached_vectors(conn, fp)
    return True


def _drop_retired(conn: Connection) -> None:
    # A retired model's cache rows stay (switching back costs no embedding); only its
    # per-chunk tables go.
    for stale in fingerprint_rows(conn):
        if stale.state == "retired":
            conn.execute(f"DROP TABLE IF EXISTS {vec_table_name(stale.id)}")
            conn.execute(f"DROP TABLE IF EXISTS {stale.bits_table}")


def promote_fingerprint(conn: Connection, fp: FingerprintRow) -> None:
    """Make a fully built fingerprint the active one and retire the previous one."""
    conn.execute(
        "UPDATE fingerprints SET state = 'retired' WHERE state = 'active' AND id != ?", (fp.id,)
    )
    conn.execute("UPDATE fingerprints SET state = 'active' WHERE id = ?", (fp.id,))
    _drop_retired(conn)


def text_key(text_hash: str) -> bytes:
    """The cache key of a chunk text: the 32 raw bytes of its hex sha256 (`unhex` in SQL)."""
    return bytes.fromhex(text_hash)


def copy_cached_vectors(
    conn: Connection,
    fp: FingerprintRow,
    *,
    note_id: int | None = None,
    text_hashes: Sequence[str] | None = None,
    chunk_ids: Sequence[int] | None = None,
) -> int:
    """Fill the sign-bit rows of chunks that lack one from the cache; return rows added
    (0 for a model without a bit table: its chunks read the cache directly)."""
    if (
        int(fp.fingerprint.dimension) % 8
        or not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (fp.bits_table,)
        ).fetchone()
    ):
        return 0
    where = ["v.chunk_id IS NULL"]
    params: list[object] = [fp.id]
    if chunk_ids is not None:
        if not chunk_ids:
            return 0
        where.append(f"c.id IN ({','.join('?' * len(chunk_ids))})")
        params.extend(chunk_ids)
    if note_id is not None:
        where.append("c.note_id = ?")
        params.append(note_id)
    if text_hashes is not None:
        if not text_hashes:
            return 0
        where.append(f"c.text_hash IN ({','.join('?' * len(text_hashes))})")
        params.extend(text_hashes)
    rows = conn.execute(
        # CROSS JOIN fixes the order (chunks, then one cache lookup each): left to the
        # planner, it scanned every chunk for each cached vector (30 s at 10k chunks).
        f"SELECT c.id, e.vector FROM chunks c "
        f"CROSS JOIN embedding_cache e ON e.fingerprint_id = ? "
        f"AND e.text_key = unhex(c.text_hash) "
        f"LEFT JOIN {fp.bits_table} v ON v.chunk_id = c.id WHERE {' AND '.join(where)}",
        params,
    ).fetchall()
    if rows:
        conn.executemany(
            f"INSERT INTO {fp.bits_table}(chunk_id, embedding) VALUES (?, vec_quantize_binary(?))",
            rows,
        )
    return len(rows)


def pending_hashes(conn: Connection, fp: FingerprintRow, now: float) -> list[str]:
    """Every chunk-text hash with no cached vector for `fp` (the backlog), minus texts whose
    last failure asks to wait until later.

    One `NOT EXISTS` per distinct hash over the covering hash index and the cache's key
    index: 25 ms on the hub vault's 50k chunks (measured), run once per drain rather than
    once per batch.
    """
    rows = conn.execute(
        "SELECT DISTINCT c.text_hash FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM "
        "embedding_cache e WHERE e.fingerprint_id = ? AND e.text_key = unhex(c.text_hash))",
        (fp.id,),
    ).fetchall()
    waiting = _waiting_hashes(conn, fp, now)
    return [h for (h,) in rows if h not in waiting]


def _waiting_hashes(conn: Connection, fp: FingerprintRow, now: float) -> set[str]:
    """The texts whose last embedding failed and whose next try is still ahead of `now`."""
    return {
        h
        for (h,) in conn.execute(
            "SELECT text_hash FROM embed_failures WHERE fingerprint_id = ? AND next_try_at > ?",
            (fp.id, now),
        )
    }


def backlog_texts(conn: Connection, fp: FingerprintRow, now: float) -> list[BacklogText]:
    """The backlog of `pending_hashes`, each text with the newest mtime of a note holding it
    and the most resolved links (from other notes) to such a note: what
    core/embed_order.py orders it by."""
    rows = conn.execute(
        "SELECT c.text_hash, max(n.mtime_ns), max(coalesce(l.inbound, 0)) FROM chunks c "
        "JOIN notes n ON n.id = c.note_id LEFT JOIN (SELECT target_id, count(*) AS inbound "
        "FROM links WHERE target_id IS NOT NULL AND target_id != note_id GROUP BY target_id) l "
        "ON l.target_id = n.id WHERE NOT EXISTS (SELECT 1 FROM embedding_cache e "
        "WHERE e.fingerprint_id = ? AND e.text_key = unhex(c.text_hash)) GROUP BY c.text_hash",
        (fp.id,),
    ).fetchall()
    waiting = _waiting_hashes(conn, fp, now)
    return [BacklogText(h, int(m), int(k)) for h, m, k in rows if h not in waiting]


def chunk_text_hashes(conn: Connection, chunk_ids: Sequence[int]) -> list[str]:
    """The text hash of each chunk id still indexed, in the order given."""
    if not chunk_ids:
        return []
    found = dict(
        conn.execute(
            "SELECT id, text_hash FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(chunk_ids)),),
        ).fetchall()
    )
    return [found[i] for i in chunk_ids if i in found]


def texts_of(conn: Connection, hashes: Sequence[str]) -> list[tuple[str, str]]:
    """(hash, text) for the hashes still held by some chunk (a note may have changed since),
    in the order given."""
    if not hashes:
        return []
    found = dict(
        conn.execute(
            f"SELECT text_hash, text FROM chunks WHERE text_hash IN ({','.join('?' * len(hashes))})",
            list(hashes),
        ).fetchall()
    )
    return [(h, found[h]) for h in hashes if h in found]


def count_pending(conn: Connection, fp: FingerprintRow | None) -> int:
    """Chunks (not texts) still waiting for a vector of `fp` (all chunks when no fp).

    B-tree lookups in the cache's (fingerprint, key) index, which holds no vector: 24 ms
    on the hub vault's 50k chunks (measured; 0.8-1.2 s when the cache kept its vectors in
    the key B-tree, each on an overflow page of its own).
    """
    if fp is None:
        return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    return int(
        conn.execute(
            "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embedding_cache e "
            "WHERE e.fingerprint_id = ? AND e.text_key = unhex(c.text_hash))",
            (fp.id,),
        ).fetchone()[0]
    )


def count_failed_inputs(conn: Connection, fp: FingerprintRow) -> int:
    """Chunks with no cached vector of `fp` whose text is a recorded failed input (the model
    refused it or returned an unusable vector): searchable by words, retried later."""
    return int(
        conn.execute(
            "SELECT count(*) FROM chunks c JOIN embed_failures f ON f.fingerprint_id = ? "
            "AND f.text_hash = c.text_hash WHERE NOT EXISTS (SELECT 1 FROM embedding_cache e "
            "WHERE e.fingerprint_id = ? AND e.text_key = unhex(c.text_hash))",
            (fp.id, fp.id),
        ).fetchone()[0]
    )


def count_missing_vectors(conn: Connection, fp: FingerprintRow) -> int:
    """Chunks the vector scan cannot see: no sign-bit row (or, for a model without a bit
    table, no cached vector). The exact check behind doctor's "vectors match chunks"."""
    if int(fp.fingerprint.dimension) % 8:
        return count_pending(conn, fp)
    return int(
        conn.execute(
            f"SELECT count(*) FROM chunks c LEFT JOIN {fp.bits_table} v ON v.chunk_id = c.id "
            "WHERE v.chunk_id IS NULL"
        ).fetchone()[0]
    )


def count_extra_vectors(conn: Connection, fp: FingerprintRow) -> int:
    """Sign-bit rows whose chunk is gone (0 for a model without a bit table)."""
    if int(fp.fingerprint.dimension) % 8:
        return 0
    return int(
        conn.execute(
            f"SELECT count(*) FROM {fp.bits_table} WHERE chunk_id NOT IN (SELECT id FROM chunks)"
        ).fetchone()[0]
    )


def cached_vector(conn: Connection, fp: FingerprintRow, text_hash: str) -> bytes | None:
    """The cached float32 vector of a text for `fp`, or None."""
    row = conn.execute(
        "SELECT vector FROM embedding_cache WHERE fingerprint_id = ? AND text_key = ?",
        (fp.id, text_key(text_hash)),
    ).fetchone()
    return None if row is None else bytes(row[0])


def store_vectors(
    conn: Connection, fp: FingerprintRow, items: Sequence[tuple[str, Sequence[float]]]
) -> int:
    """Cache vectors by text hash and fill the sign-bit rows of every chunk with that text."""
    conn.executemany(
        "INSERT INTO embedding_cache(fingerprint_id, text_key, vector) VALUES (?,?,?) "
        "ON CONFLICT(fingerprint_id, text_key) DO UPDATE SET vector = excluded.vector",
        [(fp.id, text_key(h), serialize_float32(list(v))) for h, v in items],
    )
    conn.executemany(
        "DELETE FROM embed_failures WHERE fingerprint_id = ? AND text_hash = ?",
        [(fp.id, h) for h, _ in items],
    )
    hashes = [h for h, _ in items]
    if int(fp.fingerprint.dimension) % 8 == 0:
        return copy_cached_vectors(conn, fp, text_hashes=hashes)
    # No bit table: the cache row is the chunk's vector; count the chunks it serves.
    return sum(
        int(
            conn.execute(
                f"SELECT count(*) FROM chunks WHERE text_hash IN ({','.join('?' * len(part))})",
                part,
            ).fetchone()[0]
        )
        for part in (hashes[i : i + 500] for i in range(0, len(hashes), 500))
    )


def record_embed_failure(
    conn: Connection, fp: FingerprintRow, text_hash: str, error: str, now: float
) -> None:
    """Remember a text Ollama refused (or embedded into an unusable vector); retried later
    with a growing delay (1 min doubling to 1 h)."""
    row = conn.execute(
        "SELECT attempts FROM embed_failures WHERE fingerprint_id = ? AND text_hash = ?",
        (fp.id, text_hash),
    ).fetchone()
    attempts = (row[0] if row else 0) + 1
    delay_s = delay_after(attempts, EMBED_RETRY_FIRST_S, EMBED_RETRY_MAX_S)
    conn.execute(
        "INSERT OR REPLACE INTO embed_failures VALUES (?,?,?,?,?)",
        (fp.id, text_hash, attempts, error[:500], now + delay_s),
    )


def list_embed_failures(
    conn: Connection, fp: FingerprintRow, *, limit: int = 20
) -> list[dict[str, object]]:
    """Texts of current chunks the model refused or embedded unusably, with a note holding
    each, the reason and the attempts so far (for status and doctor), oldest retry first."""
    rows = conn.execute(
        "SELECT f.text_hash, f.last_error, f.attempts, (SELECT n.path FROM chunks c JOIN notes n"
        " ON n.id = c.note_id WHERE c.text_hash = f.text_hash ORDER BY n.path LIMIT 1) AS path"
        " FROM embed_failures f WHERE f.fingerprint_id = ? AND path IS NOT NULL "
        "ORDER BY f.next_try_at, f.text_hash LIMIT ?",
        (fp.id, limit),
    ).fetchall()
    return [
        {"file": path, "reason": error, "attempts": int(attempts)}
        for _hash, error, attempts, path in rows
    ]


def counts(conn: Connection) -> dict[str, int]:
    """Notes and chunks in the index."""
    notes = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    return {"notes": int(notes), "chunks": int(chunks)}


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
