"""adapters/calibration_store.py: which notes can calibrate a cut-off, and a title's exact
distance to the nearest chunk of another note (answers left out)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from askvault.adapters import calibration_store, store
from askvault.adapters.db import Connection, connect
from askvault.app.clients import OllamaClients
from askvault.services.index.index_pass import index_vault
from askvault.settings import Settings
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.settings_factory import settings_for

NOTES = {
    "Ferns.md": "# Ferns\n\nFerns grow in shade and spread by spores.\n",
    "Ferns copy.md": "# Ferns\n\nFerns grow in shade and spread by spores.\n",  # same text
    "Cacti.md": "# Cacti\n\nCacti store water in their stems.\n",
    "Empty.md": "",
    "queries/answers/Ferns answer.md": "# Ferns answer\n\nFerns grow in shade, says the note.\n",
}


@pytest.fixture
def indexed(tmp_path: Path, fake_ollama: FakeOllama) -> Iterator[tuple[Settings, Connection]]:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, encoding="utf-8")
    settings = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"index.index_queries": True}
    )
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    try:
        yield settings, conn
    finally:
        conn.close()


def _note_id(conn: Connection, path: str) -> int:
    return int(conn.execute("SELECT id FROM notes WHERE path = ?", (path,)).fetchone()[0])


def test_the_notes_that_calibrate_have_a_vector_and_are_not_answers(
    indexed: tuple[Settings, Connection],
) -> None:
    _, conn = indexed
    fp = store.active_fingerprint(conn)
    assert fp is not None
    found = calibration_store.calibration_notes(conn, fp.id)
    assert [(path, title) for _, path, title in found] == [
        ("Cacti.md", "Cacti"),
        ("Ferns copy.md", "Ferns copy"),
        ("Ferns.md", "Ferns"),
    ]  # the empty note has no chunk, the answer is derived
    assert calibration_store.count_source_notes(conn) == 4  # the empty note counts
    assert calibration_store.calibration_notes(conn, fp.id + 1) == []  # another model's


def test_a_title_s_nearest_chunk_is_another_note_s_even_when_it_shares_its_text(
    indexed: tuple[Settings, Connection], fake_ollama: FakeOllama
) -> None:
    _, conn = indexed
    fp = store.active_fingerprint(conn)
    assert fp is not None
    ferns = fake_ollama.vector("Ferns grow in shade and spread by spores.", FAKE_EMBED_MODEL)
    cacti_id, ferns_id = _note_id(conn, "Cacti.md"), _note_id(conn, "Ferns.md")
    # From Cacti the nearest other note is a fern note; from Ferns, its copy (the text the
    # two share counts for the copy, not as the note's own).
    from_cacti = calibration_store.nearest_other_note_distance(conn, fp.id, ferns, cacti_id)
    from_ferns = calibration_store.nearest_other_note_distance(conn, fp.id, ferns, ferns_id)
    assert from_cacti is not None and from_ferns is not None
    assert from_ferns == pytest.approx(from_cacti, abs=1e-6)
    # The answer's own text as the query: its chunk (derived) is not the nearest.
    (answer_text,) = conn.execute(
        "SELECT c.text FROM chunks c JOIN notes n ON n.id = c.note_id WHERE n.path = ?",
        ("queries/answers/Ferns answer.md",),
    ).fetchone()
    answer = fake_ollama.vector(answer_text, FAKE_EMBED_MODEL)
    from_answer = calibration_store.nearest_other_note_distance(conn, fp.id, answer, cacti_id)
    assert from_answer is not None and from_answer > 0.05


def test_no_other_note_with_a_vector_gives_no_distance(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Alone.md").write_text("# Alone\n\nThe only note.\n", encoding="utf-8")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    try:
        fp = store.active_fingerprint(conn)
        assert fp is not None
        alone = _note_id(conn, "Alone.md")
        vector = fake_ollama.vector("Alone", FAKE_EMBED_MODEL)
        assert calibration_store.nearest_other_note_distance(conn, fp.id, vector, alone) is None
    finally:
        conn.close()
