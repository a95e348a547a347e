"""Hybrid search over the fixture vault: known answers, hostile queries, CJK, filters,
determinism and degraded mode."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from askvault.adapters import store
from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.cli.main import cli
from askvault.core.schema import to_json
from askvault.records import SearchFilters
from askvault.services.documents.search import search_document
from askvault.services.index.index_pass import index_vault
from askvault.services.retrieval.search import search
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.retrieval_vault import (
    FIXTURE_VAULT,
    Indexed,
    indexed_vault,
    retrieval_settings,
)

# (question as a user asks it, the note that answers it)
KNOWN_ANSWERS = [
    ("why do my tomatoes get dark patches at the bottom", "garden/Tomato Growing.md"),
    ("how long should bulk fermentation of bread dough take", "kitchen/Sourdough.md"),
    ("my espresso shot tastes sour, what should I change", "kitchen/Espresso.md"),
    ("how do I undo a rebase that went wrong", "tech/Git Rebase.md"),
    ("which tokenizer finds substrings in full text search", "tech/SQLite FTS5.md"),
    ("nearest neighbour queries with vector tables in sqlite", "tech/sqlite-vec.md"),
    ("how many copies of my data should I keep", "tech/Backups.md"),
    ("how many days to drive around iceland", "travel/Iceland Ring Road.md"),
    ("tips for insomnia and falling asleep", "Sleep Hygiene.md"),
    ("how fast can I increase weekly running mileage", "Running Training.md"),
    ("what do red wigglers eat", "garden/Worm Bins.md"),
    ("ratio of greens and browns in a compost heap", "garden/Composting.md"),
    ("how much salt for sauerkraut brine", "kitchen/Fermentation.md"),
    ("why is my monstera dying from too much water", "Houseplants.md"),
]


@pytest.fixture
def indexed(tmp_path: Path, fake_ollama: FakeOllama) -> Iterator[Indexed]:
    with indexed_vault(tmp_path, fake_ollama.url) as idx:
        yield idx


def _paths(idx: Indexed, query: str, **kwargs: object) -> list[str]:
    result = search(idx.conn, idx.settings, query, embedder=idx.embedder, **kwargs)  # type: ignore[arg-type]
    return [hit.note_path for hit in result.hits]


@pytest.mark.parametrize("fusion", ["convex", "rrf", "rerank"])
def test_search_finds_known_answers_in_the_top_hits(indexed: Indexed, fusion: str) -> None:
    ranks = []
    for question, expected in KNOWN_ANSWERS:
        paths = _paths(indexed, question, fusion_mode=fusion)
        ranks.append(paths.index(expected) + 1 if expected in paths else None)
    hit_at_1 = sum(1 for r in ranks if r == 1) / len(ranks)
    hit_at_3 = sum(1 for r in ranks if r is not None and r <= 3) / len(ranks)
    assert hit_at_3 >= 0.9, ranks
    assert hit_at_1 >= 0.7, ranks


def test_search_collapses_hits_to_one_per_page(indexed: Indexed) -> None:
    paths = _paths(indexed, "tomato watering staking sun")
    assert len(paths) == len(set(paths))


@pytest.mark.parametrize(
    "query",
    [
        "C++",
        "sqlite-vec",
        "title:",
        "NEAR(",
        "AND",
        '"unbalanced',
        "a OR b NOT c",
        "col:*",
        "^start",
        "{x y}",
        "''",
        "--",
        "\x00",
        "京",
    ],
)
def test_search_takes_hostile_queries_as_plain_text(indexed: Indexed, query: str) -> None:
    result = search(indexed.conn, indexed.settings, query, embedder=indexed.embedder)
    assert result.degraded is None


def test_search_finds_notes_named_with_punctuation(indexed: Indexed) -> None:
    assert _paths(indexed, "C++")[0] == "tech/C++ Templates.md"
    assert _paths(indexed, "sqlite-vec")[0] == "tech/sqlite-vec.md"


def test_search_finds_cjk_text_long_and_short(indexed: Indexed) -> None:
    assert _paths(indexed, "金閣寺")[0] == "travel/Kyoto.md"
    assert _paths(indexed, "京都")[0] == "travel/Kyoto.md"
    assert _paths(indexed, "地下鉄の便利", fusion_mode="words")[0] == "travel/Kyoto.md"


def test_search_finds_cjk_extension_b_characters_short_and_long(indexed: Indexed) -> None:
    """U+20000-U+2FA1F (e.g. 𠮷, 𩸽) were left out of the trigram index on the write side
    while the query side looked for them there."""
    # Only Extension B characters, inside a longer run: found by substring, not as a word.
    (indexed.vault / "Rare kanji.md").write_text(
        "# Rare\n\nThe fish 𩸽𠮷𠀋𡈽 tastes good.\n", encoding="utf-8"
    )
    index_vault(indexed.settings, OllamaClients(indexed.settings))
    assert _paths(indexed, "𠮷𠀋𡈽", fusion_mode="words")[:1] == ["Rare kanji.md"]  # trigram
    assert _paths(indexed, "𠮷𠀋", fusion_mode="words")[:1] == ["Rare kanji.md"]  # short run


def test_search_folds_diacritics(indexed: Indexed) -> None:
    assert _paths(indexed, "creme brulee", fusion_mode="words")[0] == "Café Notes.md"


@pytest.mark.parametrize("fusion", ["convex", "rrf", "rerank", "vector", "words"])
def test_search_filters_by_folder_without_losing_hits(indexed: Indexed, fusion: str) -> None:
    filters = SearchFilters(folders=("garden",))
    paths = _paths(indexed, "water", filters=filters, fusion_mode=fusion, limit=10)
    assert paths and all(p.startswith("garden/") for p in paths)
    if fusion != "words":
        # The filter runs inside the KNN: every garden note comes back, not a filtered top-k.
        assert len(paths) == 3


def test_search_filters_by_tag_inside_the_knn(indexed: Indexed) -> None:
    filters = SearchFilters(tags=("database",))
    paths = _paths(indexed, "tomatoes", filters=filters, fusion_mode="vector")
    assert sorted(paths) == ["tech/SQLite FTS5.md", "tech/sqlite-vec.md"]


def test_search_json_points_sum_to_score_and_hits_are_ordered(indexed: Indexed) -> None:
    result = search(indexed.conn, indexed.settings, "watering tomatoes", embedder=indexed.embedder)
    doc = to_json(search_document(result))
    assert set(doc) == {"query", "hits", "degraded"}
    scores = [h["score"] for h in doc["hits"]]
    assert scores == sorted(scores, reverse=True)
    for hit in doc["hits"]:
        assert round(sum(m["points"] for m in hit["matched"]), 4) == hit["score"]
        assert set(hit) == {
            "score",
            "matched",
            "wikilink",
            "type",
            "file",
            "heading",
            "lines",
            "snippet",
        }
    assert doc["hits"][0]["wikilink"].startswith("[[Tomato Growing")


def test_search_degrades_to_words_when_ollama_is_down(
    indexed: Indexed, fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    result = search(indexed.conn, indexed.settings, "blossom end rot", embedder=indexed.embedder)
    assert result.degraded and "semantic search unavailable" in result.degraded
    assert result.hits[0].note_path == "garden/Tomato Growing.md"
    assert all(c != "vector" for h in result.hits for c, _ in h.matched)


def test_search_waits_only_its_short_embedding_deadline_before_answering_from_words(
    indexed: Indexed, fake_ollama: FakeOllama
) -> None:
    import dataclasses
    import time

    from askvault.services.retrieval.search import open_search

    settings = dataclasses.replace(
        indexed.settings, search=dataclasses.replace(indexed.settings.search, embed_timeout_s=0.3)
    )
    fake_ollama.set_fault("slow", delay_s=3.0, paths=("/api/embed",))
    started = time.monotonic()
    with open_search(settings, OllamaClients(settings)) as (conn, embedder):
        result = search(conn, settings, "blossom end rot", embedder=embedder)
    assert time.monotonic() - started < 2.5
    assert result.degraded and "semantic search unavailable" in result.degraded
    assert result.hits[0].note_path == "garden/Tomato Growing.md"


def test_search_degrades_without_an_embedder(indexed: Indexed) -> None:
    result = search(indexed.conn, indexed.settings, "sourdough", embedder=None)
    assert result.degraded == "no embedding model configured"
    assert result.hits[0].note_path == "kitchen/Sourdough.md"


def _run(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    runner = CliRunner()
    result = runner.invoke(cli, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_search_command_json_is_byte_identical_across_runs(
    indexed: Indexed, fake_ollama: FakeOllama
) -> None:
    env = {
        "OLLAMA_HOST": fake_ollama.url,
        "ASKVAULT_STATE_DIR": indexed.settings.state_dir,
        "ASKVAULT_EMBED_MODEL": FAKE_EMBED_MODEL,
    }
    args = ["search", "how do I water tomatoes", "--json", "--vault", str(indexed.vault)]
    first = _run(args, env)
    second = _run(args, env)
    assert first[0] == 0 and first[1] == second[1]
    doc = json.loads(first[1])
    assert doc["degraded"] is None and doc["hits"][0]["file"] == "garden/Tomato Growing.md"


def test_search_command_warns_on_the_terminal_when_degraded(
    indexed: Indexed, fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    env = {
        "OLLAMA_HOST": fake_ollama.url,
        "ASKVAULT_STATE_DIR": indexed.settings.state_dir,
        "ASKVAULT_EMBED_MODEL": FAKE_EMBED_MODEL,
    }
    code, out, err = _run(
        ["search", "sourdough starter", "--json", "--vault", str(indexed.vault)], env
    )
    assert code == 0
    assert json.loads(out)["degraded"]
    assert "warning" in err


def test_search_command_explain_prints_each_channel(
    indexed: Indexed, fake_ollama: FakeOllama
) -> None:
    env = {
        "OLLAMA_HOST": fake_ollama.url,
        "ASKVAULT_STATE_DIR": indexed.settings.state_dir,
        "ASKVAULT_EMBED_MODEL": FAKE_EMBED_MODEL,
    }
    code, out, _ = _run(
        ["search", "espresso grind", "--explain", "--limit", "2", "--vault", str(indexed.vault)],
        env,
    )
    assert code == 0
    assert "words" in out and "vector" in out and "rank=" in out and "points=" in out
    assert "scaled=" in out  # the default (convex) fusion shows each channel's scaled score


def test_search_command_without_an_index_says_to_index(tmp_path: Path) -> None:
    (tmp_path / "v").mkdir()
    code, _, err = _run(
        ["search", "x", "--vault", str(tmp_path / "v")],
        {"ASKVAULT_STATE_DIR": str(tmp_path / "state")},
    )
    assert code == 1 and "askvault index" in err


def test_search_leaves_out_derived_notes_unless_asked(indexed: Indexed) -> None:
    fp = store.active_fingerprint(indexed.conn)
    assert fp is not None
    indexed.conn.execute("UPDATE notes SET derived = 1 WHERE path = 'kitchen/Espresso.md'")
    ids = [
        r[0]
        for r in indexed.conn.execute(
            "SELECT c.id FROM chunks c JOIN notes n ON n.id = c.note_id "
            "WHERE n.path = 'kitchen/Espresso.md'"
        )
    ]
    assert ids
    for fusion in ("convex", "rrf", "rerank", "words", "vector"):
        assert "kitchen/Espresso.md" not in _paths(
            indexed, "espresso shot grind", fusion_mode=fusion
        )
        assert "kitchen/Espresso.md" in _paths(
            indexed,
            "espresso shot grind",
            fusion_mode=fusion,
            filters=SearchFilters(include_derived=True),
        )


def test_search_degrades_when_the_index_has_no_vectors(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    shutil.copytree(FIXTURE_VAULT, tmp_path / "vault")
    settings = retrieval_settings(tmp_path, fake_ollama.url)
    fake_ollama.set_fault("down")
    assert index_vault(settings, OllamaClients(settings)).embed_error is not None
    fake_ollama.recover()
    conn = connect(settings.db_path)
    embedder = OllamaClients(settings).embedder()
    try:
        result = search(conn, settings, "sourdough starter", embedder=embedder)
    finally:
        embedder.close()
        conn.close()
    assert result.degraded and "no vectors" in result.degraded
    assert result.hits[0].note_path == "kitchen/Sourdough.md"


def test_search_degrades_when_the_query_vector_has_another_dimension(
    indexed: Indexed, fake_ollama: FakeOllama
) -> None:
    fake_ollama.dimensions[FAKE_EMBED_MODEL] = 32
    result = search(indexed.conn, indexed.settings, "sourdough", embedder=indexed.embedder)
    assert result.degraded and "dimensions" in result.degraded
    assert result.hits[0].note_path == "kitchen/Sourdough.md"


def test_migration_adds_extension_b_chunks_an_older_index_left_out(indexed: Indexed) -> None:
    from askvault.adapters.db import apply_migrations

    (indexed.vault / "Rare kanji.md").write_text(
        "# Rare\n\nThe fish 𩸽𠮷𠀋𡈽 tastes good.\n", encoding="utf-8"
    )
    index_vault(indexed.settings, OllamaClients(indexed.settings))
    conn = indexed.conn
    # As the old write side left it: the chunk is not in the trigram index.
    conn.execute(
        "DELETE FROM chunks_trigram WHERE rowid IN (SELECT c.id FROM chunks c "
        "JOIN notes n ON n.id = c.note_id WHERE n.path = 'Rare kanji.md')"
    )
    conn.execute("DELETE FROM migrations WHERE name = 'm035_trigram_extension_b'")
    conn.commit()
    assert _paths(indexed, "𠮷𠀋𡈽", fusion_mode="words")[:1] != ["Rare kanji.md"]
    before = conn.execute("SELECT count(*) FROM chunks_trigram").fetchone()[0]
    assert apply_migrations(conn) == ["m035_trigram_extension_b"]
    after = conn.execute("SELECT count(*) FROM chunks_trigram").fetchone()[0]
    assert after == before + 1  # only the missing chunk; the others are not doubled
    assert _paths(indexed, "𠮷𠀋𡈽", fusion_mode="words")[:1] == ["Rare kanji.md"]


def _words_vault(tmp_path: Path, fake_ollama: FakeOllama, candidates: int) -> list[str]:
    """Chunks ranked by the words channel alone for "tomato soil" in a vault where four
    notes hold both words and one, titled Soil, holds only one but in its title."""
    vault = tmp_path / "vault"
    vault.mkdir()
    for n in range(4):
        (vault / f"Bed {n}.md").write_text(f"Bed {n}: the tomato likes warm soil.\n")
    (vault / "Soil.md").write_text("# Soil\n\nSoil, soil and more soil.\n")
    settings = retrieval_settings(tmp_path, fake_ollama.url, **{"search.candidates": candidates})
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    try:
        result = search(
            conn, settings, "tomato soil", fusion_mode="words", per_page=False, limit=candidates
        )
    finally:
        conn.close()
    return [hit.note_path for hit in result.hits]


def test_words_channel_ranks_only_chunks_with_every_word_when_there_are_enough(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    # Four chunks hold both words and the channel takes three (the search depth is the
    # larger of `search.candidates` and the limit, both 3 here): the page with one word,
    # however strong, is not scored at all (the OR ranking would put it first).
    paths = _words_vault(tmp_path, fake_ollama, candidates=3)
    assert "Soil.md" not in paths
    assert len(paths) == 3 and all(p.startswith("Bed ") for p in paths)


def test_words_channel_falls_back_to_any_word_when_too_few_chunks_hold_every_word(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    paths = _words_vault(tmp_path, fake_ollama, candidates=10)
    assert "Soil.md" in paths
    assert sorted(p for p in paths if p != "Soil.md") == [f"Bed {n}.md" for n in range(4)]
