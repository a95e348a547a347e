"""The word index stems (Porter) and `word_tokens` tokenizes exactly as it does; an index
made before stemming is converted in place by its migration."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from askvault.adapters import search_store
from askvault.adapters.db import _split_sql, connect
from askvault.adapters.migrations import MIGRATIONS


def _fts_sql(conn: object) -> str:
    return conn.execute(  # type: ignore[attr-defined,no-any-return]
        "SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'"
    ).fetchone()[0]


def test_word_index_and_word_tokens_use_the_same_tokenizer(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.sqlite")
    try:
        assert f"tokenize = '{search_store.WORD_TOKENIZER}'" in _fts_sql(conn)
    finally:
        conn.close()


def test_word_tokens_are_folded_stemmed_and_in_order(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.sqlite")
    try:
        tokens = search_store.word_tokens(
            conn, ["Effects of Running", "", 'Crème "brûlée" NEAR( AND title:x', "C++"]
        )
        assert tokens[0] == ["effect", "of", "run"]
        assert tokens[1] == []
        assert tokens[2] == ["creme", "brule", "near", "and", "titl", "x"]
        assert tokens[3] == ["c"]
        assert search_store.word_tokens(conn, []) == []
        # The scratch table is emptied after each call: a second call sees only its own texts.
        assert search_store.word_tokens(conn, ["indexing"]) == [["index"]]
    finally:
        conn.close()


def test_stemmed_query_finds_other_forms_of_a_word(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.sqlite")
    try:
        conn.execute(
            "INSERT INTO chunks_fts(rowid, title, aliases, headings, body) "
            "VALUES (1, 'Notes', '', '', 'The effect of indexing on speed')"
        )
        assert [cid for cid, _ in search_store.word_chunks(conn, '"effects"', limit=5)] == [1]
        assert [cid for cid, _ in search_store.word_chunks(conn, '"indexed"', limit=5)] == [1]
        total, freqs = search_store.document_frequencies(conn, ["effect", "effects"])
        assert freqs == {"effect": 1, "effects": 0}  # the vocabulary holds stems only
    finally:
        conn.close()


def test_an_index_made_before_stemming_is_converted_keeping_every_row(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    old = connect(path, migrate=False)
    old.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    for name, sql in MIGRATIONS:
        if name == "m034_fts_porter" or callable(sql):
            continue
        for statement in _split_sql(sql):
            old.execute(statement)
        old.execute("INSERT INTO migrations VALUES (?, 0)", (name,))
    assert "porter" not in _fts_sql(old)
    old.executemany(
        "INSERT INTO chunks_fts(rowid, title, aliases, headings, body) VALUES (?,?,?,?,?)",
        [
            (7, "Running", "jogging", "Plans", "Weekly mileage increases"),
            (9, "Café", "", "", "Espresso shots"),
        ],
    )
    old.close()

    conn = connect(path)
    try:
        assert search_store.WORD_TOKENIZER in _fts_sql(conn)
        rows = conn.execute(
            "SELECT rowid, title, aliases, headings, body FROM chunks_fts ORDER BY rowid"
        ).fetchall()
        assert rows == [
            (7, "Running", "jogging", "Plans", "Weekly mileage increases"),
            (9, "Café", "", "", "Espresso shots"),
        ]
        assert [c for c, _ in search_store.word_chunks(conn, '"increase"', limit=5)] == [7]
        assert [c for c, _ in search_store.word_chunks(conn, '"cafe"', limit=5)] == [9]
        assert (
            conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE name LIKE 'chunks_fts_porter%'"
            ).fetchone()[0]
            == 0
        )
    finally:
        conn.close()


def test_stemming_never_stops_a_word_of_another_language_finding_itself(tmp_path: Path) -> None:
    # Porter's English rules also cut other languages' words; query and notes are cut
    # alike, so each word still finds the note that holds it.
    words = ["Häuser", "nationales", "Katzen", "cuisiner", "läuft", "mañana", "Gebäude"]
    conn = connect(tmp_path / "index.sqlite")
    try:
        conn.executemany(
            "INSERT INTO chunks_fts(rowid, title, aliases, headings, body) "
            "VALUES (?, '', '', '', ?)",
            [(i + 1, f"ein Satz mit {w} darin") for i, w in enumerate(words)],
        )
        for i, word in enumerate(words):
            hits = [c for c, _ in search_store.word_chunks(conn, f'"{word}"', limit=10)]
            assert i + 1 in hits, word
    finally:
        conn.close()


def test_word_tokens_on_one_connection_shared_by_threads_keep_their_own_texts(
    tmp_path: Path,
) -> None:
    conn = connect(tmp_path / "index.sqlite")
    errors: list[str] = []

    def worker(word: str) -> None:
        for _ in range(100):
            got = search_store.word_tokens(conn, [f"{word} {word}s", word])
            if got != [[word, word], [word]]:
                errors.append(f"{word}: {got}")

    threads = [threading.Thread(target=worker, args=(w,)) for w in ("river", "stone", "cloud")]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        conn.close()
    assert errors == []


def test_upgrading_an_old_index_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "index.sqlite"
    old = connect(path, migrate=False)
    old.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    for name, sql in MIGRATIONS:
        if name != "m034_fts_porter" and not callable(sql):
            for statement in _split_sql(sql):
                old.execute(statement)
            old.execute("INSERT INTO migrations VALUES (?, 0)", (name,))
    old.close()
    with caplog.at_level(logging.WARNING, logger="askvault.adapters.db"):
        connect(path).close()
        connect(path).close()
    upgrades = [r.getMessage() for r in caplog.records if "upgrading the index" in r.getMessage()]
    assert len(upgrades) == 1 and "stemming" in upgrades[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="askvault.adapters.db"):
        connect(tmp_path / "fresh.sqlite").close()  # a new index is not an upgrade
    assert not [r for r in caplog.records if "upgrading" in r.getMessage()]


def test_never_mentioned_names_one_of_whose_words_no_chunk_holds(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.sqlite")
    try:
        assert search_store.never_mentioned(conn, []) == ()
        conn.execute(
            "INSERT INTO chunks_fts(rowid, title, aliases, headings, body) VALUES "
            "(1, 'Pop-out windows', '', '', 'Open a note in a new window.'), "
            "(2, 'Apple', '', 'Plugins', 'Install community plugins.')"
        )
        # Stemmed like search ("Windows" meets "windows", "Plugin" meets "Plugins"), title
        # and headings count; every word of a name must be somewhere.
        assert search_store.never_mentioned(
            conn, ["Windows", "Plugin", "Excalidraw", "Apple Watch", "Apple"]
        ) == ("Excalidraw", "Apple Watch")
    finally:
        conn.close()
