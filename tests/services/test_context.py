"""The evidence pack: budget prefix, freshness, neighbours, JSON envelope, source confinement."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from askvault.app.clients import OllamaClients
from askvault.cli.main import cli
from askvault.core.chunking import estimate_tokens
from askvault.services.documents.context import context_document
from askvault.services.index.index_pass import index_vault
from askvault.services.retrieval.context import build_context
from askvault.services.retrieval.context_graph import best_window, clean_target
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.retrieval_vault import Indexed, indexed_vault

QUESTION = "why do my tomatoes get dark patches at the bottom"


@pytest.fixture
def indexed(tmp_path: Path, fake_ollama: FakeOllama) -> Iterator[Indexed]:
    with indexed_vault(tmp_path, fake_ollama.url) as idx:
        yield idx


def _pack(idx: Indexed, prompt: str = QUESTION, **kwargs: object):  # type: ignore[no-untyped-def]
    kwargs.setdefault("embedder", idx.embedder)
    return build_context(idx.conn, idx.settings, prompt, **kwargs)  # type: ignore[arg-type]


def test_context_takes_a_score_ordered_prefix_within_the_budget(indexed: Indexed) -> None:
    big = _pack(indexed, budget_tokens=100_000)
    small = _pack(indexed, budget_tokens=60)
    big_chunks = [c.chunk_id for p in big.pages for c in p.chunks]
    small_chunks = [c.chunk_id for p in small.pages for c in p.chunks]
    assert small.used_tokens <= 60
    assert small.used_tokens == sum(estimate_tokens(c.text) for p in small.pages for c in p.chunks)
    # A prefix in score order, not a re-ranked pick.
    flat_big = sorted(
        ((c.score, c.chunk_id) for p in big.pages for c in p.chunks), key=lambda x: -x[0]
    )
    assert set(small_chunks) == {cid for _, cid in flat_big[: len(small_chunks)]}
    assert set(small_chunks) < set(big_chunks)
    assert any("raise --budget" in a for a in small.actions)


def test_context_drops_hits_under_a_fifth_of_the_top_score(indexed: Indexed) -> None:
    pack = _pack(indexed, budget_tokens=100_000)
    top = pack.pages[0].score
    assert all(c.score >= 0.2 * top for p in pack.pages for c in p.chunks)
    assert pack.pages[0].path == "garden/Tomato Growing.md"


def test_context_lists_one_hop_neighbours_with_why(indexed: Indexed) -> None:
    pack = _pack(indexed, "blossom end rot", budget_tokens=60)
    assert pack.pages[0].path == "garden/Tomato Growing.md"
    why = {n.path: n.why for n in pack.neighbours}
    primary = {p.path for p in pack.pages}
    assert "garden/Composting.md" in why or "garden/Composting.md" in primary
    if "garden/Composting.md" in why:
        assert "related:" in why["garden/Composting.md"]
    assert why.get("sources/seed-catalogue.md", "").startswith("listed in sources:")


def test_context_neighbours_include_backlinks_and_children(indexed: Indexed) -> None:
    pack = _pack(indexed, "sourdough starter flour water levain", budget_tokens=40)
    assert pack.pages[0].path == "kitchen/Sourdough.md"
    assert {n.path: n.why for n in pack.neighbours}.get(
        "kitchen/Fermentation.md"
    ) == "links to [[Sourdough]]"
    pack = _pack(indexed, "compost greens browns turning the pile", budget_tokens=80)
    assert {n.path: n.why for n in pack.neighbours}.get(
        "garden/Worm Bins.md"
    ) == "listed in children: of [[Composting]]"


def test_context_rereads_a_changed_file_and_relocates_the_chunk(indexed: Indexed) -> None:
    note = indexed.vault / "garden/Tomato Growing.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(
        text.replace("# Tomato Growing\n", "# Tomato Growing\n\nNew intro line.\n\n"),
        encoding="utf-8",
    )
    pack = _pack(indexed, "blossom end rot", budget_tokens=60)
    page = pack.pages[0]
    assert page.path == "garden/Tomato Growing.md" and page.fresh
    chunk = page.chunks[0]
    lines = note.read_text(encoding="utf-8").split("\n")
    assert lines[chunk.lines[0] - 1] == "## Blossom end rot"


def test_context_flags_a_chunk_whose_text_is_gone(indexed: Indexed) -> None:
    note = indexed.vault / "garden/Tomato Growing.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("leathery", "crusty"), encoding="utf-8")
    pack = _pack(indexed, "blossom end rot", budget_tokens=60)
    page = pack.pages[0]
    assert not page.fresh and not page.chunks[0].fresh
    assert page.warning and "changed since it was indexed" in page.warning
    assert any("askvault index" in a for a in pack.actions)


def test_context_flags_a_deleted_file(indexed: Indexed) -> None:
    (indexed.vault / "garden/Tomato Growing.md").unlink()
    pack = _pack(indexed, "blossom end rot", budget_tokens=60)
    assert not pack.pages[0].fresh and "deleted" in (pack.pages[0].warning or "")


def _pack_citing_the_interview(idx: Indexed):  # type: ignore[no-untyped-def]
    """The tomato note cites raw/interview.txt; the pack of a question it answers, sources in."""
    note = idx.vault / "garden/Tomato Growing.md"
    note.write_text(
        note.read_text(encoding="utf-8") + "\nSee [[raw/interview.txt]].\n", encoding="utf-8"
    )
    index_vault(idx.settings, OllamaClients(idx.settings))
    return _pack(idx, "blossom end rot watering tomatoes", budget_tokens=2000, include_sources=True)


def test_context_includes_source_windows_from_sources_and_raw(indexed: Indexed) -> None:
    pack = _pack_citing_the_interview(indexed)
    files = {w.path for w in pack.source_windows}
    assert "sources/seed-catalogue.md" in files
    assert "raw/interview.txt" in files
    assert pack.used_tokens <= 2000


def test_context_skips_a_raw_source_hard_linked_to_a_file_outside_the_vault(
    indexed: Indexed, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret interview words\n", encoding="utf-8")
    (indexed.vault / "raw/interview.txt").unlink()
    os.link(outside, indexed.vault / "raw/interview.txt")
    pack = _pack_citing_the_interview(indexed)
    assert all(w.path != "raw/interview.txt" for w in pack.source_windows)
    assert any("raw/interview.txt" in w and "hard links" in w for w in pack.warnings)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [("../../etc/passwd", "'..'"), ("/etc/passwd", "absolute"), ("sources/escape.md", "leads")],
)
def test_context_refuses_sources_outside_the_source_folders(
    indexed: Indexed, tmp_path: Path, entry: str, reason: str
) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("secret words\n", encoding="utf-8")
    os.symlink(outside, indexed.vault / "sources/escape.md")
    inside = indexed.vault / "sources/inner.md"
    os.symlink(indexed.vault / "Sleep Hygiene.md", inside)
    note = indexed.vault / "Houseplants.md"
    text = note.read_text(encoding="utf-8").replace(
        "tags: [garden]", f'tags: [garden]\nsources: [{json.dumps(entry)}, "sources/inner.md"]'
    )
    note.write_text(text, encoding="utf-8")
    index_vault(indexed.settings, OllamaClients(indexed.settings))
    pack = _pack(
        indexed, "monstera overwatering houseplants", budget_tokens=2000, include_sources=True
    )
    assert all("secret" not in w.text for w in pack.source_windows)
    assert all(w.path != "sources/inner.md" for w in pack.source_windows)
    refused = [w for w in pack.warnings if w.startswith("refused source")]
    assert any(reason in w for w in refused), pack.warnings
    assert any("sources/inner.md" in w and "symlink" in w for w in refused), pack.warnings


def test_context_json_envelope_is_versioned_and_stable(
    indexed: Indexed, fake_ollama: FakeOllama
) -> None:
    env = {
        "OLLAMA_HOST": fake_ollama.url,
        "ASKVAULT_STATE_DIR": indexed.settings.state_dir,
        "ASKVAULT_EMBED_MODEL": FAKE_EMBED_MODEL,
    }
    args = ["context", QUESTION, "--json", "--budget", "300", "--vault", str(indexed.vault)]
    runner = CliRunner()
    first = runner.invoke(cli, args, env=env, catch_exceptions=False)
    second = runner.invoke(cli, args, env=env, catch_exceptions=False)
    assert first.exit_code == 0 and first.stdout == second.stdout
    doc = json.loads(first.stdout)
    assert doc["version"] == 1
    assert set(doc) >= {
        "prompt",
        "pages",
        "neighbours",
        "sources",
        "warnings",
        "actions",
        "degraded",
        "budget_tokens",
        "used_tokens",
    }
    chunk = doc["pages"][0]["chunks"][0]
    assert chunk["citation"].startswith("[[Tomato Growing#")
    assert len(chunk["lines"]) == 2 and chunk["fresh"] is True


def test_context_text_mode_prints_the_evidence_text_under_each_citation(
    indexed: Indexed, fake_ollama: FakeOllama
) -> None:
    env = {
        "OLLAMA_HOST": fake_ollama.url,
        "ASKVAULT_STATE_DIR": indexed.settings.state_dir,
        "ASKVAULT_EMBED_MODEL": FAKE_EMBED_MODEL,
    }
    args = ["context", QUESTION, "--budget", "300", "--vault", str(indexed.vault)]
    text = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    doc = json.loads(
        CliRunner().invoke(cli, [*args, "--json"], env=env, catch_exceptions=False).stdout
    )
    assert text.exit_code == 0
    chunk = doc["pages"][0]["chunks"][0]
    out = text.stdout
    assert chunk["citation"] in out
    quoted = [line.strip() for line in out.splitlines() if line.strip().startswith(">")]
    first_line = next(line for line in chunk["text"].splitlines() if line.strip())
    assert f"> {first_line}".rstrip() in quoted, "the evidence itself, not only its address"
    # The lines follow their citation, before the next page.
    assert out.index(chunk["citation"]) < out.index(f"> {first_line}".rstrip())


def test_context_degrades_to_words_when_ollama_is_down(
    indexed: Indexed, fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    pack = _pack(indexed, "blossom end rot", budget_tokens=200)
    assert pack.degraded and pack.pages[0].path == "garden/Tomato Growing.md"
    assert any("words only" in a for a in pack.actions)
    assert context_document(pack).degraded == pack.degraded


def test_context_with_no_match_suggests_what_to_do(indexed: Indexed) -> None:
    pack = _pack(indexed, "zzzqqq", budget_tokens=200, embedder=None)
    assert not pack.pages
    assert any("no note matches" in a for a in pack.actions)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("[[sources/a#H|label]]", "sources/a"),
        ("![[raw/b.pdf]]", "raw/b.pdf"),
        ('"sources/c.md"', "sources/c.md"),
        ("Page#Heading", "Page"),
        ("A|label", "A"),
    ],
)
def test_clean_target_takes_the_page_part_of_a_frontmatter_entry(raw: str, expected: str) -> None:
    assert clean_target(raw) == expected


def test_best_window_picks_the_paragraphs_holding_the_query_terms() -> None:
    text = "intro words\n\nnothing here\n\nwatering tomatoes deeply\nmore\n\ntail"
    first, last, window = best_window(text, ["watering", "tomatoes"], 6)
    assert (first, last) == (5, 6) and window.startswith("watering tomatoes")
    assert best_window("", ["x"], 10) == (1, 1, "")
    _, _, cut = best_window("word " * 500, ["word"], 20)
    assert estimate_tokens(cut) <= 20


def _statements(idx: Indexed) -> list[str]:
    """Every SQL statement the index connection runs from now on (SQLite's trace hook)."""
    seen: list[str] = []
    idx.conn.set_trace_callback(seen.append)
    return seen


def test_context_reads_each_chunk_row_once_from_search(indexed: Indexed) -> None:
    seen = _statements(indexed)
    try:
        pack = _pack(indexed, budget_tokens=100_000)
    finally:
        indexed.conn.set_trace_callback(None)
    assert pack.pages and pack.pages[0].sources  # the search rows' fields reached the pack
    row_queries = [
        s for s in seen if "c.id IN (SELECT value FROM json_each" in s and "n.content_hash" in s
    ]
    assert len(row_queries) == 1, row_queries
    name_queries = [s for s in seen if "HAVING count(*) > 1" in s]
    # One for the search hits, one for neighbours that are not hits.
    assert len(name_queries) <= 2, name_queries
