"""Numbered schema migrations, applied in order, each recorded in the `migrations` table.

Never edit a migration that has shipped; add a new one, numbered after the last: names
sort in the order they run (a test checks it). Up to m032 the tens told the area (001-009
the index, 020-029 search, 030-039 answering); three later ones, first named m004, m033
and m005, were renamed m034-m036 to run in name order (`FORMER_NAMES`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # adapters/db.py runs the migrations: imported for the type alone
    from askvault.adapters.db import Connection

# The runner's BEGIN IMMEDIATE context manager (adapters/db.write_transaction).
Transaction = Callable[["Connection"], AbstractContextManager["Connection"]]
# A migration written in Python: it runs its own transactions (through `transaction`) so
# that a long one is resumable after a kill, and reports progress through `report`. The
# runner records it once it returns.
MigrationStep = Callable[["Connection", Transaction, Callable[[str], None]], None]

M001_NOTES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    folder TEXT NOT NULL,
    title TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    aliases TEXT NOT NULL DEFAULT '[]',
    tags TEXT NOT NULL DEFAULT '[]',
    type TEXT,
    sources TEXT NOT NULL DEFAULT '[]',
    related TEXT NOT NULL DEFAULT '[]',
    headings TEXT NOT NULL DEFAULT '[]',
    block_ids TEXT NOT NULL DEFAULT '[]',
    frontmatter TEXT NOT NULL DEFAULT '{}',
    problems TEXT NOT NULL DEFAULT '[]',
    derived INTEGER NOT NULL DEFAULT 0,
    indexed_at REAL NOT NULL
);
CREATE INDEX notes_content_hash ON notes(content_hash);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX chunks_note ON chunks(note_id, position);
CREATE INDEX chunks_text_hash ON chunks(text_hash);
CREATE TABLE links (
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    target TEXT NOT NULL,
    heading TEXT,
    block TEXT,
    embed INTEGER NOT NULL,
    line INTEGER NOT NULL
);
CREATE INDEX links_note ON links(note_id);
CREATE INDEX links_target ON links(target COLLATE NOCASE);
CREATE TABLE skipped (
    path TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    seen_at REAL NOT NULL
);
"""

# Words: unicode61 with diacritics folded; columns weighted at query time
# (title, aliases, headings, body). CJK has no spaces, so chunks holding CJK text
# are also put in a trigram index (only those, to keep indexing cheap).
M002_FTS = """
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    title, aliases, headings, body,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE chunks_trigram USING fts5(body, tokenize = 'trigram');
"""

# The embedding cache is content-addressed: (fingerprint, chunk-text hash) -> vector.
# The backlog is derived (chunk hashes without a cached vector for the target
# fingerprint), so it is as durable as the chunks themselves; failures are kept
# so that one poisonous text never blocks the others.
M003_EMBEDDINGS = """
CREATE TABLE fingerprints (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    model TEXT NOT NULL,
    digest TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('building', 'active', 'retired')),
    created_at REAL NOT NULL
);
CREATE TABLE embeddings (
    fingerprint_id INTEGER NOT NULL REFERENCES fingerprints(id),
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (fingerprint_id, text_hash)
) WITHOUT ROWID;
CREATE TABLE embed_failures (
    fingerprint_id INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    last_error TEXT NOT NULL,
    next_try_at REAL NOT NULL,
    PRIMARY KEY (fingerprint_id, text_hash)
) WITHOUT ROWID;
"""

# Answer notes askvault wrote (sha256 of the bytes it wrote: it may rewrite a note
# only while the bytes are still exactly those) and the pages each one cites (for
# stale marking); inbox questions not yet archived (waiting or failed) and the
# answer note that belongs to them, so a restart resumes them.
M030_ANSWERS = """
CREATE TABLE answers (
    path TEXT PRIMARY KEY,
    question_path TEXT NOT NULL,
    status TEXT NOT NULL,
    written_sha256 TEXT NOT NULL,
    cited TEXT NOT NULL DEFAULT '[]',
    updated_at REAL NOT NULL
);
CREATE TABLE inbox_questions (
    path TEXT PRIMARY KEY,
    answer_path TEXT NOT NULL,
    status TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    asked TEXT NOT NULL,
    updated_at REAL NOT NULL
);
"""

# A rewrite of an answer note records its new hash before the rename and keeps the old
# one until the rename is done: a crash on either side of the rename still finds the
# note askvault's own (a kill -9 drill caught a `(2)` duplicate without it).
M031_ANSWER_PREVIOUS_HASH = """
ALTER TABLE answers ADD COLUMN previous_sha256 TEXT NOT NULL DEFAULT '';
"""

# A question is archived and logged from a durable record (docs/reliability.md, "What was
# fixed (issue 15)", F). `log_line` is the line `queries/log.md` gets once the question is
# archived (status `archiving`, then `logging` once the move is done), so a crash between the
# move and the log neither loses the line nor writes it twice. `vault_placeholders` lists the
# empty files askvault reserved with O_EXCL where hard links are refused (FAT, some shares): a
# crash before the rename onto one leaves an empty file that the next start removes, and only
# those.
M032_INBOX_ARCHIVE_STATE = """
ALTER TABLE inbox_questions ADD COLUMN log_line TEXT NOT NULL DEFAULT '';
CREATE TABLE vault_placeholders (path TEXT PRIMARY KEY, created_at REAL NOT NULL);
"""

# Chunks of derived notes (answers) are excluded from the quantized vector scan by id:
# a partial index finds those few without scanning every note. Search looks up its
# hits' titles case-blind (duplicate file names need the path in a wikilink): at 200k
# notes a scan of them cost ~20 ms per query.
M020_SEARCH_INDEXES = """
CREATE INDEX IF NOT EXISTS notes_derived ON notes(id) WHERE derived = 1;
CREATE INDEX IF NOT EXISTS notes_title_lower ON notes(lower(title));
"""

# Words are stemmed (Porter) on both sides: "effects" finds "effect", "indexing" finds
# "index". Measured in docs/decisions.md (SciFact words nDCG@10 0.643 -> 0.676). FTS5 cannot
# change a table's tokenizer, so the rows are copied into a new table.
M034_FTS_PORTER = """
CREATE VIRTUAL TABLE chunks_fts_porter USING fts5(
    title, aliases, headings, body,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO chunks_fts_porter(rowid, title, aliases, headings, body)
    SELECT rowid, title, aliases, headings, body FROM chunks_fts;
DROP TABLE chunks_fts;
ALTER TABLE chunks_fts_porter RENAME TO chunks_fts;
"""

# CJK Extension B-F (U+20000-U+2FA1F) was missing from the write side's character class:
# chunks written only in those characters never reached the trigram index the query
# side searches. GLOB ranges compare code points.
M035_TRIGRAM_EXTENSION_B = """
INSERT INTO chunks_trigram(rowid, body)
    SELECT c.id, n.title || char(10) || c.text FROM chunks c JOIN notes n ON n.id = c.note_id
    WHERE (c.text GLOB '*[\U00020000-\U0002fa1f]*' OR n.title GLOB '*[\U00020000-\U0002fa1f]*')
      AND c.id NOT IN (SELECT rowid FROM chunks_trigram);
"""

# The embedding cache as a rowid table keyed by the 32 raw bytes of the text's sha256, and the
# only place float vectors are kept (docs/decisions.md, "Lean and instant: storage, start-up,
# renames"). The old `embeddings` table was WITHOUT ROWID: a 1,536-byte vector does not fit in
# its 4 KiB B-tree pages, so every row spilled to an overflow page of its own (93 of its 142
# MB unused on the hub vault), and `count_pending` read those pages (0.8 s). The per-chunk
# float vec0 tables (`vec_fp<N>`, 79 MB there) stored each vector once more per chunk; the
# vector scan reads sign bits per chunk and rescores from the cache, so they go. Rows move in
# batches, each batch copied and deleted in one transaction: a kill -9 loses nothing and the
# next open goes on from the rows still left. Then VACUUM gives the freed pages back to the
# file system.
M036_CACHE_TABLE = """
CREATE TABLE IF NOT EXISTS embedding_cache (
    id INTEGER PRIMARY KEY,
    fingerprint_id INTEGER NOT NULL REFERENCES fingerprints(id),
    text_key BLOB NOT NULL,
    vector BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS embedding_cache_key
    ON embedding_cache(fingerprint_id, text_key);
"""
M036_BATCH_ROWS = 5_000
# Pages of a new index (and of one the cache migration rewrites): a cached vector row is
# 1.6 KB at 384 dims and 3.1 KB at 768, so 4 KiB pages hold 2 or 1 of them (a quarter of
# each page unused) and 16 KiB pages 10 or 5 (3-5 % unused). Hub vault with 384-dim
# vectors: 129.5 MB at 4 KiB, 115.7 MB at 8 KiB, 115.8 MB at 16 KiB (measured).
PAGE_SIZE_BYTES = 16_384
M036_REPORT_S = 2.0


def _table_exists(conn: Connection, name: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        is not None
    )


def m036_embedding_cache(
    conn: Connection,
    transaction: Transaction,
    report: Callable[[str], None],
    *,
    batch_rows: int = M036_BATCH_ROWS,
    stop_after_batches: int | None = None,
) -> None:
    """Move `embeddings` into `embedding_cache`, drop the float vec0 tables, VACUUM.

    `stop_after_batches` stops early (raising InterruptedError) for the resume test."""
    with transaction(conn):
        for statement in split_sql(M036_CACHE_TABLE):
            conn.execute(statement)
    # Another opener may run this step at the same time (two processes opening an index
    # made before it): each batch looks again, in its transaction, whether the table is
    # still there, and stops when that other opener has finished it.
    with transaction(conn):
        exists = _table_exists(conn, "embeddings")
        left = int(conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]) if exists else 0
        moved = int(conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0])
    if exists:
        total = left + moved
        if total:
            report(
                f"upgrading the index: moving {left:,} cached vectors to the compact "
                "embedding cache; this happens once and resumes if interrupted"
            )
        batches = 0
        last_report = time.monotonic()
        while True:
            with transaction(conn):
                if not _table_exists(conn, "embeddings"):
                    break
                last = conn.execute(
                    "SELECT fingerprint_id, text_hash FROM embeddings "
                    "ORDER BY fingerprint_id, text_hash LIMIT 1 OFFSET ?",
                    (batch_rows - 1,),
                ).fetchone()
                bound = "" if last is None else "WHERE (fingerprint_id, text_hash) <= (?, ?)"
                params = () if last is None else tuple(last)
                conn.execute(
                    "INSERT OR IGNORE INTO embedding_cache(fingerprint_id, text_key, vector) "
                    "SELECT fingerprint_id, unhex(text_hash), vector FROM embeddings "
                    f"{bound or 'WHERE 1'} AND unhex(text_hash) IS NOT NULL "
                    "ORDER BY fingerprint_id, text_hash",
                    params,
                )
                conn.execute(f"DELETE FROM embeddings {bound}", params)
                moved = total - int(conn.execute("SELECT count(*) FROM embeddings").fetchone()[0])
            batches += 1
            if total and (last is None or time.monotonic() - last_report >= M036_REPORT_S):
                report(f"upgrading the index: {moved:,} / {total:,} cached vectors moved")
                last_report = time.monotonic()
            if last is None:
                break
            if stop_after_batches is not None and batches >= stop_after_batches:
                raise InterruptedError("stopped after %d batches" % batches)
        with transaction(conn):
            conn.execute("DROP TABLE IF EXISTS embeddings")
    with transaction(conn):
        dropped = 0
        for (fp_id,) in conn.execute("SELECT id FROM fingerprints").fetchall():
            if _table_exists(conn, f"vec_fp{int(fp_id)}"):
                conn.execute(f"DROP TABLE vec_fp{int(fp_id)}")
                dropped += 1
    if dropped or conn.execute("PRAGMA freelist_count").fetchone()[0] > 1024:
        report("upgrading the index: giving the freed space back (VACUUM)")
        _vacuum(conn)


def _vacuum(conn: Connection) -> None:
    """VACUUM, into `PAGE_SIZE_BYTES` pages when no other connection has the file open (WAL
    keeps the page size, so the file leaves WAL mode for it); best effort: a reader holding
    the file or a full disk only leaves the space unused."""
    with contextlib.suppress(Exception):
        if conn.execute("PRAGMA page_size").fetchone()[0] != PAGE_SIZE_BYTES:
            mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
            if str(mode).lower() == "delete":
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE_BYTES}")
    try:
        with contextlib.suppress(Exception):
            conn.execute("VACUUM")
    finally:
        conn.execute("PRAGMA journal_mode = WAL")


m036_embedding_cache.schema_sql = M036_CACHE_TABLE  # type: ignore[attr-defined]


# Links resolved at index time (adapters/link_store.py; docs/architecture.md, "Index
# design"). `note_names` files each note under the keys a link can name it by (file name,
# aliases; normalised as Obsidian compares them); `links.target_name` is the last segment of
# a link's target, the key its re-resolution is found by when notes come and go;
# `links.target_id` the id of the note it resolves to (NULL: none; an id, not the path: 2.3
# MB less on the hub vault's 42k links, and a rename keeps it). A question's backlinks are
# then one indexed query instead of a resolution of every link of the vault. `note_names` is
# one B-tree (its key is the lookup; a note's old keys are computed from its old path and
# aliases, never looked up by note), and the never-queried index of link texts goes: the
# index grows by two B-trees, not five (a 2 MB state disk must still hold a small vault:
# tests/faults). An older index is filled in one transaction for the names (INSERT OR
# IGNORE: redone whole after a kill), then in batches, each its own transaction, for the
# links whose `target_name` is still NULL (a new link row always has one), so a kill resumes
# where it stopped.
M037_LINK_TARGETS = """
CREATE TABLE IF NOT EXISTS note_names (
    key TEXT NOT NULL,
    note_id INTEGER NOT NULL,
    PRIMARY KEY (key, note_id)
) WITHOUT ROWID;
DROP INDEX IF EXISTS links_target;
"""
M037_BATCH_ROWS = 5_000


def m037_link_targets(
    conn: Connection,
    transaction: Transaction,
    report: Callable[[str], None],
    *,
    batch_rows: int = M037_BATCH_ROWS,
    stop_after_batches: int | None = None,
) -> None:
    """Add `note_names` and the resolved targets of `links`, filled for an existing index.

    `stop_after_batches` stops early (raising InterruptedError) for the resume test."""
    import json

    from askvault.core.links import build_link_index, name_keys, resolve_link, target_keys

    with transaction(conn):
        for statement in split_sql(M037_LINK_TARGETS):
            conn.execute(statement)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(links)")}
        if "target_name" not in columns:
            conn.execute("ALTER TABLE links ADD COLUMN target_name TEXT")
        if "target_id" not in columns:
            conn.execute("ALTER TABLE links ADD COLUMN target_id INTEGER")
        conn.execute("CREATE INDEX IF NOT EXISTS links_target_name ON links(target_name)")
        conn.execute("CREATE INDEX IF NOT EXISTS links_target_id ON links(target_id)")
    batches = 0

    def step() -> None:
        nonlocal batches
        batches += 1
        if stop_after_batches is not None and batches >= stop_after_batches:
            raise InterruptedError("stopped after %d batches" % batches)

    with transaction(conn):
        conn.executemany(
            "INSERT OR IGNORE INTO note_names(key, note_id) VALUES (?, ?)",
            [
                (key, note_id)
                for note_id, path, aliases in conn.execute("SELECT id, path, aliases FROM notes")
                for key in sorted(name_keys(path, json.loads(aliases or "[]")))
            ],
        )
    left = int(conn.execute("SELECT count(*) FROM links WHERE target_name IS NULL").fetchone()[0])
    if not left:
        return
    report(
        f"upgrading the index: resolving {left:,} links once, so that backlinks are "
        "looked up, not computed per question"
    )
    notes = conn.execute("SELECT id, path, aliases FROM notes").fetchall()
    index = build_link_index((path, json.loads(aliases or "[]")) for _, path, aliases in notes)
    note_ids = {path: note_id for note_id, path, _ in notes}
    while True:
        with transaction(conn):
            rows = conn.execute(
                "SELECT l.rowid, l.target, n.path FROM links l JOIN notes n ON n.id = l.note_id"
                " WHERE l.target_name IS NULL LIMIT ?",
                (batch_rows,),
            ).fetchall()
            conn.executemany(
                "UPDATE links SET target_name = ?, target_id = ? WHERE rowid = ?",
                [
                    (
                        target_keys(target)[0] if target else "",
                        note_ids.get(resolve_link(target, index, source) or "") if target else None,
                        rowid,
                    )
                    for rowid, target, source in rows
                ],
            )
        if len(rows) < batch_rows:
            break
        step()
    report("upgrading the index: links resolved")


# What m037 does to the schema, for docs/reference/schema.md (the columns are added only
# where missing, so they are not part of M037_LINK_TARGETS itself).
M037_SCHEMA_DOC = (
    M037_LINK_TARGETS
    + """ALTER TABLE links ADD COLUMN target_name TEXT;
ALTER TABLE links ADD COLUMN target_id INTEGER;
CREATE INDEX IF NOT EXISTS links_target_name ON links(target_name);
CREATE INDEX IF NOT EXISTS links_target_id ON links(target_id);
"""
)
m037_link_targets.schema_sql = M037_SCHEMA_DOC  # type: ignore[attr-defined]


# The day each note belongs to, for questions about a period (core/note_dates.py): the
# day (ISO, local), where it came from (daily, name, property, mtime) and what it was
# computed from (the rules, the path, the mtime), so that the indexer dates again only
# the notes whose inputs changed. NULL until the first reconcile after this migration.
M038_NOTE_DATES = """
ALTER TABLE notes ADD COLUMN note_date TEXT;
ALTER TABLE notes ADD COLUMN date_source TEXT;
ALTER TABLE notes ADD COLUMN date_key TEXT;
CREATE INDEX notes_note_date ON notes(note_date);
"""


def split_sql(sql: str) -> list[str]:
    """Statements of a migration, split on `;` at line ends (no triggers are used)."""
    return [s.strip() for s in sql.split(";\n") if s.strip() and s.strip() != ";"]


# Migrations that rewrite a whole table of an existing index, and what they do (logged).
SLOW_MIGRATIONS = {"m034_fts_porter": "rebuilding the word index with stemming"}

MIGRATIONS: list[tuple[str, str | MigrationStep]] = [
    ("m001_notes", M001_NOTES),
    ("m002_fts", M002_FTS),
    ("m003_embeddings", M003_EMBEDDINGS),
    ("m020_search_indexes", M020_SEARCH_INDEXES),
    ("m030_answers", M030_ANSWERS),
    ("m031_answer_previous_hash", M031_ANSWER_PREVIOUS_HASH),
    ("m032_inbox_archive_state", M032_INBOX_ARCHIVE_STATE),
    ("m034_fts_porter", M034_FTS_PORTER),
    ("m035_trigram_extension_b", M035_TRIGRAM_EXTENSION_B),
    ("m036_embedding_cache", m036_embedding_cache),
    ("m037_link_targets", m037_link_targets),
    ("m038_note_dates", M038_NOTE_DATES),
]

# Names an index may have recorded for a migration before it was renamed to run in name
# order: such a migration is applied already, and its row is renamed when the index opens.
FORMER_NAMES = {
    "m004_fts_porter": "m034_fts_porter",
    "m033_trigram_extension_b": "m035_trigram_extension_b",
    "m005_embedding_cache": "m036_embedding_cache",
}
