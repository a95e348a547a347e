"""The fixtures of the tests that step an inbox, defined once: `vault` (the fixture vault with
an empty inbox), `settings` (over it, indexed, short settle times) and `start` (starts
InboxDrivers, closed after the test). A test module binds the ones it uses to module
names, as pytest finds fixtures there:

    from support import inbox_fixtures

    vault, settings, start = inbox_fixtures.vault, inbox_fixtures.settings, inbox_fixtures.start

(bound, not imported by name: ruff would take each test's argument for a redefinition).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from askvault.settings import Settings
from support.fake_ollama import FakeOllama
from support.inbox_driver import InboxDriver, driver_starter, inbox_settings, inbox_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """The fixture vault, with an empty `queries/inbox/`."""
    return inbox_vault(tmp_path / "vault")


@pytest.fixture
def settings(vault: Path, tmp_path: Path, fake_ollama: FakeOllama) -> Settings:
    """Settings over `vault`, indexed by the fake Ollama (support.inbox_driver.inbox_settings)."""
    return inbox_settings(vault, tmp_path / "state", fake_ollama.url)


@pytest.fixture
def start(settings: Settings) -> Iterator[Callable[..., InboxDriver]]:
    """`start(**kw)` starts an InboxDriver over `settings`; every one is closed after."""
    with driver_starter(settings) as start:
        yield start


def note_status(path: Path) -> str | None:
    """The `status:` of the note at `path` (None: no such line, or no such file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("status: "):
            return line.split(": ", 1)[1]
    return None
