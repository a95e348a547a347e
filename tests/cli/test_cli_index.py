"""`askvault index`, `status`, `doctor`: the command-line contract of DESIGN §6."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli_invoke import invoke
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env
from support.vault_factory import INDEXED_NOTES, make_fixture_vault

STATUS_KEYS = {
    "notes",
    "chunks",
    "embedded_chunks",
    "pending_embeddings",
    "skipped",
    "last_change_indexed_at",
    "ollama",
    "queue",
    "daemon",
}


@pytest.fixture
def env(tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, str]:
    vault = make_fixture_vault(tmp_path / "vault")
    return cli_env(vault, tmp_path / "state", fake_ollama.url)


def test_index_json_then_status_json_report_every_chunk_embedded(env: dict[str, str]) -> None:
    code, out, _ = invoke(["index", "--json"], env)
    assert code == 0
    assert json.loads(out)["added"] == len(INDEXED_NOTES)
    code, out, _ = invoke(["status", "--json"], env)
    doc = json.loads(out)
    assert code == 0 and STATUS_KEYS <= set(doc)
    assert doc["notes"] == len(INDEXED_NOTES)
    assert doc["embedded_chunks"] == doc["chunks"] and doc["pending_embeddings"] == 0
    assert doc["daemon"] is None and doc["queue"] == 0
    assert set(doc["ollama"]) >= {"url", "reachable", "embed_model", "chat_model"}
    assert doc["ollama"]["reachable"] is True


def test_doctor_passes_on_a_healthy_index_and_fails_with_hints(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    invoke(["index"], env)
    code, out, _ = invoke(["doctor"], env)
    assert code == 0, out
    assert "FAIL" not in out
    fake_ollama.set_fault("down")
    code, out, _ = invoke(["doctor"], env)
    assert code == 1
    assert "FAIL ollama reachable" in out and "hint:" in out


def test_doctor_reports_a_missing_model_with_the_pull_command(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    invoke(["index"], env)
    code, out, _ = invoke(["doctor", "--chat-model", "not-pulled"], env)
    assert code == 1
    assert "ollama pull not-pulled" in out


def test_doctor_fails_while_embeddings_are_pending(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    code, _, err = invoke(["index"], env)
    # The word index is complete: only embeddings wait, which is not a failure of `index`.
    assert code == 0 and "embeddings wait" in err and "word index is complete" in err
    fake_ollama.recover()
    code, out, _ = invoke(["doctor", "--json"], env)
    checks = {c["check"]: c for c in json.loads(out)}
    assert code == 1
    assert (
        checks["vectors"]["ok"] is False
        or checks.get("vectors match chunks", {}).get("ok") is False
    )


def test_errors_are_one_line_and_a_hint_with_exit_1(tmp_path: Path) -> None:
    env = {"ASKVAULT_VAULT": str(tmp_path / "missing"), "ASKVAULT_STATE_DIR": str(tmp_path)}
    code, out, err = invoke(["status"], env)
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith("askvault: ") and lines[1].startswith("hint: ")
    assert len(lines) == 2


def test_invalid_configuration_lists_every_key(tmp_path: Path) -> None:
    env = {
        "ASKVAULT_VAULT": str(tmp_path),
        "ASKVAULT_OLLAMA__TIMEOUT_S": "0",
        "ASKVAULT_DAEMON__LOG_FORMAT": "xml",
        "ASKVAULT_STATE_DIR": str(tmp_path / "s"),
    }
    code, _, err = invoke(["status"], env)
    assert code == 1
    assert "ollama.timeout_s" in err and "daemon.log_format" in err


def test_usage_errors_exit_2(env: dict[str, str]) -> None:
    code, _, _ = invoke(["index", "--no-such-flag"], env)
    assert code == 2


def test_remote_ollama_host_is_refused_before_any_connection(env: dict[str, str]) -> None:
    env = {**env, "OLLAMA_HOST": "http://10.20.30.40:11434"}
    code, _, err = invoke(["index"], env)
    assert code == 1
    assert "allow_remote_ollama" in err


def test_python_dash_m_askvault_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "askvault", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    for command in ("index", "status", "doctor"):
        assert command in done.stdout
