"""Drill 8: local only. A non-loopback OLLAMA_HOST is refused before any connection, and
proxy variables never route Ollama traffic (issue 15, item 2). A refused host is a setting,
so `run` refuses to start rather than retry it (issue 14, item 8).

In-process, the session's socket guard fails the test if a non-loopback connect (or a
name lookup) is even attempted; the subprocess daemon is checked by its log.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from askvault.adapters.ollama import (
    OllamaEmbedder,
    OllamaGenerator,
    check_host_allowed,
    probe_ollama,
)
from askvault.app.clients import OllamaClients
from askvault.app.daemon import Daemon, default_workers
from askvault.errors import RemoteHostRefused
from askvault.services.admin.doctor import run_checks
from askvault.services.answer.resources import opened
from askvault.services.inbox.ask import ask_question
from invariants import FaultWorld, wait_until
from support.daemon_process import DaemonProcess
from support.fake_ollama import FakeOllama
from support.settings_factory import settings_for

pytestmark = pytest.mark.faults

REMOTE = "http://10.255.255.1:11434"


def test_remote_ollama_host_is_refused_in_process_before_any_connection(
    world: FaultWorld,
    fake_ollama: FakeOllama,
) -> None:
    world.write("Note.md", "# Note\n\nlocal words only\n")
    question = b"What are the local words?\n"
    world.write("queries/inbox/Remote.md", question)
    settings = settings_for(world.vault, world.state, REMOTE)
    # A refusal is a setting, not an outage: `run` does not start (and so never retries it).
    with pytest.raises(RemoteHostRefused) as refused:
        Daemon(settings, default_workers(settings)).run()
    assert "allow_remote_ollama = true" in refused.value.hint
    assert (world.vault / "queries/inbox/Remote.md").read_bytes() == question
    assert _text(world) == "", "no answer note claims the question is retried"
    checks = {c.name: c for c in run_checks(settings, OllamaClients(settings))}
    host = checks["ollama host allowed"]
    assert not host.ok and "loopback" in host.detail and "allow_remote_ollama" in host.hint
    with pytest.raises(RemoteHostRefused), opened(settings, OllamaClients(settings)) as res:
        ask_question(settings, res, "What are the local words?")
    assert fake_ollama.requests == [], "nothing was sent anywhere"
    # The opt-in is honoured (checked without connecting).
    assert check_host_allowed(REMOTE, allow_remote=True) == REMOTE


def test_remote_ollama_host_is_refused_by_the_daemon_subprocess(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
) -> None:
    world.write("Note.md", "# Note\n\nlocal words only\n")
    daemon = daemons(ready=False, OLLAMA_HOST=REMOTE)
    assert daemon.wait(15) == 1, "a refused host stops `run` at once, with exit 1"
    log = daemon.log()
    assert "refusing to connect to Ollama at http://10.255.255.1" in log
    assert "allow_remote_ollama = true" in log
    assert "10.255.255.1:11434 (" not in log, "no connection error: never tried"
    assert fake_ollama.requests == []


def _text(world: FaultWorld, name: str = "Remote") -> str:
    path = world.vault / f"queries/answers/{name}.md"
    return path.read_text(encoding="utf-8") if path.exists() else ""


class _ProxyTrap:
    """A TCP listener on 127.0.0.1 standing in for a proxy: records every connection."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.connections: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.5)
                try:
                    self.connections.append(conn.recv(4096))
                except OSError:
                    self.connections.append(b"")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


PROXY_VARIABLES = (
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
)


@pytest.fixture
def proxy_trap(monkeypatch: pytest.MonkeyPatch) -> Iterator[_ProxyTrap]:
    """Every proxy variable points at the trap; NO_PROXY cannot exempt the loopback host."""
    trap = _ProxyTrap()
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, trap.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield trap
    finally:
        trap.close()


def test_proxy_variables_never_route_embed_chat_or_status_probe(
    fake_ollama: FakeOllama,
    proxy_trap: _ProxyTrap,
) -> None:
    with OllamaEmbedder(fake_ollama.url, "nomic-embed-text", timeout_s=5) as embedder:
        assert len(embedder.embed_documents(["vault text must stay here"])) == 1
    with OllamaGenerator(fake_ollama.url, timeout_s=5) as generator:
        reply = "".join(
            generator.stream(
                [{"role": "user", "content": "vault excerpt"}], model="llama3.2", num_ctx=2048
            )
        )
    assert reply
    status = probe_ollama(fake_ollama.url, timeout_s=5, allow_remote=False)
    assert status.reachable and status.version
    paths = {path for path, _ in fake_ollama.requests}
    assert {"/api/embed", "/api/chat", "/api/tags", "/api/version"} <= paths
    assert proxy_trap.connections == [], "no request reached the proxy"


def test_proxy_variables_never_route_the_daemon_subprocess(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
    proxy_trap: _ProxyTrap,
) -> None:
    world.write("Note.md", "# Note\n\nThe lighthouse keeper logs the tides.\n")
    world.write("queries/inbox/Tides.md", "What does the lighthouse keeper log?\n")
    daemon = daemons(**{name: proxy_trap.url for name in PROXY_VARIABLES})
    wait_until(lambda: "[[Note" in _text(world, "Tides"), 30, "the question is answered")
    wait_until(lambda: fake_ollama.embed_calls > 0, 10, "the note is embedded")
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(5) == 0
    paths = {path for path, _ in fake_ollama.requests}
    assert {"/api/embed", "/api/chat"} <= paths
    assert proxy_trap.connections == [], "no request reached the proxy"
