"""The indexer and the embedding backlog against a real SQLite file and the fake Ollama."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from askvault.adapters import meta, store
from askvault.adapters.db import connect, write_transaction
from askvault.adapters.ollama import PROBE_TEXT
from askvault.adapters.vault import HARD_LINK_REASON
from askvault.app.clients import OllamaClients
from askvault.services.admin.status import collect_status
from askvault.services.index.embedding import drain_backlog, target_fingerprint
from askvault.services.index.index_pass import index_vault
from askvault.services.index.indexer import IndexReport, drop_folder, index_paths, reconcile
from askvault.services.retrieval.search import search
from askvault.settings import Settings
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.settings_factory import settings_for
from support.vault_factory import INDEXED_NOTES, LONG_PARAGRAPHS, make_fixture_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return make_fixture_vault(tmp_path / "vault")


def test_cold_index_stores_every_note_and_embeds_every_chunk(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is None
    assert sorted(report.index.added) == INDEXED_NOTES
    assert report.pending_embeddings == 0
    doc = collect_status(settings)
    assert doc.notes == len(INDEXED_NOTES)
    assert doc.embedded_chunks == doc.chunks > 0
    assert "Templates/" in [s.path for s in doc.skipped]
    assert doc.last_change_indexed_at is not None
    # Only distinct texts are embedded.
    assert len(fake_ollama.embedded_inputs) == len(set(fake_ollama.embedded_inputs))


def test_second_run_without_changes_reads_and_embeds_nothing(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    before = len(fake_ollama.embedded_inputs)
    report = index_vault(settings, OllamaClients(settings))
    assert report.index.changes == 0
    assert report.index.unchanged == len(INDEXED_NOTES)
    assert len(fake_ollama.embedded_inputs) == before


def _chunk_rows(settings: Settings) -> dict[int, tuple[str, str]]:
    conn = connect(settings.db_path)
    try:
        return {
            cid: (path, text_hash)
            for cid, path, text_hash in conn.execute(
                "SELECT c.id, n.path, c.text_hash FROM chunks c JOIN notes n ON n.id = c.note_id"
            )
        }
    finally:
        conn.close()


def test_a_new_chunk_cap_rechunks_every_note_once_without_reporting_changes(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    state = tmp_path / "state"
    settings = settings_for(vault, state, fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    before = _chunk_rows(settings)
    last_change = collect_status(settings).last_change_indexed_at
    smaller = settings_for(vault, state, fake_ollama.url, **{"index.chunk_max_tokens": 64})
    report = index_vault(smaller, OllamaClients(smaller))
    # Every note was read again and cut with the new cap, but none counts as changed
    # (answers citing them stay fresh) and the index's last-change time does not move.
    assert report.index.rechunked == len(INDEXED_NOTES)
    assert report.index.changes == 0 and report.index.unchanged == 0
    after = _chunk_rows(smaller)
    assert len(after) > len(before)
    assert report.pending_embeddings == 0  # new pieces were embedded by the same pass
    assert collect_status(smaller).last_change_indexed_at == last_change
    # Once done, the same settings read nothing.
    again = index_vault(smaller, OllamaClients(smaller))
    assert again.index.rechunked == 0 and again.index.unchanged == len(INDEXED_NOTES)
    assert _chunk_rows(smaller) == after


def test_an_index_made_by_an_older_chunker_is_rechunked_keeping_unchanged_chunks(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    before = _chunk_rows(settings)
    conn = connect(settings.db_path)
    with write_transaction(conn):
        conn.execute("DELETE FROM meta WHERE key = ?", (meta.CHUNKING,))  # as an older index
    conn.close()
    embedded = len(fake_ollama.embedded_inputs)
    report = index_vault(settings, OllamaClients(settings))
    assert report.index.rechunked == len(INDEXED_NOTES) and report.index.changes == 0
    # Cut the same way: every chunk kept its row (and its vectors); nothing re-embedded.
    assert _chunk_rows(settings) == before
    assert len(fake_ollama.embedded_inputs) == embedded


def test_paragraph_edit_in_a_long_note_embeds_at_most_two_chunks(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    before = len(fake_ollama.embedded_inputs)
    paragraphs = list(LONG_PARAGRAPHS)
    paragraphs[20] = "An entirely rewritten paragraph about greenhouse ventilation."
    (vault / "Garden log.md").write_text("# Garden log\n\n" + "\n\n".join(paragraphs) + "\n")
    report = index_vault(settings, OllamaClients(settings))
    assert report.index.changed == ["Garden log.md"]
    assert 1 <= len(fake_ollama.embedded_inputs) - before <= 2


def test_renames_moves_and_copies_embed_nothing(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    before = len(fake_ollama.embedded_inputs)
    (vault / "Embeds.md").rename(vault / "Embedding notes.md")
    (vault / "moved").mkdir()
    (vault / "Links.md").rename(vault / "moved" / "Links.md")
    shutil.copy(vault / "Welcome.md", vault / "Welcome copy.md")
    report = index_vault(settings, OllamaClients(settings))
    assert sorted(report.index.renamed) == [
        ("Embeds.md", "Embedding notes.md"),
        ("Links.md", "moved/Links.md"),
    ]
    assert len(fake_ollama.embedded_inputs) == before
    assert report.pending_embeddings == 0
    conn = connect(settings.db_path)
    paths = set(store.stored_notes(conn))
    conn.close()
    assert {"Embedding notes.md", "moved/Links.md", "Welcome copy.md"} <= paths
    assert not {"Embeds.md", "Links.md"} & paths


def test_touch_without_content_change_only_updates_stamps(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    os.utime(vault / "Welcome.md", ns=(1, 10**18))
    report = index_vault(settings, OllamaClients(settings))
    assert report.index.touched == 1 and report.index.changes == 0


def test_deleted_note_leaves_no_rows(vault: Path, tmp_path: Path, fake_ollama: FakeOllama) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    (vault / "folder" / "Deep Note.md").unlink()
    report = index_vault(settings, OllamaClients(settings))
    assert report.index.deleted == ["folder/Deep Note.md"]
    conn = connect(settings.db_path)
    fp = store.active_fingerprint(conn)
    assert fp is not None
    chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
    fts_ids = {r[0] for r in conn.execute("SELECT rowid FROM chunks_fts")}
    vec_ids = {r[0] for r in conn.execute(f"SELECT chunk_id FROM {fp.bits_table}")}
    conn.close()
    assert chunk_ids == fts_ids == vec_ids


def test_ollama_down_keeps_words_fresh_and_backlog_resumes(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    fake_ollama.set_fault("down")
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is not None
    assert len(report.index.added) == len(INDEXED_NOTES)
    assert report.pending_embeddings > 0
    assert collect_status(settings).embedding.waiting
    fake_ollama.recover()
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is None and report.pending_embeddings == 0
    assert collect_status(settings).embedding.waiting is None


def test_backlog_survives_a_stop_midway_and_never_reembeds(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    conn = connect(settings.db_path)
    reconcile(conn, settings)
    embedder = OllamaClients(settings).embedder()
    fp = target_fingerprint(conn, embedder)
    drain_backlog(conn, embedder, fp, batch_size=2, max_batches=1)
    conn.close()  # as if the process died here
    first = [t for t in fake_ollama.embedded_inputs if PROBE_TEXT not in t]
    assert len(first) == 2
    seen = len(fake_ollama.embedded_inputs)
    report = index_vault(settings, OllamaClients(settings))
    assert report.pending_embeddings == 0
    assert not set(first) & set(fake_ollama.embedded_inputs[seen:])


def test_changing_the_embedding_model_builds_new_vectors_then_switches(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    other = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"ollama.embed_model": "all-minilm"}
    )
    conn = connect(other.db_path)
    embedder = OllamaClients(other).embedder()
    fp = target_fingerprint(conn, embedder)
    assert fp.state == "building"
    active = store.active_fingerprint(conn)
    assert active is not None and active.fingerprint.model == FAKE_EMBED_MODEL
    drain_backlog(conn, embedder, fp, batch_size=2, max_batches=1)
    still = store.active_fingerprint(conn)
    assert still is not None and still.fingerprint.model == FAKE_EMBED_MODEL
    report = drain_backlog(conn, embedder, fp, batch_size=50)
    assert report.promoted
    now_active = store.active_fingerprint(conn)
    assert now_active is not None and now_active.fingerprint.model == "all-minilm"
    assert store.count_pending(conn, now_active) == 0
    conn.close()


def _switching(vault: Path, tmp_path: Path, fake_ollama: FakeOllama) -> tuple[Settings, Any]:
    """An index of the suite's model, then all-minilm configured: its vectors building,
    none made yet. The settings of the switch and a connection (closed by the caller)."""
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    other = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"ollama.embed_model": "all-minilm"}
    )
    conn = connect(other.db_path)
    assert target_fingerprint(conn, OllamaClients(other).embedder()).state == "building"
    return other, conn


def test_while_a_new_model_is_built_searches_embed_the_query_with_the_old_one(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    """The old vectors serve until the new ones take over, so the query must be the old
    model's: a query of the new model against them is noise when the two have the same
    length (here both 64), and a dimension error (words only) when they do not."""
    other, conn = _switching(vault, tmp_path, fake_ollama)
    seen = len(fake_ollama.requests_to("/api/embed"))
    query = OllamaClients(other).query_embedder()
    result = search(conn, other, "fermentation of rye", embedder=query)
    conn.close()
    assert result.degraded is None and result.hits
    (body,) = fake_ollama.requests_to("/api/embed")[seen:]
    assert body["model"] == FAKE_EMBED_MODEL


def test_while_a_new_model_is_built_and_the_old_one_is_gone_search_falls_back_to_words(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    other, conn = _switching(vault, tmp_path, fake_ollama)
    fake_ollama.models.remove(f"{FAKE_EMBED_MODEL}:latest")  # `ollama rm` of the old model
    query = OllamaClients(other).query_embedder()
    result = search(conn, other, "fermentation of rye", embedder=query)
    conn.close()
    assert result.hits  # from words
    assert result.degraded is not None and FAKE_EMBED_MODEL in result.degraded


def test_bad_files_are_recorded_never_fatal(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    (vault / "binary.md").write_bytes(b"\x00\x01\x02" * 100)
    (vault / "latin1.md").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (vault / "big.md").write_bytes(b"a" * 2000)
    (vault / "yaml.md").write_text("---\nx: !!python/object/apply:os.system ['true']\n---\nbody\n")
    settings = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"index.max_note_bytes": 1000}
    )
    index_vault(settings, OllamaClients(settings))
    skipped = {s.path: s.reason for s in collect_status(settings).skipped}
    assert "binary" in skipped["binary.md"]
    assert "oversized" in skipped["big.md"]
    conn = connect(settings.db_path)
    problems = dict(conn.execute("SELECT path, problems FROM notes"))
    conn.close()
    assert "UTF-8" in problems["latin1.md"]
    assert problems["yaml.md"] != "[]"


def test_index_paths_handles_create_change_and_delete(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    conn = connect(settings.db_path)
    reconcile(conn, settings)
    (vault / "New.md").write_text("# New\n\nfresh text\n")
    (vault / "Welcome.md").unlink()
    (vault / "notes.txt").write_text("not a note")
    report = index_paths(
        conn,
        settings,
        ["New.md", "Welcome.md", "notes.txt", ".obsidian/workspace.json", "queries/inbox/q.md"],
    )
    assert report.added == ["New.md"] and report.deleted == ["Welcome.md"]
    assert report.skipped == []
    conn.close()


def test_index_paths_skips_a_non_utf8_name_and_indexes_the_rest_of_its_batch(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    conn = connect(settings.db_path)
    reconcile(conn, settings)
    (vault / "New.md").write_text("# New\n\nfresh text\n")
    with open(os.path.join(os.fsencode(vault), b"bad-\xff.md"), "wb") as fh:
        fh.write(b"# Bad name\n")
    bad = os.fsdecode(b"bad-\xff.md")  # what watchdog reports: a lone surrogate
    report = index_paths(conn, settings, [bad, "New.md", os.fsdecode(b"gone-\xfe/x.md")])
    assert report.added == ["New.md"]
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("bad-\ufffd.md", "file name is not valid UTF-8"),
        ("gone-\ufffd/x.md", "file name is not valid UTF-8"),
    ]
    assert drop_folder(conn, settings, os.fsdecode(b"old-\xff")).deleted == []
    skipped = {s.path for s in store.list_skipped(conn)}
    assert "bad-\ufffd.md" in skipped
    conn.close()


CANARY = "canary-hard-link-outside-the-vault"


def test_a_hard_link_to_a_file_outside_the_vault_is_skipped_by_the_scan_and_the_watcher(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{CANARY}\n")
    os.link(outside / "secret.md", vault / "Linked.md")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    conn = connect(settings.db_path)
    try:
        report = reconcile(conn, settings)
        assert ("Linked.md", HARD_LINK_REASON) in [(s.path, s.reason) for s in report.skipped]
        os.link(outside / "secret.md", vault / "Later.md")  # made after the scan
        report = index_paths(conn, settings, ["Later.md"])
        assert [(s.path, s.reason) for s in report.skipped] == [("Later.md", HARD_LINK_REASON)]
        assert not {"Linked.md", "Later.md"} & set(store.stored_notes(conn))
        found = conn.execute("SELECT count(*) FROM chunks WHERE text LIKE ?", (f"%{CANARY}%",))
        assert found.fetchone()[0] == 0
    finally:
        conn.close()


def test_an_indexed_note_that_gets_a_name_outside_the_vault_leaves_the_index_at_reconcile(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    conn = connect(settings.db_path)
    try:
        reconcile(conn, settings)
        assert "Links.md" in store.stored_notes(conn)
        os.link(vault / "Links.md", tmp_path / "Links elsewhere.md")  # no event in the vault
        report = reconcile(conn, settings)
        assert "Links.md" in report.deleted and "Links.md" not in store.stored_notes(conn)
    finally:
        conn.close()


def test_one_note_is_one_transaction_and_rolls_back_whole(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    conn = connect(settings.db_path)
    reconcile(conn, settings)
    before = store.counts(conn)
    with pytest.raises(RuntimeError), write_transaction(conn):
        store.delete_note(conn, "Welcome.md")
        raise RuntimeError("crash mid-note")
    assert store.counts(conn) == before
    conn.close()


def test_parsing_pool_and_single_process_index_the_same_rows(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    vault = tmp_path / "vault"
    for i in range(450):  # above POOL_MIN_NOTES: the pool is used
        folder = vault / f"f{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note {i}.md").write_text(
            f"---\naliases: [n{i}]\n---\n# Note {i}\n\nLinks to [[note {i + 1}]].\n\n"
            f"Paragraph about topic {i}.\n"
        )
    rows = []
    for workers in (2, 1):
        settings = settings_for(
            vault, tmp_path / f"state{workers}", fake_ollama.url, **{"index.parse_workers": workers}
        )
        conn = connect(settings.db_path)
        report = reconcile(conn, settings)
        assert len(report.added) == 450
        rows.append(
            conn.execute(
                "SELECT n.path, n.aliases, c.text_hash, c.start_line, c.end_line FROM chunks c "
                "JOIN notes n ON n.id = c.note_id ORDER BY n.path, c.position"
            ).fetchall()
        )
        conn.close()
    assert rows[0] == rows[1]


def test_an_edit_keeps_the_rows_of_untouched_chunks(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    query = (
        "SELECT c.id, c.text_hash FROM chunks c JOIN notes n ON n.id = c.note_id "
        "WHERE n.path = 'Garden log.md' ORDER BY c.position"
    )
    before = conn.execute(query).fetchall()
    conn.close()
    with open(vault / "Garden log.md", "a", encoding="utf-8") as f:
        f.write("\nA new closing paragraph about autumn mulch.\n")
    report = index_vault(settings, OllamaClients(settings))
    assert report.index.changed == ["Garden log.md"]
    conn = connect(settings.db_path)
    after = conn.execute(query).fetchall()
    fp = store.active_fingerprint(conn)
    assert fp is not None
    assert store.count_missing_vectors(conn, fp) == 0
    fts = conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
    assert fts == conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    conn.close()
    kept = set(before) & set(after)
    assert len(kept) >= len(before) - 1  # only the last chunk may change
    assert report.embed.texts_embedded <= 2


def test_a_new_alias_rewrites_the_notes_search_rows(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    text = (vault / "Embeds.md").read_text()
    (vault / "Embeds.md").write_text(text.replace("[Transclusion]", "[Transclusion, Zettelpull]"))
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    hits = conn.execute(
        "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'aliases:zettelpull'"
    ).fetchone()[0]
    chunks = conn.execute(
        "SELECT count(*) FROM chunks c JOIN notes n ON n.id = c.note_id WHERE n.path = 'Embeds.md'"
    ).fetchone()[0]
    conn.close()
    assert hits == chunks > 0


def test_a_rename_and_a_move_keep_their_chunk_word_and_vector_rows_in_place(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    fp = store.active_fingerprint(conn)
    assert fp is not None

    def rows(path: str) -> tuple[int, list[int], list[bytes]]:
        note_id = conn.execute("SELECT id FROM notes WHERE path = ?", (path,)).fetchone()[0]
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM chunks WHERE note_id = ? ORDER BY position", (note_id,)
            )
        ]
        bits = [
            bytes(
                conn.execute(
                    f"SELECT embedding FROM {fp.bits_table} WHERE chunk_id = ?", (cid,)
                ).fetchone()[0]
            )
            for cid in ids
        ]
        return note_id, ids, bits

    before_embeds = rows("Embeds.md")
    before_links = rows("Links.md")
    (vault / "Embeds.md").rename(vault / "Transclusion guide.md")
    (vault / "moved").mkdir()
    (vault / "Links.md").rename(vault / "moved" / "Links.md")
    report = index_vault(settings, OllamaClients(settings))
    assert sorted(report.index.renamed) == [
        ("Embeds.md", "Transclusion guide.md"),
        ("Links.md", "moved/Links.md"),
    ]
    assert report.index.chunks_written == 0
    assert rows("Transclusion guide.md") == before_embeds  # same note, chunk and vector rows
    assert rows("moved/Links.md") == before_links
    # The new name is in the word index (the title is the file name), the old one is gone.
    title_hits = conn.execute(
        "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'title:\"transclusion guide\"'"
    ).fetchone()[0]
    assert title_hits == len(before_embeds[1])
    assert (
        conn.execute("SELECT folder FROM notes WHERE path = 'moved/Links.md'").fetchone()[0]
        == "moved"
    )
    assert not conn.execute(
        "SELECT 1 FROM notes WHERE path IN ('Embeds.md', 'Links.md')"
    ).fetchone()
    assert store.count_missing_vectors(conn, fp) == 0 and store.count_extra_vectors(conn, fp) == 0
    conn.close()


def test_a_watcher_batch_with_a_rename_moves_the_note_in_place(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    note_id = conn.execute("SELECT id FROM notes WHERE path = 'Embeds.md'").fetchone()[0]
    (vault / "Embeds.md").rename(vault / "Renamed.md")
    report = index_paths(conn, settings, ["Embeds.md", "Renamed.md"])
    assert report.renamed == [("Embeds.md", "Renamed.md")] and report.chunks_written == 0
    assert conn.execute("SELECT id FROM notes WHERE path = 'Renamed.md'").fetchone()[0] == note_id
    conn.close()
    # Counted as one rename, not also one note added and one deleted (the log, --json).
    assert report.counts() == (0, 0)
    assert report.as_dict()["added"] == 0 and report.as_dict()["deleted"] == 0
    assert report.as_dict()["renamed"] == 1


def test_a_rename_beside_a_real_addition_and_deletion_counts_each_once() -> None:
    report = IndexReport(
        added=["New.md", "B.md"], deleted=["Gone.md", "A.md"], renamed=[("A.md", "B.md")]
    )
    assert report.counts() == (1, 1)
