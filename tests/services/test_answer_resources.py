"""services/answer/resources.py: the resources one command opens for its answer, and closes."""

from __future__ import annotations

from pathlib import Path

import pytest

from askvault.errors import OllamaUnavailable
from askvault.services.answer.resources import AnswerResources, opened
from support.fake_ollama import FakeOllama
from support.settings_factory import settings_for


class _Client:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def close(self) -> None:
        self.log.append(f"closed {self.name}")


class _Clients:
    """Model clients that record what was made and closed; `fail` names one that raises."""

    def __init__(self, fail: str = "") -> None:
        self.log: list[str] = []
        self.fail = fail

    def _make(self, name: str) -> _Client:
        if name == self.fail:
            raise OllamaUnavailable(f"{name} cannot be made", "")
        self.log.append(f"made {name}")
        return _Client(self.log, name)

    def generator(self) -> _Client:
        return self._make("generator")

    def embedder(self) -> _Client:
        return self._make("embedder")

    def query_embedder(self) -> _Client:
        return self._make("query embedder")


def _settings(tmp_path: Path, fake_ollama: FakeOllama):  # type: ignore[no-untyped-def]
    (tmp_path / "vault").mkdir()
    return settings_for(tmp_path / "vault", tmp_path / "state", fake_ollama.url)


def test_what_a_command_opens_is_closed_when_it_ends(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    clients = _Clients()
    with opened(_settings(tmp_path, fake_ollama), clients) as resources:  # type: ignore[arg-type]
        assert isinstance(resources, AnswerResources) and resources.embedder is not None
        assert resources.conn.execute("SELECT 1").fetchone() == (1,)
        conn = resources.conn
    assert clients.log == ["made generator", "made embedder", "closed embedder", "closed generator"]
    with pytest.raises(Exception, match="closed"):
        conn.execute("SELECT 1")


def test_an_embedder_that_cannot_be_made_is_left_out_and_the_rest_is_lent(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    clients = _Clients(fail="embedder")
    with opened(_settings(tmp_path, fake_ollama), clients) as resources:  # type: ignore[arg-type]
        assert resources.embedder is None and resources.generator is not None
    assert clients.log == ["made generator", "closed generator"]


def test_a_chat_client_that_cannot_be_made_closes_the_connection_and_says_why(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    clients = _Clients(fail="generator")
    settings = _settings(tmp_path, fake_ollama)
    with pytest.raises(OllamaUnavailable, match="generator cannot be made"):
        with opened(settings, clients):  # type: ignore[arg-type]
            pytest.fail("not reached")
    assert clients.log == []


def test_a_failure_inside_closes_everything_made(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    clients = _Clients()
    with pytest.raises(RuntimeError, match="the answer failed"):
        with opened(_settings(tmp_path, fake_ollama), clients):  # type: ignore[arg-type]
            raise RuntimeError("the answer failed")
    assert clients.log[-2:] == ["closed embedder", "closed generator"]
