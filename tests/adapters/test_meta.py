"""The meta table's named facts: each accessor reads back what its setter wrote."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from askvault.adapters import meta
from askvault.adapters.db import connect, write_transaction
from askvault.core.abstention import Calibration


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


def test_meta_keeps_a_distance_calibration_per_embedding_fingerprint(conn: Any) -> None:
    first = Calibration("fake-embed:sha:64", 0.7312, 120, notes=173, chunking="v5")
    other = Calibration("mxbai:sha:1024", None, 7, notes=7, chunking="v5")
    assert meta.distance_calibration(conn, first.fingerprint) is None
    with write_transaction(conn):
        meta.set_distance_calibration(conn, first)
        meta.set_distance_calibration(conn, other)
    assert meta.distance_calibration(conn, first.fingerprint) == first
    assert meta.distance_calibration(conn, other.fingerprint) == other
    again = Calibration("fake-embed:sha:64", 0.7, 118, notes=230, chunking="v5")
    with write_transaction(conn):
        meta.set_distance_calibration(conn, again)  # replaces that model's entry only
    assert meta.distance_calibration(conn, first.fingerprint) == again
    assert meta.distance_calibration(conn, other.fingerprint) == other


@pytest.mark.parametrize(
    "stored",
    ["not json", "[1, 2]", '{"m:sha:64": "text"}', '{"m:sha:64": {"cutoff": 0.5}}'],
)
def test_meta_reads_an_unreadable_calibration_as_none(conn: Any, stored: str) -> None:
    with write_transaction(conn):
        meta.set_value(conn, meta.DISTANCE_CALIBRATIONS, stored)
    assert meta.distance_calibration(conn, "m:sha:64") is None
