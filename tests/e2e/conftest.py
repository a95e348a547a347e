"""Fixtures of the end-to-end daemon tests (helpers in tests/support/daemon_process.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.daemon_process import DaemonProcess, IndexProbe, launched_daemons
from support.fake_ollama import FakeOllama


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def probe(vault: Path, state_dir: Path) -> IndexProbe:
    return IndexProbe(vault, state_dir)


@pytest.fixture
def daemon_factory(
    vault: Path, state_dir: Path, fake_ollama: FakeOllama, tmp_path: Path
) -> Iterator[Callable[..., DaemonProcess]]:
    """Start `askvault run` subprocesses on the temp vault; each is killed at teardown."""
    with launched_daemons(vault, state_dir, fake_ollama.url, tmp_path) as start:
        yield start
