"""Fixtures shared by the integration tests: a module defines `vault`, these index it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from askvault.adapters.db import Connection, connect
from askvault.app.clients import OllamaClients
from askvault.services.index_pass import index_vault
from askvault.settings import Settings
from support.fake_ollama import FakeOllama
from support.settings_factory import settings_for


@pytest.fixture
def settings(vault: Path, tmp_path: Path, fake_ollama: FakeOllama) -> Settings:
    """Settings over the module's `vault`, indexed (words and vectors) by the fake Ollama."""
    s = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(s, OllamaClients(s))
    return s


@pytest.fixture
def conn(settings: Settings) -> Iterator[Connection]:
    """A connection to the indexed vault's database, closed after the test."""
    c = connect(settings.db_path)
    yield c
    c.close()
