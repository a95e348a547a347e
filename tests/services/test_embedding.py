"""The embedding backlog against malformed vectors (issue 15, item 4): every vector is checked
(length = the fingerprint's dimension, finite values) before it is stored; a bad one becomes a
recorded failed input, the rest of its batch is stored, nothing crashes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from askvault.adapters import store
from askvault.adapters.db import connect
from askvault.adapters.ollama import PROBE_TEXT
from askvault.app.clients import OllamaClients
from askvault.cli.main import cli
from askvault.services.admin.doctor import run_checks
from askvault.services.admin.status import collect_status
from askvault.services.index.embedding import drain_backlog, target_fingerprint, vector_problem
from askvault.services.index.index_pass import index_vault
from askvault.services.retrieval.search import open_search, search
from askvault.settings import Settings
from support.fake_ollama import DEFAULT_DIMENSION, FakeOllama
from support.settings_factory import cli_env, settings_for

MARKER = "zebra-malformed"
GOOD_NOTES = ("Apples", "Pears", "Plums")


def _vault(root: Path) -> Path:
    vault = root / "vault"
    vault.mkdir()
    for name in GOOD_NOTES:
        (vault / f"{name}.md").write_text(f"# {name}\n\n{name} grow in the orchard.\n")
    (vault / "Bad.md").write_text(f"# Bad\n\nThis one carries the {MARKER} text.\n")
    return vault


def _failures(settings: Settings) -> list[tuple[str, str]]:
    conn = connect(settings.db_path)
    try:
        rows = conn.execute(
            "SELECT f.last_error, c.text FROM embed_failures f "
            "JOIN chunks c ON c.text_hash = f.text_hash"
        ).fetchall()
    finally:
        conn.close()
    return [(str(error), str(text)) for error, text in rows]


def _vector_check(settings: Settings) -> tuple[bool, str]:
    check = next(
        c for c in run_checks(settings, OllamaClients(settings)) if c.name == "vectors match chunks"
    )
    return check.ok, check.detail


def test_vector_problem_names_length_and_non_finite_values() -> None:
    assert vector_problem([0.1, 0.2], 2) is None
    assert "1 dimensions, expected 2" in (vector_problem([0.1], 2) or "")
    assert "0 dimensions" in (vector_problem([], 2) or "")
    assert "NaN" in (vector_problem([float("nan"), 0.0], 2) or "")
    assert "infinite" in (vector_problem([0.0, float("-inf")], 2) or "")


@pytest.mark.parametrize("kind", ["short", "long", "empty", "nan", "inf"])
def test_a_malformed_vector_in_a_batch_is_a_failed_input_and_the_rest_is_stored(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    kind: str,
) -> None:
    # One batch holds all four texts: short/long/empty make it ragged.
    settings = settings_for(
        _vault(tmp_path), tmp_path / "state", fake_ollama.url, **{"ollama.embed_batch_size": 32}
    )
    fake_ollama.malformed = {MARKER: kind}
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is None
    assert report.embed.batches == 1
    assert report.embed.texts_embedded == len(GOOD_NOTES)
    assert report.embed.texts_failed == 1
    assert report.pending_embeddings == 1
    failures = _failures(settings)
    assert len(failures) == 1 and MARKER in failures[0][1]
    ok, detail = _vector_check(settings)
    assert ok and "1 whose text the model could not embed" in detail
    # The failed input waits for its retry: a second pass does not ask for it again.
    calls = fake_ollama.embed_calls_without(PROBE_TEXT)  # the dimension probe aside
    index_vault(settings, OllamaClients(settings))
    assert fake_ollama.embed_calls_without(PROBE_TEXT) == calls


def test_vectors_all_shorter_than_api_show_declares_are_stored_at_their_real_length(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    # The model reports one length and returns another: the index takes the vectors'.
    settings = settings_for(_vault(tmp_path), tmp_path / "state", fake_ollama.url)
    fake_ollama.malformed = {"": "short"}  # every text
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is None
    assert report.embed.texts_failed == 0 and _failures(settings) == []
    assert report.embed.texts_embedded == len(GOOD_NOTES) + 1
    conn = connect(settings.db_path)
    try:
        active = store.active_fingerprint(conn)
    finally:
        conn.close()
    assert active is not None and active.fingerprint.dimension == DEFAULT_DIMENSION - 1
    failed = [c for c in run_checks(settings, OllamaClients(settings)) if not c.ok]
    assert failed == []


def test_a_failed_input_is_retried_after_its_delay_and_then_stored(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    settings = settings_for(_vault(tmp_path), tmp_path / "state", fake_ollama.url)
    fake_ollama.malformed = {MARKER: "nan"}
    index_vault(settings, OllamaClients(settings))
    fake_ollama.malformed = {}
    conn = connect(settings.db_path)
    try:
        conn.execute("UPDATE embed_failures SET next_try_at = 0")  # the delay has passed
        embedder = OllamaClients(settings).embedder()
        fp = target_fingerprint(conn, embedder)
        report = drain_backlog(conn, embedder, fp)
        embedder.close()
        assert report.texts_embedded == 1 and report.texts_failed == 0
        assert store.count_pending(conn, fp) == 0
        assert conn.execute("SELECT count(*) FROM embed_failures").fetchone()[0] == 0
    finally:
        conn.close()


def test_a_ragged_piece_of_a_split_text_is_a_failed_input_not_a_crash(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    words = " ".join(f"word{i}" for i in range(60))
    (vault / "Long.md").write_text(f"# Long\n\n{words} {MARKER} {words}\n")
    # 40 tokens x 3 chars: the chunk is split into pieces; only one holds the marker.
    settings = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"ollama.embed_max_tokens": 40}
    )
    fake_ollama.malformed = {MARKER: "short"}
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is None and report.embed.texts_failed == 1
    pieces = [text for text in fake_ollama.embedded_inputs if "word1 " in text or MARKER in text]
    assert len(pieces) > 1 and sum(MARKER in piece for piece in pieces) == 1


def test_a_building_model_is_promoted_although_one_text_failed(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    vault = _vault(tmp_path)
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    other = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"ollama.embed_model": "all-minilm"}
    )
    fake_ollama.malformed = {MARKER: "inf"}
    report = index_vault(other, OllamaClients(other))
    assert report.embed.promoted and report.embed.texts_failed == 1
    conn = connect(other.db_path)
    try:
        active = store.active_fingerprint(conn)
        assert active is not None and active.fingerprint.model == "all-minilm"
    finally:
        conn.close()


def test_a_nan_query_vector_degrades_search_to_words(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    settings = settings_for(_vault(tmp_path), tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    fake_ollama.malformed = {"orchard": "nan"}
    with open_search(settings, OllamaClients(settings)) as (conn, embedder):
        result = search(conn, settings, "orchard", embedder=embedder)
    assert result.degraded and "NaN" in result.degraded
    assert result.hits


def test_cli_index_with_malformed_vectors_exits_0_without_a_traceback(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    env = cli_env(_vault(tmp_path), tmp_path / "state", fake_ollama.url)
    fake_ollama.malformed = {MARKER: "long"}
    result = CliRunner().invoke(cli, ["index"], env=env)
    assert result.exception is None, result.output
    assert result.exit_code == 0
    assert "1 texts got an unusable vector, retried later" in result.stdout
    assert "Traceback" not in result.output


@pytest.mark.parametrize("status", [400, 500])
def test_one_text_ollama_refuses_is_isolated_by_splitting_and_the_rest_of_its_batch_stored(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    status: int,
) -> None:
    # All four texts in one batch: the whole request fails until the bad text is alone.
    settings = settings_for(
        _vault(tmp_path), tmp_path / "state", fake_ollama.url, **{"ollama.embed_batch_size": 32}
    )
    fake_ollama.refused = {MARKER: status}
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is None
    assert report.embed.texts_embedded == len(GOOD_NOTES)
    assert report.embed.texts_failed == 1 and report.pending_embeddings == 1
    assert [MARKER in t for batch in fake_ollama.refused_batches[-1:] for t in batch] == [True]
    failures = _failures(settings)
    assert len(failures) == 1 and MARKER in failures[0][1]
    assert "refused this text" in failures[0][0] and f"status {status}" in failures[0][0]
    # Shown in status and doctor, with the note and the reason.
    doc = collect_status(settings, probe=False)
    assert [f.file for f in doc.embed_failures] == ["Bad.md"]
    assert "refused" in doc.embed_failures[0].reason
    ok, detail = _vector_check(settings)
    assert ok and "Bad.md" in detail
    # Not asked again until its retry time (or until its text changes).
    calls = fake_ollama.embed_calls_without(PROBE_TEXT)  # the dimension probe aside
    index_vault(settings, OllamaClients(settings))
    assert fake_ollama.embed_calls_without(PROBE_TEXT) == calls


def test_ollama_refusing_every_text_and_the_probe_is_an_outage_not_bad_inputs(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    settings = settings_for(_vault(tmp_path), tmp_path / "state", fake_ollama.url)
    fake_ollama.refused = {"": 500}  # every input, the probe too
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is not None and "status 500" in report.embed_error.message
    assert _failures(settings) == []  # nothing blamed on the texts
    fake_ollama.refused = {}
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is None and report.pending_embeddings == 0
