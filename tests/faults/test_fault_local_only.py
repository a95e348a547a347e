"""Drill 8: local only. A non-loopback OLLAMA_HOST is refused before any connection.

In-process, the session's socket guard fails the test if a non-loopback connect (or a
name lookup) is even attempted; the subprocess daemon is checked by its log.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest
from in_process import InProcessDaemon
from invariants import FaultWorld, wait_until

from askvault.adapters.ollama import check_host_allowed
from askvault.services.doctor import run_checks
from askvault.services.ask import ask_question
from askvault.errors import RemoteHostRefused
from e2e.daemon_helpers import DaemonProcess
from support.fake_ollama import FakeOllama
from support.settings_factory import settings_for

pytestmark = pytest.mark.faults

REMOTE = "http://10.255.255.1:11434"


def test_remote_ollama_host_is_refused_in_process_before_any_connection(
    world: FaultWorld, fake_ollama: FakeOllama, inproc: Callable[..., InProcessDaemon],
) -> None:
    world.write("Note.md", "# Note\n\nlocal words only\n")
    question = b"What are the local words?\n"
    world.write("queries/inbox/Remote.md", question)
    daemon = inproc(**{"ollama.host": REMOTE})
    settings = settings_for(world.vault, world.state, REMOTE)
    wait_until(lambda: "status: waiting" in _text(world), 20, "the question waits")
    assert "refusing to connect" in _text(world)
    checks = {c.name: c for c in run_checks(settings)}
    assert not checks["ollama reachable"].ok and "loopback" in checks["ollama reachable"].detail
    with pytest.raises(RemoteHostRefused):
        ask_question(settings, "What are the local words?")
    assert daemon.alive() and daemon.stop() == 0
    assert fake_ollama.requests == [], "nothing was sent anywhere"
    # The opt-in is honoured (checked without connecting).
    assert check_host_allowed(REMOTE, allow_remote=True) == REMOTE


def test_remote_ollama_host_is_refused_by_the_daemon_subprocess(
    world: FaultWorld, fake_ollama: FakeOllama, daemons: Callable[..., DaemonProcess],
) -> None:
    world.write("Note.md", "# Note\n\nlocal words only\n")
    daemon = daemons(OLLAMA_HOST=REMOTE)
    daemon.wait_for_log("refusing to connect to Ollama at http://10.255.255.1", 10)
    wait_until(lambda: daemon.proc.poll() is None, 1, "the daemon keeps indexing")
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(5) == 0
    assert "10.255.255.1:11434 (" not in daemon.log(), "no connection error: never tried"


def _text(world: FaultWorld) -> str:
    path = world.vault / "queries/answers/Remote.md"
    return path.read_text(encoding="utf-8") if path.exists() else ""
