"""Every `--json` document is its typed model: what the CLI prints validates against the
schema derived from the model (the same schema the MCP tools show agents), and a field is
printed even when there is nothing to say (null), so a script can rely on the keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from askvault.cli.main import cli
from askvault.core.schema import output_schema
from askvault.services.documents.answer import AnswerDocument
from askvault.services.documents.context import ContextDocument
from askvault.services.documents.search import SearchDocument
from askvault.services.documents.status import StatusDocument
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env
from support.vault_factory import make_fixture_vault

REPLY = "An embed shows another note inline [[Embeds]]. Cats rule the moon [[Nowhere]]."


@pytest.fixture
def env(tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, str]:
    vault = make_fixture_vault(tmp_path / "vault")
    return cli_env(vault, tmp_path / "state", fake_ollama.url)


def json_of(env: dict[str, str], *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, [*args, "--json"], env=env, catch_exceptions=False)
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.mark.parametrize(
    ("args", "model"),
    [
        (("search", "embed another note"), SearchDocument),
        (("search", "embed another note", "--explain"), SearchDocument),
        (("context", "fermentation of rye", "--include-sources"), ContextDocument),
        (("status",), StatusDocument),
        (("ask", "What does an embed show?"), AnswerDocument),
    ],
)
def test_each_json_document_validates_against_the_schema_of_its_model(
    env: dict[str, str], fake_ollama: FakeOllama, args: tuple[str, ...], model: type
) -> None:
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    fake_ollama.chat_script = [REPLY]
    doc = json_of(env, *args)
    jsonschema.Draft202012Validator(output_schema(model)).validate(doc)
    if model is AnswerDocument:  # the reply's two links: one checked, one broken
        assert [c["state"] for c in doc["citations"]] == ["resolved", "broken"]


def test_search_explain_adds_the_trace_and_the_fusion_and_only_then(env: dict[str, str]) -> None:
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    plain = json_of(env, "search", "embed another note")
    explained = json_of(env, "search", "embed another note", "--explain")
    assert set(plain) == {"query", "hits", "degraded"} and "explain" not in plain["hits"][0]
    assert explained["fusion"] == "convex" and "words" in explained["hits"][0]["explain"]


def test_status_before_the_first_index_prints_every_key_with_null_for_nothing(
    env: dict[str, str],
) -> None:
    doc = json_of(env, "status")
    assert doc["vault_unavailable"] is None and doc["notes"] == 0
    assert doc["ollama"]["reachable"] is True
    assert (doc["ollama"]["error"], doc["ollama"]["hint"]) == (None, None)
    jsonschema.Draft202012Validator(output_schema(StatusDocument)).validate(doc)


@pytest.mark.parametrize(
    ("args", "model"),
    [
        (("search", "embed another note", "--since", "2000-01"), SearchDocument),
        (("context", "fermentation of rye", "--until", "2999"), ContextDocument),
        (("search", "embed another note in 1999"), SearchDocument),
    ],
)
def test_a_period_adds_its_document_and_it_validates(
    env: dict[str, str], args: tuple[str, ...], model: type
) -> None:
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    doc = json_of(env, *args)
    jsonschema.Draft202012Validator(output_schema(model)).validate(doc)
    assert set(doc["period"]) == {"words", "since", "until", "notes", "searched"}


def test_search_since_and_until_narrow_the_hits(env: dict[str, str]) -> None:
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    found = json_of(env, "search", "embed another note", "--since", "2000", "--until", "2999")
    none = json_of(env, "search", "embed another note", "--until", "1999-12-31")
    assert found["hits"] and found["period"]["words"] == "since 2000 until 2999"
    assert none["hits"] == [] and none["period"]["notes"] == 0


def test_a_since_that_is_no_date_exits_1_naming_it(env: dict[str, str]) -> None:
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    result = CliRunner().invoke(cli, ["search", "embeds", "--since", "someday"], env=env)
    assert result.exit_code == 1
    assert "'someday' is not a date" in result.output


def test_the_text_output_names_the_period(env: dict[str, str]) -> None:
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    result = CliRunner().invoke(cli, ["search", "embeds", "--until", "1999"], env=env)
    assert result.exit_code == 0
    assert result.output.splitlines()[0] == "period: “until 1999” = until 1999-12-31 (0 notes)"


def test_ask_about_an_empty_period_is_a_no_answer_that_says_so(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    doc = json_of(env, "ask", "What does an embed show, in 1999?")
    jsonschema.Draft202012Validator(output_schema(AnswerDocument)).validate(doc)
    assert doc["status"] == "no-answer" and doc["period"]["notes"] == 0
    assert "No note of your vault falls in “in 1999”" not in doc["reason"]
    assert "No note of your vault falls in “1999” (1999-01-01 to 1999-12-31)" in doc["reason"]
    text = CliRunner().invoke(cli, ["ask", "What does an embed show?", "--until", "1999"], env=env)
    assert "Period: Searched the notes of “until 1999” (until 1999-12-31): 0 notes" in text.output
    assert "No note of your vault falls in “until 1999”" in text.output
    assert fake_ollama.requests_to("/api/chat") == []
