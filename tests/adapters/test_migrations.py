"""Migrations run in the order of their names, and an index that recorded a migration
under a former name does not run it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from askvault.adapters.db import apply_migrations, connect, write_transaction
from askvault.adapters.migrations import FORMER_NAMES, MIGRATIONS, split_sql

NAMES = [name for name, _ in MIGRATIONS]
OLD_NAME = {new: old for old, new in FORMER_NAMES.items()}


def test_migration_names_sort_in_the_order_they_run() -> None:
    assert NAMES == sorted(NAMES) and len(set(NAMES)) == len(NAMES)
    assert [name[:4] for name in NAMES] == sorted({name[:4] for name in NAMES})


def test_every_former_name_maps_to_a_migration_of_today() -> None:
    assert set(FORMER_NAMES.values()) <= set(NAMES)
    assert not set(FORMER_NAMES) & set(NAMES)


def _index_under_former_names(path: Path, *, up_to: str | None = None) -> None:
    """Apply the migrations (through `up_to`) as an askvault before the renaming did:
    each recorded under the name it had then."""
    conn = connect(path, migrate=False)
    try:
        conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        for name, sql in MIGRATIONS:
            if callable(sql):
                sql(conn, write_transaction, lambda line: None)
            else:
                with write_transaction(conn):
                    for statement in split_sql(sql):
                        conn.execute(statement)
            with write_transaction(conn):
                conn.execute("INSERT INTO migrations VALUES (?, 0)", (OLD_NAME.get(name, name),))
            if name == up_to:
                break
    finally:
        conn.close()


def _schema(conn: Any) -> list[tuple[str, str, str]]:
    return sorted(
        conn.execute("SELECT type, name, coalesce(sql, '') FROM sqlite_master").fetchall()
    )


def test_an_index_made_under_former_names_runs_nothing_again(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    _index_under_former_names(path)
    conn = connect(path, migrate=False)
    try:
        with write_transaction(conn):
            conn.execute(
                "INSERT INTO chunks_fts(rowid, title, aliases, headings, body) "
                "VALUES (7, 'Running', '', '', 'weekly mileage')"
            )
        recorded = {r[0] for r in conn.execute("SELECT name FROM migrations")}
        assert set(FORMER_NAMES) <= recorded
        schema = _schema(conn)
        assert apply_migrations(conn) == []
        assert sorted(r[0] for r in conn.execute("SELECT name FROM migrations")) == NAMES
        assert _schema(conn) == schema
        assert conn.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'mileage'"
        ).fetchall() == [(7,)]
    finally:
        conn.close()
    connect(path).close()  # and a plain open finds nothing to do either


def test_an_index_made_half_way_runs_only_the_migrations_it_lacks(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    _index_under_former_names(path, up_to="m034_fts_porter")
    conn = connect(path, migrate=False)
    try:
        assert apply_migrations(conn) == [
            "m035_trigram_extension_b",
            "m036_embedding_cache",
            "m037_link_targets",
            "m038_note_dates",
        ]
        assert sorted(r[0] for r in conn.execute("SELECT name FROM migrations")) == NAMES
    finally:
        conn.close()


def test_a_migration_recorded_under_both_names_ends_as_one_row(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    connect(path).close()
    conn = connect(path, migrate=False)
    try:
        with write_transaction(conn):
            conn.execute("INSERT INTO migrations VALUES ('m004_fts_porter', 0)")
        assert apply_migrations(conn) == []
        assert sorted(r[0] for r in conn.execute("SELECT name FROM migrations")) == NAMES
    finally:
        conn.close()


def test_the_fingerprint_states_the_schema_allows_are_the_typed_ones(tmp_path: Path) -> None:
    from typing import get_args

    from askvault.records import FingerprintState

    conn = connect(tmp_path / "index.sqlite")
    try:
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'fingerprints'").fetchone()[
            0
        ]
    finally:
        conn.close()
    allowed = sql.split("CHECK (state IN (", 1)[1].split(")", 1)[0]
    assert {s.strip(" '") for s in allowed.split(",")} == set(get_args(FingerprintState))
