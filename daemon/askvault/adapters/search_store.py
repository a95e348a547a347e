"""The SQL of retrieval: FTS5 words, CJK trigrams, vec0 KNN, chunk rows and graph neighbours.

Filters are applied inside each query (for vectors: as a mask before the sign-bit
scan picks its candidates, or as SQL conditions of the exact scan), so a filter never
silently returns fewer hits than asked for.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from typing import Any

import sqlean

from askvault.adapters.date_store import period_condition
from askvault.adapters.db import Connection, serialize_float32
from askvault.core.links import strip_md_suffix
from askvault.records import IndexedChunk, SearchFilters

# bm25() column weights: title, aliases, headings, body. Measured on the Help vault set.
FTS_COLUMN_WEIGHTS = (8.0, 6.0, 3.0, 1.0)
# The word index's tokenizer (migration m034_fts_porter); `word_tokens` uses the same one.
WORD_TOKENIZER = "porter unicode61 remove_diacritics 2"
_SCRATCH_LOCK = threading.Lock()
# sqlite-vec refuses k above this in one KNN query.
VEC_MAX_K = 4096


def _note_filter(filters: SearchFilters | None) -> tuple[str, list[Any]]:
    """SQL conditions on `n` (notes) for `filters`, and their parameters."""
    filters = filters or SearchFilters()
    where: list[str] = []
    params: list[Any] = []
    if not filters.include_derived:
        where.append("n.derived = 0")
    if filters.folders:
        ors = []
        for folder in filters.folders:
            folder = folder.strip("/")
            ors.append("(n.folder = ? OR substr(n.folder, 1, ?) = ?)")
            params.extend([folder, len(folder) + 1, folder + "/"])
        where.append("(" + " OR ".join(ors) + ")")
    if filters.tags:
        marks = ",".join("?" * len(filters.tags))
        where.append(
            f"EXISTS (SELECT 1 FROM json_each(n.tags) t WHERE lower(t.value) IN ({marks}))"
        )
        params.extend(tag.lstrip("#").lower() for tag in filters.tags)
    if filters.since or filters.until:
        condition, values = period_condition(filters.since, filters.until)
        where.append(condition)
        params.extend(values)
    return (" AND ".join(where) or "1"), params


def word_chunks(
    conn: Connection, match: str, *, limit: int, filters: SearchFilters | None = None
) -> list[tuple[int, float]]:
    """(chunk id, bm25) of the best word matches; bm25 is negative, lower is better."""
    filters = filters or SearchFilters()
    weights = ", ".join(str(w) for w in FTS_COLUMN_WEIGHTS)
    if not filters.narrows():
        # Only `derived` to filter: rank the FTS rows alone, asking for as many more as
        # there are derived chunks, and drop those. Joining chunks and notes for every
        # match before the LIMIT made the words channel 50 ms instead of 15 ms (p50, 1M chunks).
        excluded = set(_derived_chunk_ids(conn, filters) or ())
        rows = conn.execute(
            f"SELECT rowid, bm25(chunks_fts, {weights}) AS s FROM chunks_fts "
            "WHERE chunks_fts MATCH ? ORDER BY s, rowid LIMIT ?",
            [match, limit + len(excluded)],
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows if r[0] not in excluded][:limit]
    where, params = _note_filter(filters)
    rows = conn.execute(
        f"SELECT f.rowid, bm25(chunks_fts, {weights}) AS s FROM chunks_fts f "
        "JOIN chunks c ON c.id = f.rowid JOIN notes n ON n.id = c.note_id "
        f"WHERE chunks_fts MATCH ? AND {where} ORDER BY s, f.rowid LIMIT ?",
        [match, *params, limit],
    ).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def trigram_chunks(
    conn: Connection,
    match: str | None,
    short_runs: Sequence[str],
    *,
    limit: int,
    filters: SearchFilters | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, score) of CJK matches: trigram MATCH, then substring scans for 1-2 character
    runs the trigram index cannot match; lower scores are better, as with bm25()."""
    where, params = _note_filter(filters)
    found: dict[int, float] = {}
    if match:
        for rowid, score in conn.execute(
            "SELECT g.rowid, bm25(chunks_trigram) AS s FROM chunks_trigram g "
            "JOIN chunks c ON c.id = g.rowid JOIN notes n ON n.id = c.note_id "
            f"WHERE chunks_trigram MATCH ? AND {where} ORDER BY s, g.rowid LIMIT ?",
            [match, *params, limit],
        ):
            found[int(rowid)] = float(score)
    for run in short_runs:
        for (rowid,) in conn.execute(
            "SELECT g.rowid FROM chunks_trigram g JOIN chunks c ON c.id = g.rowid "
            f"JOIN notes n ON n.id = c.note_id WHERE instr(g.body, ?) > 0 AND {where} "
            "ORDER BY g.rowid LIMIT ?",
            [run, *params, limit],
        ):
            found[int(rowid)] = found.get(int(rowid), 0.0) - 1.0
    return sorted(found.items(), key=lambda item: (item[1], item[0]))[:limit]


def vector_chunks(
    conn: Connection,
    fingerprint_id: int,
    vector: Sequence[float],
    *,
    k: int,
    filters: SearchFilters | None = None,
    bits_table: str | None = None,
    min_chunks: int | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, cosine distance) of the k nearest chunks that pass `filters`.

    With `bits_table`, a Hamming scan of the sign bits and exact cosine rescoring from
    the embedding cache of the best candidates (every passing chunk below `min_chunks`:
    exact); see adapters/quantized.py. Without one (a dimension not divisible by 8, or
    unreadable bit storage), an exact scan of the cache in SQL. Either way the filters
    run before the top k are picked (masks of the scan, or SQL conditions), so k rows
    come back whenever k rows pass.
    """
    filters = filters or SearchFilters()
    k = max(1, min(k, VEC_MAX_K))
    if bits_table is not None:
        # numpy only here: a words-only search never imports it (docs/decisions.md, "Lean
        # and instant: storage, start-up, renames").
        import numpy as np

        from askvault.adapters import quantized

        found = quantized.search(
            conn,
            bits_table,
            fingerprint_id,
            np.asarray(vector, dtype=np.float32),
            k=k,
            exclude_ids=lambda: _derived_chunk_ids(conn, filters),
            allow_ids=lambda: _allowed_chunk_ids(conn, filters),
            min_chunks=quantized.MIN_CHUNKS if min_chunks is None else min_chunks,
        )
        if found is not None:
            return found
    return exact_vector_chunks(conn, fingerprint_id, vector, k=k, filters=filters)


def vector_share(conn: Connection, fingerprint_id: int, bits_table: str | None) -> float:
    """The share (0..1) of the index's chunks that have a vector of `fingerprint_id`
    (1.0 when there is no chunk), for the fusion (core/fusion.coverage_weight).

    Counted from the sign-bit table's row list (vec0's `<table>_rowids`, the layout of
    sqlite-vec 0.1.x: a B-tree count, < 0.1 ms at 50k chunks; every chunk with a cached
    vector has its row, kept with it); without it (no bit table, another layout) from the
    chunks whose text has a cached vector (the backlog's count: 50-75 ms at 50k chunks)."""
    total = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    if total == 0:
        return 1.0
    embedded: int | None = None
    if bits_table is not None:
        try:
            embedded = int(
                conn.execute(f'SELECT count(*) FROM "{bits_table}_rowids"').fetchone()[0]
            )
        except sqlean.OperationalError:
            embedded = None
    if embedded is None:
        embedded = int(
            conn.execute(
                "SELECT count(*) FROM chunks c WHERE EXISTS (SELECT 1 FROM embedding_cache e "
                "WHERE e.fingerprint_id = ? AND e.text_key = unhex(c.text_hash))",
                (fingerprint_id,),
            ).fetchone()[0]
        )
    return min(1.0, embedded / total)


def exact_vector_chunks(
    conn: Connection,
    fingerprint_id: int,
    vector: Sequence[float],
    *,
    k: int,
    filters: SearchFilters | None = None,
) -> list[tuple[int, float]]:
    """The exact k nearest chunks passing `filters`: sqlite-vec's distance over every
    cached vector of the model, in SQL (one sequential scan of the cache, 1 ms per ~1,000
    vectors), then the best texts' chunks through the filters. The texts are taken best
    first in growing numbers until k chunks pass or none is left, so copies, orphaned
    cache rows and filters never cut the answer short."""
    where, params = _note_filter(filters)
    blob = serialize_float32(list(vector))
    if filters is not None and filters.narrows():
        # Folders or tags usually leave few chunks: the distances of those only.
        rows = conn.execute(
            "SELECT id, d FROM (SELECT c.id AS id, vec_distance_cosine(e.vector, ?) AS d "
            "FROM notes n CROSS JOIN chunks c ON c.note_id = n.id CROSS JOIN embedding_cache e "
            f"ON e.fingerprint_id = ? AND e.text_key = unhex(c.text_hash) WHERE {where}) "
            "WHERE d IS NOT NULL ORDER BY d, id LIMIT ?",
            [blob, fingerprint_id, *params, k],
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows if math.isfinite(r[1])]
    total = int(
        conn.execute(
            "SELECT count(*) FROM embedding_cache WHERE fingerprint_id = ?", (fingerprint_id,)
        ).fetchone()[0]
    )
    texts = max(4 * k, 256)
    while True:
        # A zero or NaN vector has no distance (NULL): it cannot be ranked, so it is left out.
        rows = conn.execute(
            "SELECT c.id, t.d FROM (SELECT text_key, vec_distance_cosine(vector, ?) AS d "
            "FROM embedding_cache WHERE fingerprint_id = ? AND d IS NOT NULL "
            "ORDER BY d LIMIT ?) t CROSS JOIN chunks c ON c.text_hash = lower(hex(t.text_key)) "
            f"CROSS JOIN notes n ON n.id = c.note_id WHERE {where} ORDER BY t.d, c.id LIMIT ?",
            [blob, fingerprint_id, texts, *params, k],
        ).fetchall()
        if len(rows) >= k or texts >= total:
            return [(int(r[0]), float(r[1])) for r in rows if math.isfinite(r[1])]
        texts *= 4


def _derived_chunk_ids(conn: Connection, filters: SearchFilters) -> list[int] | None:
    """Chunks of derived notes when the filters leave them out, else None."""
    if filters.include_derived:
        return None
    return [
        r[0]
        for r in conn.execute(
            "SELECT c.id FROM notes n JOIN chunks c ON c.note_id = n.id WHERE n.derived = 1"
        )
    ]


def _allowed_chunk_ids(conn: Connection, filters: SearchFilters) -> list[int] | None:
    """Chunks passing the folder, tag and period filters, or None when there are none."""
    if not filters.narrows():
        return None
    where, params = _note_filter(filters)
    return [
        r[0]
        for r in conn.execute(
            f"SELECT c.id FROM chunks c JOIN notes n ON n.id = c.note_id WHERE {where}", params
        )
    ]


def chunk_rows(conn: Connection, chunk_ids: Sequence[int]) -> dict[int, IndexedChunk]:
    """These chunks with their notes' names, metadata and stamps (one query)."""
    if not chunk_ids:
        return {}
    rows = conn.execute(
        "SELECT c.id, n.path, n.title, n.aliases, n.tags, n.type, c.heading_path, c.start_line,"
        " c.end_line, c.text, n.sources, n.size, n.mtime_ns, n.inode, n.content_hash"
        " FROM chunks c JOIN notes n ON n.id = c.note_id"
        " WHERE c.id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(chunk_ids)),),
    ).fetchall()
    return {
        int(r[0]): IndexedChunk(
            int(r[0]),
            r[1],
            r[2],
            tuple(json.loads(r[3])),
            tuple(json.loads(r[4])),
            r[5],
            tuple(json.loads(r[6])),
            int(r[7]),
            int(r[8]),
            r[9],
            tuple(json.loads(r[10])),
            int(r[11]),
            int(r[12]),
            int(r[13]),
            r[14],
        )
        for r in rows
    }


def word_tokens(conn: Connection, texts: Sequence[str]) -> list[list[str]]:
    """Each text's tokens exactly as the word index makes them (folded, stemmed), in order.

    SQLite is the tokenizer: the texts go through a scratch FTS5 table in the
    connection's temp schema, so BM25 over these tokens and the index's statistics
    always agree on what a term is. One scratch table per connection: calls are serialised
    (a connection shared by threads would otherwise mix their texts).
    """
    if not texts:
        return []
    with _SCRATCH_LOCK:
        return _word_tokens(conn, texts)


def _word_tokens(conn: Connection, texts: Sequence[str]) -> list[list[str]]:
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.scratch_tokens USING fts5("
        f"t, tokenize = '{WORD_TOKENIZER}')"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.scratch_tokens_vocab "
        "USING fts5vocab(temp, scratch_tokens, 'instance')"
    )
    conn.execute("DELETE FROM temp.scratch_tokens")
    conn.executemany(
        "INSERT INTO temp.scratch_tokens(rowid, t) VALUES (?, ?)",
        [(i + 1, text) for i, text in enumerate(texts)],
    )
    out: list[list[str]] = [[] for _ in texts]
    for term, doc in conn.execute(
        "SELECT term, doc FROM temp.scratch_tokens_vocab ORDER BY doc, offset"
    ):
        out[int(doc) - 1].append(term)
    conn.execute("DELETE FROM temp.scratch_tokens")
    return out


def document_frequencies(conn: Connection, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """(chunk count, chunks holding each term) from the FTS5 index, for corpus-wide IDF;
    `terms` are index tokens (see `word_tokens`)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_vocab "
        "USING fts5vocab(main, chunks_fts, 'row')"
    )
    total = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    found = dict(
        conn.execute(
            "SELECT term, doc FROM temp.chunks_vocab "
            "WHERE term IN (SELECT value FROM json_each(?))",
            (json.dumps(list(terms)),),
        ).fetchall()
    )
    return total, {term: int(found.get(term, 0)) for term in terms}


def never_mentioned(conn: Connection, names: Sequence[str]) -> tuple[str, ...]:
    """The names one of whose words no chunk of the vault holds (by the word index, so
    "Plugins" meets "plugin")."""
    if not names:
        return ()
    tokens = word_tokens(conn, names)
    _, frequencies = document_frequencies(conn, sorted({t for ts in tokens for t in ts}))
    return tuple(n for n, ts in zip(names, tokens) if any(frequencies[t] == 0 for t in ts))


def duplicate_basenames(conn: Connection, paths: Sequence[str]) -> set[str]:
    """Lower-cased file names, among those of `paths`, that more than one note has
    (their wikilinks need the path). A note's title is its file name without `.md`."""
    names = sorted({p.rsplit("/", 1)[-1].lower() for p in paths})
    titles = [strip_md_suffix(n) for n in names]
    rows = conn.execute(
        "SELECT lower(title) FROM notes WHERE lower(title) IN (SELECT value FROM json_each(?))"
        " GROUP BY lower(title) HAVING count(*) > 1",
        (json.dumps(titles),),
    ).fetchall()
    dupes = {r[0] for r in rows}
    return {n for n, t in zip(names, titles) if t in dupes}


def note_names(conn: Connection) -> list[tuple[str, list[str]]]:
    """(path, aliases) of every note, for link resolution."""
    return [(p, json.loads(a)) for p, a in conn.execute("SELECT path, aliases FROM notes")]


def note_titles(conn: Connection, paths: Sequence[str]) -> dict[str, str]:
    """Title of each indexed note among `paths`."""
    rows = conn.execute(
        "SELECT path, title FROM notes WHERE path IN (SELECT value FROM json_each(?))",
        (json.dumps(list(paths)),),
    )
    return dict(rows.fetchall())


def outgoing_links(conn: Connection, path: str) -> list[tuple[str, str]]:
    """(kind, raw target) of what a note points at: wikilinks, then `related:`, `sources:`
    and `children:` frontmatter entries."""
    row = conn.execute(
        "SELECT id, related, sources, frontmatter FROM notes WHERE path = ?", (path,)
    ).fetchone()
    if not row:
        return []
    out = [
        ("link", t)
        for (t,) in conn.execute(
            "SELECT DISTINCT target FROM links WHERE note_id = ? AND target != '' ORDER BY line",
            (row[0],),
        )
    ]
    out += [("related", t) for t in json.loads(row[1])]
    out += [("source", t) for t in json.loads(row[2])]
    children = json.loads(row[3]).get("children") or []
    if isinstance(children, str):
        children = [children]
    out += [("child", str(t)) for t in children if isinstance(t, (str, int, float))]
    return out


def backlinks(conn: Connection, paths: Sequence[str]) -> list[tuple[str, str]]:
    """(page, linking note) for every note with a wikilink resolved to one of `paths`
    (resolved at index time: adapters/link_store.py), a page's own links left out."""
    return conn.execute(
        "SELECT DISTINCT t.path, n.path FROM notes t JOIN links l ON l.target_id = t.id "
        "JOIN notes n ON n.id = l.note_id "
        "WHERE t.path IN (SELECT value FROM json_each(?)) AND n.id != t.id "
        "ORDER BY t.path, n.path",
        (json.dumps(list(paths)),),
    ).fetchall()


# The FTS5 tables of chunk words: the unicode61 one, and the trigram one for CJK text.
WORD_TABLES = ("chunks_fts", "chunks_trigram")


def fts_integrity_error(conn: Connection, table: str) -> str | None:
    """FTS5's own 'integrity-check' of one of `WORD_TABLES`: None when it passes, else
    what failed."""
    if table not in WORD_TABLES:
        raise ValueError(f"not a word table: {table}")
    try:
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    except Exception as exc:  # noqa: BLE001 - any failure here is the finding
        return str(exc)
    return None


def count_word_row_mismatches(conn: Connection) -> int:
    """Chunks without a row in `chunks_fts`, plus `chunks_fts` rows without a chunk."""
    return int(
        conn.execute(
            "SELECT (SELECT count(*) FROM chunks WHERE id NOT IN (SELECT rowid FROM chunks_fts))"
            " + (SELECT count(*) FROM chunks_fts WHERE rowid NOT IN (SELECT id FROM chunks))"
        ).fetchone()[0]
    )
