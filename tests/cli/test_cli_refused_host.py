"""A remote OLLAMA_HOST refused by the configuration is reported as refused by every command,
with the setting that allows it, and never tried (issue 14, item 8).

The session's socket guard fails a test that even attempts a connection (or a name lookup)
beyond loopback; the fake Ollama records that nothing was sent to it either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from askvault.cli.main import cli
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env
from support.vault_factory import make_fixture_vault

REMOTE = "http://10.20.30.40:11434"
SETTING = "allow_remote_ollama = true"


@pytest.fixture
def env(tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, str]:
    vault = make_fixture_vault(tmp_path / "vault")
    local = cli_env(vault, tmp_path / "state", fake_ollama.url)
    assert CliRunner().invoke(cli, ["index"], env=local).exit_code == 0  # words and vectors
    fake_ollama.requests.clear()
    return {**local, "OLLAMA_HOST": REMOTE}


def invoke(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_status_text_says_refused_with_the_setting_not_unreachable(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    code, out, _ = invoke(["status"], env)
    assert code == 0
    assert "REFUSED" in out and "10.20.30.40 is not a loopback address" in out
    assert SETTING in out and "NOT reachable" not in out
    assert fake_ollama.requests == []


def test_status_json_marks_the_host_refused_with_its_hint(env: dict[str, str]) -> None:
    code, out, _ = invoke(["status", "--json"], env)
    ollama = json.loads(out)["ollama"]
    assert code == 0
    assert ollama["refused"] is True and ollama["reachable"] is False
    assert SETTING in ollama["hint"] and "loopback" in ollama["error"]


def test_doctor_names_the_setting_instead_of_ollama_serve(env: dict[str, str]) -> None:
    code, out, _ = invoke(["doctor"], env)
    assert code == 1
    assert "FAIL ollama host allowed" in out and SETTING in out
    assert "ollama serve" not in out


@pytest.mark.parametrize("command", ["search", "context"])
def test_search_and_context_answer_from_words_and_say_the_host_is_refused(
    env: dict[str, str], fake_ollama: FakeOllama, command: str
) -> None:
    code, out, err = invoke([command, "embeds", "--json"], env)
    doc = json.loads(out)
    assert code == 0
    assert "refusing to connect" in doc["degraded"] and SETTING in doc["degraded"]
    assert "no embedding model configured" not in err
    assert "refusing to connect" in err  # the words-only warning on stderr
    assert fake_ollama.requests == []


def test_run_refuses_to_start_with_the_setting_and_leaves_questions_untouched(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    vault = Path(env["ASKVAULT_VAULT"])
    question = vault / "queries" / "inbox" / "Remote.md"
    question.parent.mkdir(parents=True, exist_ok=True)
    question.write_text("What do embeds do?\n", encoding="utf-8")
    code, _, err = invoke(["run"], env)  # returns at once: it never retries
    assert code == 1
    assert "refusing to connect to Ollama at http://10.20.30.40:11434" in err
    assert SETTING in err
    assert question.read_text(encoding="utf-8") == "What do embeds do?\n"
    assert not (vault / "queries" / "answers").exists()
    assert fake_ollama.requests == []


def test_index_of_a_refused_host_is_a_configuration_failure_not_a_wait(env: dict[str, str]) -> None:
    code, out, err = invoke(["index"], env)
    assert code == 1
    assert SETTING in err and "embeddings wait" not in err


def test_the_setting_allows_the_host_without_a_lookup(env: dict[str, str]) -> None:
    # Allowed, the host is tried (the guard refuses the connection attempt in tests, so a
    # loopback stand-in is used): the refusal is gone from status.
    allowed = {
        **env,
        "ASKVAULT_OLLAMA__ALLOW_REMOTE_OLLAMA": "true",
        "OLLAMA_HOST": "http://127.0.0.1:9",
    }
    code, out, _ = invoke(["status", "--json"], allowed)
    assert code == 0 and json.loads(out)["ollama"]["refused"] is False
