"""Start-up cost (issues 11 and 22): `askvault --help`, `status` and a search import none of
the heavy libraries they do not use (the `ollama` client with httpx and pydantic, numpy
unless the query is embedded, the sqlite_vec package, the daemon's watchdog and APScheduler).
Each runs in a fresh interpreter, which then reports its `sys.modules`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from askvault.app.clients import OllamaClients
from askvault.services.index.index_pass import index_vault
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.settings_factory import cli_env, settings_for
from support.vault_factory import make_fixture_vault

HEAVY = (
    "ollama",
    "httpx",
    "pydantic",
    "numpy",
    "sqlite_vec",
    "rank_bm25",
    "watchdog",
    "apscheduler",
)


def _imported_by(args: list[str], env: dict[str, str] | None = None) -> tuple[list[str], str]:
    """Run `askvault ARGS` in a fresh interpreter: (heavy modules it imported, stdout)."""
    script = textwrap.dedent(f"""
        import json, sys
        from askvault.cli.main import cli
        try:
            cli({args!r}, prog_name="askvault", standalone_mode=False)
        except SystemExit:
            pass
        sys.stdout.flush()
        print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    last = proc.stderr.strip().splitlines()[-1]
    return json.loads(last), proc.stdout


def test_importing_the_cli_imports_no_heavy_library() -> None:
    script = f"import sys, askvault.cli.main; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()
    assert out == "[]"


def test_help_imports_no_heavy_library() -> None:
    modules, out = _imported_by(["--help"])
    assert "search" in out and "status" in out
    assert modules == []


def test_status_probes_ollama_without_the_ollama_client(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    vault = make_fixture_vault(tmp_path / "vault")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    modules, out = _imported_by(
        ["status", "--json"], cli_env(vault, tmp_path / "state", fake_ollama.url)
    )
    doc = json.loads(out)
    assert doc["ollama"]["reachable"] is True and doc["embedded_chunks"] == doc["chunks"]
    assert modules == []


@pytest.mark.parametrize("indexed_with_vectors", [False, True])
def test_a_search_imports_numpy_only_when_it_embeds_the_query_and_never_the_ollama_client(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    indexed_with_vectors: bool,
) -> None:
    vault = make_fixture_vault(tmp_path / "vault")
    url = fake_ollama.url
    if not indexed_with_vectors:
        fake_ollama.set_fault("down")  # the index is built for words only
    settings = settings_for(vault, tmp_path / "state", url)
    index_vault(settings, OllamaClients(settings))
    fake_ollama.recover()
    before = len(fake_ollama.requests)
    modules, out = _imported_by(
        ["search", "embeds", "--json"], cli_env(vault, tmp_path / "state", url)
    )
    doc = json.loads(out)
    assert doc["hits"]
    if indexed_with_vectors:
        # The query embedded over the standard library (issue 22 item 6): one /api/embed
        # (the test settings give the input budget, so no /api/show).
        assert doc["degraded"] is None and modules == ["numpy"]
        assert [p for p, _ in fake_ollama.requests[before:]] == ["/api/embed"]
    else:
        assert "no vectors" in doc["degraded"]
        assert modules == []
        assert fake_ollama.requests[before:] == []


@pytest.mark.parametrize("fault", ["down", "missing model"])
def test_a_search_with_ollama_down_or_the_model_missing_imports_nothing_heavy(
    tmp_path: Path, fake_ollama: FakeOllama, fault: str
) -> None:
    vault = make_fixture_vault(tmp_path / "vault")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    if fault == "down":
        fake_ollama.set_fault("down")  # connection refused on its port
    else:
        fake_ollama.models.remove(f"{FAKE_EMBED_MODEL}:latest")
    modules, out = _imported_by(
        ["search", "embeds", "--json"], cli_env(vault, tmp_path / "state", fake_ollama.url)
    )
    doc = json.loads(out)
    assert doc["hits"] and modules == []
    expected = (
        f"semantic search unavailable: Ollama is not reachable at {fake_ollama.url}"
        " (connection refused) (is `ollama serve` running? Try `askvault doctor`)"
        if fault == "down"
        else f"semantic search unavailable: model '{FAKE_EMBED_MODEL}' is not available on"
        f" Ollama at {fake_ollama.url} (run `ollama pull {FAKE_EMBED_MODEL}`)"
    )
    assert doc["degraded"] == expected


def test_an_unchanged_reindex_asks_ollama_only_for_its_model_list_and_reported_length(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    vault = make_fixture_vault(tmp_path / "vault")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    before = len(fake_ollama.requests)
    modules, out = _imported_by(
        ["index", "--json"], cli_env(vault, tmp_path / "state", fake_ollama.url)
    )
    doc = json.loads(out)
    assert doc["embed_error"] is None and doc["pending_embeddings"] == 0
    # The digest listed and the length reported: no client loaded, nothing embedded.
    assert [path for path, _ in fake_ollama.requests[before:]] == ["/api/tags", "/api/show"]
    assert modules == []


def test_a_model_pulled_again_with_a_new_digest_is_embedded_again(
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    vault = make_fixture_vault(tmp_path / "vault")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    first = index_vault(settings, OllamaClients(settings))
    fake_ollama.digests[f"{FAKE_EMBED_MODEL}:latest"] = "sha256-" + "1" * 64
    # The skip check sees the new digest: full pass.
    again = index_vault(settings, OllamaClients(settings))
    assert again.embed.texts_embedded == first.embed.texts_embedded > 0
    assert again.embed.promoted and again.pending_embeddings == 0


def test_the_cli_loads_the_service_code_only_for_a_service_command() -> None:
    """`askvault service` writes unit files; every other command's start-up skipped it
    (15 ms of a 110 ms word search)."""
    from askvault.cli import service_cmd
    from askvault.services.admin import user_service

    assert service_cmd.PLATFORMS == user_service.PLATFORMS
    script = "import sys, askvault.cli.main; print('askvault.services.admin.user_service' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()
    assert out == "False"
