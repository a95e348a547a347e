"""Shared fixtures: the fake Ollama server, the no-remote-network guard, the leak check, and
an indexed copy of a test module's `vault` (`settings`, `conn`)."""

from __future__ import annotations

import ipaddress
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from askvault.adapters.db import Connection, connect
from askvault.settings import Settings
from support.fake_ollama import FakeOllama  # tests/ is on sys.path (rootdir conftest)
from support.index_templates import index_copy
from support.leaks import LeakTracker
from support.settings_factory import settings_for

_LOCAL_NAMES = {"localhost", "localhost.", "", "0.0.0.0", "::"}


def _is_local(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    host = str(host).strip("[]").split("%", 1)[0]
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False  # any other host name would need DNS, itself network traffic
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


class SocketGuard:
    """Records and refuses every connection (and name lookup) that would leave the machine."""

    def __init__(self) -> None:
        self.violations: list[str] = []

    def check(self, sock: socket.socket | None, address: Any, what: str) -> None:
        if sock is not None and sock.family == getattr(socket, "AF_UNIX", None):
            return
        host = address[0] if isinstance(address, tuple) else address
        if not _is_local(host):
            self.violations.append(f"{what} {address!r}")
            raise ConnectionRefusedError(
                f"test socket guard: no network beyond loopback ({address!r})"
            )


@pytest.fixture(scope="session", autouse=True)
def _socket_guard_installed() -> Iterator[SocketGuard]:
    guard = SocketGuard()
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex
    original_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        guard.check(self, address, "connect")
        return original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        guard.check(self, address, "connect_ex")
        return original_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        guard.check(None, host, "getaddrinfo")
        return original_getaddrinfo(host, *args, **kwargs)

    patcher = pytest.MonkeyPatch()
    patcher.setattr(socket.socket, "connect", connect)
    patcher.setattr(socket.socket, "connect_ex", connect_ex)
    patcher.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        yield guard
    finally:
        patcher.undo()


@pytest.fixture(autouse=True)
def socket_guard(_socket_guard_installed: SocketGuard) -> Iterator[SocketGuard]:
    """Fails the test if it tried to reach a non-loopback address, even if the error was caught."""
    guard = _socket_guard_installed
    guard.violations.clear()
    yield guard
    if guard.violations:
        found, guard.violations[:] = list(guard.violations), []
        pytest.fail(f"test tried to reach the network: {found}")


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    """A started fake Ollama server on 127.0.0.1 (random port), always stopped afterwards."""
    server = FakeOllama().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _runtime_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("run")


@pytest.fixture(autouse=True)
def _private_runtime_dir(_runtime_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's vault locks live in its own runtime dir (inherited by the subprocesses
    it starts), never in the user's $XDG_RUNTIME_DIR/askvault. A folder made in one folder
    of the session: pytest numbers a `mktemp` folder by listing every folder of its base
    first, which cost 3-15 ms a test once a worker's base held a thousand."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", tempfile.mkdtemp(dir=_runtime_dirs))


@pytest.fixture(scope="session")
def _leak_tracker_installed() -> Iterator[LeakTracker]:
    tracker = LeakTracker()
    tracker.install()
    try:
        yield tracker
    finally:
        tracker.uninstall()


@pytest.fixture(autouse=True)
def leak_check(_leak_tracker_installed: LeakTracker) -> Iterator[None]:
    """Fails the test if it left open a thread, a watchdog observer, a listening server or
    a SQLite connection that it started (STYLE rule 12); its connections are closed then,
    so the next test starts clean. Session-scoped fixtures are set up before the window
    opens, so they are never counted."""
    tracker = _leak_tracker_installed
    tracker.open_window()
    yield
    problems = tracker.close_window()
    if problems:
        pytest.fail("test left open: " + "; ".join(problems), pytrace=False)


# -- a test module defines `vault`, these index it ------------------------------------------


@pytest.fixture
def settings(vault: Path, tmp_path: Path, fake_ollama: FakeOllama) -> Settings:
    """Settings over the module's `vault`, indexed (words and vectors) by the fake Ollama
    (from a template index of the same vault, support/index_templates.py)."""
    s = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_copy(s)
    return s


@pytest.fixture
def conn(settings: Settings) -> Iterator[Connection]:
    """A connection to the indexed vault's database, closed after the test."""
    c = connect(settings.db_path)
    yield c
    c.close()
