"""Links resolved at index time (issue 12): every stored `links.target_id` stays what
Obsidian's ladder over the whole vault gives, as linking and linked notes are added,
renamed, moved, re-aliased and deleted; backlinks are read from it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from askvault.adapters import search_store, store
from askvault.adapters.db import Connection, connect, write_transaction
from askvault.adapters.migrations import m037_link_targets
from askvault.app.clients import OllamaClients
from askvault.core.links import resolve_link
from askvault.services.index.index_pass import index_vault
from askvault.services.index.indexer import index_paths
from askvault.services.retrieval.context_graph import find_neighbours, link_index_from_db
from askvault.settings import Settings
from support.fake_ollama import FakeOllama
from support.settings_factory import settings_for


@pytest.fixture
def world(tmp_path: Path, fake_ollama: FakeOllama) -> Iterator[tuple[Path, Settings, Connection]]:
    vault = tmp_path / "vault"
    vault.mkdir()
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    _write(vault, "Start.md", "# Start\n\nSee [[Later]], [[Note]], [[Sea]] and [[x/Note]].\n")
    _write(vault, "x/Note.md", "# Note\n\nThe x note.\n")
    _write(vault, "y/deeper/Note.md", "# Note\n\nThe deeper note.\n")
    _write(vault, "Ocean.md", "---\naliases: [Sea]\n---\n# Ocean\n\nSalt water.\n")
    _write(vault, "folder/S.md", "# S\n\nNext to [[./T]].\n")
    _write(vault, "folder/T.md", "# T\n\nA sibling.\n")
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    try:
        yield vault, settings, conn
    finally:
        conn.close()


def _write(vault: Path, rel: str, text: str) -> None:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _stored(conn: Connection) -> dict[tuple[str, str], str | None]:
    return {
        (src, target): path
        for src, target, path in conn.execute(
            "SELECT n.path, l.target, t.path FROM links l JOIN notes n ON n.id = l.note_id "
            "LEFT JOIN notes t ON t.id = l.target_id WHERE l.target != ''"
        )
    }


def _check(conn: Connection) -> dict[tuple[str, str], str | None]:
    """The stored targets, asserted equal to resolving every link over the whole vault."""
    index = link_index_from_db(conn)
    stored = _stored(conn)
    assert stored == {(src, t): resolve_link(t, index, src) for src, t in stored}
    return stored


def _backlinks(conn: Connection, page: str) -> list[str]:
    return sorted(
        n.path for n in find_neighbours(conn, [page], set()) if n.why.startswith("links to")
    )


def test_links_are_resolved_when_indexed(world: tuple[Path, Settings, Connection]) -> None:
    _, _, conn = world
    stored = _check(conn)
    assert stored[("Start.md", "Later")] is None
    assert stored[("Start.md", "Note")] == "x/Note.md"  # the shorter of two paths
    assert stored[("Start.md", "Sea")] == "Ocean.md"  # by alias
    assert stored[("Start.md", "x/Note")] == "x/Note.md"
    assert stored[("folder/S.md", "./T")] == "folder/T.md"
    assert _backlinks(conn, "Ocean.md") == ["Start.md"]
    assert search_store.backlinks(conn, ["x/Note.md", "folder/T.md"]) == [
        ("folder/T.md", "folder/S.md"),
        ("x/Note.md", "Start.md"),
    ]


def test_a_link_to_a_missing_note_resolves_when_the_note_appears(
    world: tuple[Path, Settings, Connection],
) -> None:
    vault, settings, conn = world
    _write(vault, "notes/Later.md", "# Later\n\nWritten afterwards.\n")
    index_paths(conn, settings, ["notes/Later.md"])
    assert _check(conn)[("Start.md", "Later")] == "notes/Later.md"
    assert _backlinks(conn, "notes/Later.md") == ["Start.md"]
    (vault / "notes/Later.md").unlink()
    index_paths(conn, settings, ["notes/Later.md"])
    assert _check(conn)[("Start.md", "Later")] is None


def test_duplicate_file_names_follow_the_shortest_path_as_notes_come_and_go(
    world: tuple[Path, Settings, Connection],
) -> None:
    vault, settings, conn = world
    _write(vault, "Note.md", "# Note\n\nAt the top.\n")
    index_paths(conn, settings, ["Note.md"])
    assert _check(conn)[("Start.md", "Note")] == "Note.md"
    assert _backlinks(conn, "Note.md") == ["Start.md"]
    assert _backlinks(conn, "x/Note.md") == ["Start.md"]  # still, by its path [[x/Note]]
    for rel in ("Note.md", "x/Note.md"):
        (vault / rel).unlink()
    index_paths(conn, settings, ["Note.md", "x/Note.md"])
    stored = _check(conn)
    assert stored[("Start.md", "Note")] == "y/deeper/Note.md"
    assert stored[("Start.md", "x/Note")] is None  # y/deeper/Note.md is not under x/
    assert _backlinks(conn, "y/deeper/Note.md") == ["Start.md"]


def test_aliases_added_and_removed_move_the_links_that_name_them(
    world: tuple[Path, Settings, Connection],
) -> None:
    vault, settings, conn = world
    _write(vault, "Ocean.md", "# Ocean\n\nSalt water, no alias now.\n")
    index_paths(conn, settings, ["Ocean.md"])
    assert _check(conn)[("Start.md", "Sea")] is None
    assert _backlinks(conn, "Ocean.md") == []
    _write(vault, "Lake.md", "---\naliases: [sea, Later]\n---\n# Lake\n\nFresh water.\n")
    index_paths(conn, settings, ["Lake.md"])
    stored = _check(conn)
    assert stored[("Start.md", "Sea")] == "Lake.md"
    assert stored[("Start.md", "Later")] == "Lake.md"
    assert _backlinks(conn, "Lake.md") == ["Start.md"]


def test_renaming_the_linked_and_the_linking_note_keeps_backlinks_right(
    world: tuple[Path, Settings, Connection],
) -> None:
    vault, settings, conn = world
    (vault / "Ocean.md").rename(vault / "Big water.md")  # keeps its alias Sea
    (vault / "moved").mkdir()
    (vault / "Start.md").rename(vault / "moved" / "Begin.md")
    index_vault(settings, OllamaClients(settings))
    stored = _check(conn)
    assert stored[("moved/Begin.md", "Sea")] == "Big water.md"
    assert _backlinks(conn, "Big water.md") == ["moved/Begin.md"]
    assert _backlinks(conn, "x/Note.md") == ["moved/Begin.md"]
    # The linked note renamed through a watcher batch: its old name no longer resolves.
    (vault / "x/Note.md").rename(vault / "x/Other.md")
    index_paths(conn, settings, ["x/Note.md", "x/Other.md"])
    stored = _check(conn)
    assert stored[("moved/Begin.md", "Note")] == "y/deeper/Note.md"
    assert _backlinks(conn, "x/Other.md") == []


def test_moving_a_note_re_resolves_its_relative_links(
    world: tuple[Path, Settings, Connection],
) -> None:
    vault, settings, conn = world
    _write(vault, "other/T.md", "# T\n\nAnother T.\n")
    (vault / "folder/S.md").rename(vault / "other/S.md")
    index_paths(conn, settings, ["other/T.md", "folder/S.md", "other/S.md"])
    assert _check(conn)[("other/S.md", "./T")] == "other/T.md"
    assert _backlinks(conn, "other/T.md") == ["other/S.md"]
    assert _backlinks(conn, "folder/T.md") == []


def test_deleting_the_linking_note_removes_its_backlinks(
    world: tuple[Path, Settings, Connection],
) -> None:
    vault, settings, conn = world
    (vault / "Start.md").unlink()
    index_paths(conn, settings, ["Start.md"])
    _check(conn)
    assert _backlinks(conn, "Ocean.md") == [] and _backlinks(conn, "x/Note.md") == []


def test_a_move_alone_re_resolves_the_moved_notes_relative_links(
    world: tuple[Path, Settings, Connection],
) -> None:
    vault, settings, conn = world
    _write(vault, "other/T.md", "# T\n\nAnother T.\n")
    index_paths(conn, settings, ["other/T.md"])
    with write_transaction(conn):
        assert store.move_note(conn, "folder/S.md", "other/S.md")
    assert _check(conn)[("other/S.md", "./T")] == "other/T.md"


def _as_before_m037(conn: Connection) -> None:
    """The index as askvault made it before issue 12: no names, no resolved targets."""
    conn.execute("DROP INDEX links_target_name")
    conn.execute("DROP INDEX links_target_id")
    conn.execute("ALTER TABLE links DROP COLUMN target_name")
    conn.execute("ALTER TABLE links DROP COLUMN target_id")
    conn.execute("DROP TABLE note_names")
    conn.execute("CREATE INDEX links_target ON links(target COLLATE NOCASE)")
    conn.execute("DELETE FROM migrations WHERE name = 'm037_link_targets'")


def test_an_older_index_gets_its_links_resolved_by_the_migration(
    world: tuple[Path, Settings, Connection],
) -> None:
    _, settings, conn = world
    expected = _check(conn)
    _as_before_m037(conn)
    conn.close()
    upgraded = connect(settings.db_path)
    try:
        assert _check(upgraded) == expected
        assert upgraded.execute("SELECT count(DISTINCT note_id) FROM note_names").fetchone()[0] == 6
    finally:
        upgraded.close()


def test_an_interrupted_link_migration_resumes_where_it_stopped(
    world: tuple[Path, Settings, Connection],
) -> None:
    _, settings, conn = world
    expected = _check(conn)
    _as_before_m037(conn)
    with pytest.raises(InterruptedError):
        m037_link_targets(
            conn, write_transaction, lambda line: None, batch_rows=2, stop_after_batches=2
        )
    done = conn.execute("SELECT count(*) FROM links WHERE target_name IS NOT NULL").fetchone()[0]
    assert 0 < done < len(expected)
    conn.close()
    resumed = connect(settings.db_path)
    try:
        assert _check(resumed) == expected
    finally:
        resumed.close()
