"""`askvault ask`: streamed answer, citation report, log line; --json; --save; Ollama down."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from askvault.cli.main import cli
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env
from support.vault_factory import make_fixture_vault

REPLY = "An embed shows another note inline [[Embeds]]. Invented [[Nowhere]]."


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return make_fixture_vault(tmp_path / "vault")


@pytest.fixture
def env(vault: Path, tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, str]:
    env = cli_env(vault, tmp_path / "state", fake_ollama.url)
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    return env


def test_ask_streams_then_reports_citations_then_logs(
    env: dict[str, str], vault: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    result = CliRunner().invoke(cli, ["ask", "What does an embed show?"], env=env)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.index(REPLY) < out.index("## Citation report") < out.index("Logged: query |")
    assert "`Embeds` — **resolved** → `Embeds.md`" in out
    assert "`Nowhere` — **broken**" in out
    assert out.rstrip().endswith("Logged: query | What does an embed show?")
    log = (vault / "queries/log.md").read_text(encoding="utf-8")
    assert log == f"## [{time.strftime('%Y-%m-%d')}] query | What does an embed show?\n"


def test_ask_shows_the_answer_as_published_when_checking_changed_it(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    """The stream is the model's words; when excerpt numbers became links or a link became
    plain text, the terminal also shows what the note says (it used to claim "broken links
    shown as plain text" whatever had changed)."""
    fake_ollama.chat_script = [REPLY]
    out = CliRunner().invoke(cli, ["ask", "What does an embed show?"], env=env).stdout
    published = out.split("As checked and published:\n", 1)[1].split("\n## Citation report")[0]
    assert "[[Embeds]]" in published and "Invented." in published
    assert "Nowhere" not in published
    assert "[^1]: “An embed shows another note inline" in published
    assert "broken links shown as plain text" not in out


def test_ask_shows_the_reply_without_the_control_characters_that_drive_a_terminal(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    """A reply could clear the screen, set the window title or rewrite the printed report."""
    fake_ollama.chat_script = [
        "An embed shows another note inline\x1b[2J\x1b]0;pwned\x07 [[Embeds]].\r\x1b[1A"
    ]
    result = CliRunner().invoke(cli, ["ask", "What does an embed show?"], env=env)
    assert result.exit_code == 0, result.output
    assert not any(ch in result.stdout + result.stderr for ch in "\x1b\x07\x9b\r")
    assert "An embed shows another note inline" in result.stdout


def test_ask_json_gives_one_document(env: dict[str, str], fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_script = [REPLY]
    result = CliRunner().invoke(cli, ["ask", "What does an embed show?", "--json"], env=env)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {"answer", "status", "citations", "sources", "grounding", "warnings", "timings"} <= set(
        doc
    )
    assert doc["status"] == "answered"
    first = doc["citations"][0]
    assert (first["target"], first["state"], first["path"], first["support"]) == (
        "Embeds",
        "resolved",
        "Embeds.md",
        "supported",
    )
    assert doc["citations"][1]["state"] == "broken"
    assert "Invented." in doc["answer"] and "Nowhere" not in doc["answer"]
    assert doc["sentences"][0]["quote"] == "An embed shows another note inline: ![[Welcome]]."


def test_ask_json_says_the_distance_cut_off_in_force_and_where_it_comes_from(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY, REPLY]
    question = ["ask", "What does an embed show?", "--json"]
    doc = json.loads(CliRunner().invoke(cli, question, env=env).stdout)
    assert doc["nearest_distance"] is not None
    # The suite's model is never measured and this vault has too few notes to calibrate.
    assert (doc["distance_cutoff"], doc["distance_cutoff_source"]) == (None, "none")
    env = {**env, "ASKVAULT_QUERIES__MAX_DISTANCE": "0.95"}
    doc = json.loads(CliRunner().invoke(cli, question, env=env).stdout)
    assert (doc["distance_cutoff"], doc["distance_cutoff_source"]) == (0.95, "setting")


def test_ask_save_writes_the_answer_note(
    env: dict[str, str], vault: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY, REPLY]
    for _ in range(2):
        result = CliRunner().invoke(cli, ["ask", "What does an embed show?", "--save"], env=env)
        assert result.exit_code == 0, result.output
    assert (vault / "queries/answers/What does an embed show.md").exists()
    assert (vault / "queries/answers/What does an embed show (2).md").exists()
    assert "Saved: queries/answers/What does an embed show (2).md" in result.stdout
    assert (
        (vault / "queries/log.md")
        .read_text(encoding="utf-8")
        .splitlines()[-1]
        .endswith(
            "query | [[queries/answers/What does an embed show (2)|What does an embed show?]]"
        )
    )


def test_ask_with_ollama_down_shows_passages_and_exits_1(
    env: dict[str, str], vault: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    result = CliRunner().invoke(cli, ["ask", "embed another note inline"], env=env)
    assert result.exit_code == 1
    assert "extractive, not an answer" in result.stdout
    assert "askvault: no answer (waiting)" in result.stderr
    assert not (vault / "queries/log.md").exists()


def test_ask_follow_up_carries_the_notes_questions_and_leaves_the_note_alone(
    env: dict[str, str], vault: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = ["Link a block with a caret id [[Embeds]]."]
    answers = vault / "queries/answers"
    answers.mkdir(parents=True)
    note = answers / "Embeds.md"
    data = b'---\nquestion: "What does an embed show?"\n---\nAn embed shows a note.\n'
    note.write_bytes(data)
    result = CliRunner().invoke(
        cli, ["ask", "--follow-up", "Embeds", "and how do I link a block of it?"], env=env
    )
    assert result.exit_code == 0, result.output
    assert "caret id" in result.stdout
    (chat,) = fake_ollama.requests_to("/api/chat")
    assert "Question: and how do I link a block of it? (embed show)" in json.dumps(chat)
    assert note.read_bytes() == data


def test_ask_follow_up_keeps_the_notes_options_and_since_overrides_its_period(
    env: dict[str, str], vault: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = ["Rye ferments [[Deep Note]].", "Rye ferments [[Deep Note]]."]
    answers = vault / "queries/answers"
    answers.mkdir(parents=True)
    (answers / "Rye.md").write_bytes(
        b'---\nquestion: "What is about rye?"\nstatus: answered\nask_folders:\n  - "folder"\n'
        b'ask_since: "1999-01-01"\nask_until: "1999-12-31"\n---\nRye.\n'
    )
    kept = CliRunner().invoke(cli, ["ask", "--follow-up", "Rye", "and embeds?", "--json"], env=env)
    doc = json.loads(kept.stdout)
    assert doc["period"]["since"] == "1999-01-01" and doc["status"] == "no-answer"
    overridden = CliRunner().invoke(
        cli, ["ask", "--follow-up", "Rye", "and embeds?", "--since", "2000", "--json"], env=env
    )
    doc = json.loads(overridden.stdout)
    assert doc["period"]["since"] == "2000-01-01" and doc["period"]["until"] is None
    assert doc["grounding"] and all(p.startswith("folder/") for p in doc["grounding"])


def test_ask_follow_up_with_an_invalid_option_in_the_note_names_it(
    env: dict[str, str], vault: Path
) -> None:
    answers = vault / "queries/answers"
    answers.mkdir(parents=True)
    (answers / "Rye.md").write_bytes(
        b'---\nquestion: "What is about rye?"\nask_folders: ["gone"]\n---\nRye.\n'
    )
    result = CliRunner().invoke(cli, ["ask", "--follow-up", "Rye", "and?"], env=env)
    assert result.exit_code == 1
    assert "invalid question options in queries/answers/Rye.md: ask_folders: 'gone'" in (
        result.stderr
    )


def test_ask_follow_up_of_a_note_that_is_no_answer_note_says_so(
    env: dict[str, str], vault: Path
) -> None:
    result = CliRunner().invoke(cli, ["ask", "--follow-up", "Welcome", "and?"], env=env)
    assert result.exit_code != 0
    assert "no `question:` property" in result.output
    result = CliRunner().invoke(cli, ["ask", "--follow-up", "Nope", "and?"], env=env)
    assert "no answer note 'Nope'" in result.output
