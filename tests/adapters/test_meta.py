"""The meta table's named facts: each accessor reads back what its setter wrote."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from askvault.adapters import meta
from askvault.adapters.db import connect, write_transaction


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    conn = connect(tmp_path / "index.sqlite")
    try:
        yield conn
    finally:
        conn.close()


def test_meta_accessors_read_nothing_from_a_new_index(conn: Any) -> None:
    assert meta.chunking(conn) is None
    assert meta.last_change_indexed_at(conn) is None
    assert meta.stale_answers_edited(conn) == []
    assert meta.vault_device(conn) is None
    assert meta.vault_refusal(conn) is None
    assert meta.embed_waiting(conn) == (None, "")


def test_meta_accessors_read_back_what_was_set(conn: Any) -> None:
    with write_transaction(conn):
        meta.set_chunking(conn, "v3 max_tokens=512")
        meta.set_last_change_indexed_at(conn, "2026-01-02T03:04:05+01:00")
        meta.set_stale_answers_edited(conn, ["queries/answers/A.md", "queries/answers/B.md"])
        meta.set_vault_device(conn, 2049)
        meta.set_vault_refusal(conn, "the vault holds no notes")
        meta.set_embed_waiting(conn, "http://127.0.0.1:11434 nomic-embed-text", "down")
    assert meta.chunking(conn) == "v3 max_tokens=512"
    assert meta.last_change_indexed_at(conn) == "2026-01-02T03:04:05+01:00"
    assert meta.stale_answers_edited(conn) == ["queries/answers/A.md", "queries/answers/B.md"]
    assert meta.vault_device(conn) == 2049
    assert meta.vault_refusal(conn) == "the vault holds no notes"
    assert meta.embed_waiting(conn) == ("down", "http://127.0.0.1:11434 nomic-embed-text")


def test_meta_clearing_a_refusal_or_a_waiting_reason_reads_as_none(conn: Any) -> None:
    with write_transaction(conn):
        meta.set_vault_refusal(conn, "gone")
        meta.set_embed_waiting(conn, "host model", "down")
        meta.set_vault_refusal(conn, None)
        meta.set_embed_waiting(conn, "host model", None)
    assert meta.vault_refusal(conn) is None
    assert meta.embed_waiting(conn) == (None, "")
