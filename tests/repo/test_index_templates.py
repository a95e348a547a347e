"""Indexes copied from a template (tests/support/index_templates.py): only for the same
files, settings and fake Ollama; the copy is each test's own and ends as a fresh index
would."""

from __future__ import annotations

import uuid
from pathlib import Path

from askvault.adapters.db import connect
from askvault.settings import Settings
from support.fake_ollama import FakeOllama
from support.index_templates import index_copy
from support.settings_factory import settings_for
from support.vault_factory import make_fixture_vault


def _vault(root: Path, marker: str) -> Path:
    """The fixture vault with one note of its own (no template of another test fits it)."""
    vault = make_fixture_vault(root)
    (vault / "Marker.md").write_text(f"# Marker\n\nThis vault is {marker}.\n", encoding="utf-8")
    return vault


def _rows(settings: Settings) -> list[tuple[object, ...]]:
    conn = connect(settings.db_path)
    try:
        notes = conn.execute(
            "SELECT path, content_hash, note_date, date_source FROM notes ORDER BY path"
        ).fetchall()
        chunks = conn.execute("SELECT text_hash FROM chunks ORDER BY text_hash").fetchall()
        return [*notes, *chunks]
    finally:
        conn.close()


def test_the_same_files_are_indexed_from_a_copy_that_embeds_nothing_and_is_their_own(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    marker = uuid.uuid4().hex
    first = settings_for(_vault(tmp_path / "a", marker), tmp_path / "sa", fake_ollama.url)
    index_copy(first)
    assert fake_ollama.embed_calls > 0, "the first pays for the embeddings"
    before = fake_ollama.embed_calls
    second = settings_for(_vault(tmp_path / "b", marker), tmp_path / "sb", fake_ollama.url)
    report = index_copy(second)
    assert fake_ollama.embed_calls == before, "the copy embeds nothing"
    assert report.pending_embeddings == 0 and report.index.touched > 0  # its own stamps
    assert report.index.changes == 0
    assert _rows(second) == _rows(first)
    assert second.db_path != first.db_path
    (second.vault_path / "Marker.md").unlink()
    index_copy(second)  # a change to the copy's vault reaches the copy only
    assert "Marker.md" in {r[0] for r in _rows(first)}
    assert "Marker.md" not in {r[0] for r in _rows(second)}


def test_a_vault_one_byte_apart_is_indexed_afresh(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    marker = uuid.uuid4().hex
    index_copy(settings_for(_vault(tmp_path / "a", marker), tmp_path / "sa", fake_ollama.url))
    before = fake_ollama.embed_calls
    index_copy(settings_for(_vault(tmp_path / "b", marker + "!"), tmp_path / "sb", fake_ollama.url))
    assert fake_ollama.embed_calls > before


def test_a_fake_in_another_state_or_other_settings_get_an_index_of_their_own(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    marker = uuid.uuid4().hex
    index_copy(settings_for(_vault(tmp_path / "a", marker), tmp_path / "sa", fake_ollama.url))
    before = fake_ollama.embed_calls
    other = settings_for(
        _vault(tmp_path / "b", marker),
        tmp_path / "sb",
        fake_ollama.url,
        **{"index.chunk_max_tokens": 200},
    )
    index_copy(other)
    assert fake_ollama.embed_calls > before, "other settings"
    with FakeOllama(dimension=32) as narrow:
        index_copy(settings_for(_vault(tmp_path / "c", marker), tmp_path / "sc", narrow.url))
        assert narrow.embed_calls > 0, "a fake whose vectors are of another length"


def test_an_index_that_already_exists_is_not_replaced_by_a_copy(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    marker = uuid.uuid4().hex
    index_copy(settings_for(_vault(tmp_path / "a", marker), tmp_path / "sa", fake_ollama.url))
    second = settings_for(_vault(tmp_path / "b", marker), tmp_path / "sb", fake_ollama.url)
    (second.vault_path / "Marker.md").unlink()
    index_copy(second)  # its own index, without the marker note
    (second.vault_path / "Marker.md").write_text(
        f"# Marker\n\nThis vault is {marker}.\n", encoding="utf-8"
    )
    report = index_copy(second)  # now the same files as the template: its index is kept
    assert report.index.added == ["Marker.md"]
