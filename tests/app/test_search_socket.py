"""The daemon's search socket (issue 22 item 6): `askvault search` asks the running daemon
and prints exactly the document it would have built itself; whenever the daemon cannot
answer for exactly this search, the command searches by itself."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from askvault.app import search_socket
from askvault.app.clients import OllamaClients
from askvault.app.search_socket import SearchSocketWorker, ask_daemon, socket_path
from askvault.core.schema import to_json
from askvault.services.documents.search import search_document
from askvault.services.index.index_pass import index_vault
from askvault.services.retrieval.search import open_search, search
from askvault.settings import Settings
from support.fake_ollama import FakeOllama
from support.index_templates import index_copy
from support.settings_factory import cli_env, settings_for
from support.vault_factory import make_fixture_vault


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short folder: a socket's path must fit in 100 bytes, pytest's tmp_path may not."""
    folder = Path(tempfile.mkdtemp(prefix="av-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def indexed(short_dir: Path, fake_ollama: FakeOllama) -> Settings:
    vault = make_fixture_vault(short_dir / "vault")
    settings = settings_for(vault, short_dir / "state", fake_ollama.url)
    index_copy(settings)
    return settings


class Running:
    """A SearchSocketWorker on its own thread, as the daemon runs it."""

    def __init__(self, settings: Settings) -> None:
        self.worker = SearchSocketWorker(settings, OllamaClients(settings))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.worker.run, args=(self.stop,))

    def __enter__(self) -> SearchSocketWorker:
        self.thread.start()
        assert self.worker.listening.wait(10)
        return self.worker

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


def _local(settings: Settings, query: str, *, limit: int | None, explain: bool) -> Any:
    with open_search(settings, OllamaClients(settings)) as (conn, embedder):
        result = search(conn, settings, query, limit=limit, embedder=embedder)
    return to_json(search_document(result, explain=explain))


@pytest.mark.parametrize(
    ("query", "limit", "explain", "ollama"),
    [
        ("embeds", None, False, "up"),
        ("how are links shown", 3, True, "up"),
        ("embeds", None, False, "down"),
        ("ünïcode 漢字", 2, False, "up"),
        ("", None, False, "up"),
    ],
)
def test_the_daemon_answers_exactly_the_document_the_command_would_build(
    indexed: Settings,
    fake_ollama: FakeOllama,
    query: str,
    limit: int | None,
    explain: bool,
    ollama: str,
) -> None:
    if ollama == "down":
        fake_ollama.set_fault("down")
    expected = _local(indexed, query, limit=limit, explain=explain)
    with Running(indexed) as worker:
        got = ask_daemon(indexed, query, limit=limit, explain=explain)
        again = ask_daemon(indexed, query, limit=limit, explain=explain)  # the warm session
    assert got == expected == again
    assert worker.served == 2
    if ollama == "down":
        assert "connection refused" in got["degraded"]


def test_another_configuration_is_searched_by_the_command_itself(indexed: Settings) -> None:
    other = settings_for(
        indexed.vault_path, Path(indexed.state_dir), indexed.ollama.host, **{"search.limit": 3}
    )
    assert socket_path(other) == socket_path(indexed)  # the same index, other settings
    with Running(indexed) as worker:
        assert ask_daemon(other, "embeds", limit=None, explain=False) is None
        assert ask_daemon(indexed, "embeds", limit=None, explain=False) is not None
    assert worker.served == 1


def test_a_daemon_running_older_code_is_not_asked(
    indexed: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Running(indexed) as worker:  # its key made with the code as it was at its start
        monkeypatch.setattr(search_socket, "code_stamp", lambda: "0.1.0:an upgrade")
        assert ask_daemon(indexed, "embeds", limit=None, explain=False) is None
        monkeypatch.undo()
        assert ask_daemon(indexed, "embeds", limit=None, explain=False) is not None
    assert worker.served == 1


def test_the_code_stamp_changes_when_a_module_changes_and_not_with_bytecode(
    tmp_path: Path,
) -> None:
    import askvault

    package = tmp_path / "pkg"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    before = search_socket.code_stamp(str(package))
    assert before.startswith(askvault.__version__ + ":")
    assert search_socket.code_stamp() != before  # askvault's own modules
    (package / "sub" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"compiled")
    (package / "notes.txt").write_text("not a module")
    assert search_socket.code_stamp(str(package)) == before
    st = (package / "sub" / "b.py").stat()
    os.utime(package / "sub" / "b.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert search_socket.code_stamp(str(package)) != before  # a reinstalled module
    (package / "sub" / "b.py").write_text("y = 3\n")
    os.utime(package / "sub" / "b.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert search_socket.code_stamp(str(package)) == before  # same size and mtime: as is
    (package / "c.py").write_text("")
    assert search_socket.code_stamp(str(package)) != before  # a new module


def test_no_daemon_or_a_dead_ones_socket_is_no_answer(indexed: Settings) -> None:
    assert ask_daemon(indexed, "embeds", limit=None, explain=False) is None  # never ran
    path = socket_path(indexed)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(os.fspath(path))  # a socket file nobody listens on: a killed daemon's
    dead.close()
    assert path.exists()
    assert ask_daemon(indexed, "embeds", limit=None, explain=False) is None
    with Running(indexed) as worker:  # the next daemon replaces it
        assert ask_daemon(indexed, "embeds", limit=None, explain=False) is not None
    assert worker.served == 1
    assert not path.exists()  # removed when the daemon stops


def test_the_socket_is_private_to_this_user(indexed: Settings) -> None:
    with Running(indexed):
        folder = socket_path(indexed).parent
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
        assert stat.S_ISSOCK(os.lstat(socket_path(indexed)).st_mode)


def test_a_socket_path_too_long_means_no_socket_and_the_command_searches_itself(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    deep = tmp_path / ("d" * 80)
    vault = make_fixture_vault(tmp_path / "vault")
    settings = settings_for(vault, deep, fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    assert len(os.fsencode(socket_path(settings))) > search_socket.MAX_SOCKET_PATH
    worker = SearchSocketWorker(settings, OllamaClients(settings))
    worker.run(threading.Event())  # returns at once: nothing to listen on
    assert not worker.listening.is_set() and not socket_path(settings).exists()
    assert ask_daemon(settings, "embeds", limit=None, explain=False) is None


def test_no_index_yet_is_left_to_the_command_which_says_so(
    short_dir: Path, fake_ollama: FakeOllama
) -> None:
    vault = make_fixture_vault(short_dir / "vault")
    settings = settings_for(vault, short_dir / "state", fake_ollama.url)
    settings.state_path.mkdir(parents=True)
    env = cli_env(vault, short_dir / "state", fake_ollama.url)
    with Running(settings) as worker:
        assert ask_daemon(settings, "embeds", limit=None, explain=False) is None
        searched = _cli(env, "search", "embeds")
    assert worker.served == 0
    assert searched.returncode == 1
    assert f"no index for {vault.resolve()}" in searched.stderr
    assert "askvault index" in searched.stderr


def _raw(path: Path, payload: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(os.fspath(path))
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        return b"".join(iter(lambda: sock.recv(65536), b""))


@pytest.mark.parametrize(
    ("payload", "said"),
    [
        (b"not json\n", b""),
        (b'{"protocol": 99}\n', b"unknown protocol"),
        (b"[1, 2]\n", b"unknown protocol"),
        (b"x" * (search_socket.MAX_REQUEST_BYTES + 10), b""),
    ],
)
def test_a_malformed_request_gets_no_document_and_the_socket_serves_on(
    indexed: Settings, payload: bytes, said: bytes
) -> None:
    with Running(indexed) as worker:
        answer = _raw(socket_path(indexed), payload)
        assert said in answer and b"document" not in answer
        assert ask_daemon(indexed, "embeds", limit=None, explain=False) is not None
    assert worker.served == 1


@pytest.mark.parametrize("limit", [0, -1, "3", 2.5])
def test_a_request_with_a_bad_limit_gets_no_document(indexed: Settings, limit: object) -> None:
    key = search_socket.settings_key(indexed)
    request = {"protocol": 1, "key": key, "query": "embeds", "limit": limit, "explain": False}
    with Running(indexed) as worker:
        answer = _raw(socket_path(indexed), json.dumps(request).encode() + b"\n")
    assert json.loads(answer) == {"error": "a malformed request"}
    assert worker.served == 0


def test_a_client_that_says_nothing_is_dropped_and_the_next_is_served(
    indexed: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_socket, "REQUEST_WAIT_S", 0.2)
    with Running(indexed) as worker:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
            silent.connect(os.fspath(socket_path(indexed)))
            assert ask_daemon(indexed, "embeds", limit=None, explain=False) is not None
    assert worker.served == 1


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    script = (
        "import json, sys\nfrom askvault.cli.main import cli\n"
        "try:\n    cli(sys.argv[1:], prog_name='askvault')\nexcept SystemExit as e:\n"
        "    code = e.code\nelse:\n    code = 0\n"
        "print(json.dumps(sorted(m for m in ('numpy', 'ollama', 'httpx') if m in sys.modules)),"
        " file=sys.stderr)\nsys.exit(code)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("as_json", [True, False])
def test_askvault_search_prints_the_same_with_and_without_the_daemon(
    indexed: Settings, fake_ollama: FakeOllama, as_json: bool
) -> None:
    env = cli_env(indexed.vault_path, Path(indexed.state_dir), fake_ollama.url)
    args = ["search", "embeds", "--explain", *(["--json"] if as_json else [])]
    alone = _cli(env, *args)
    with Running(indexed) as worker:
        asked = _cli(env, *args)
    assert alone.returncode == asked.returncode == 0
    assert asked.stdout == alone.stdout and asked.stdout
    assert worker.served == 1
    # Alone it embedded the query and scanned vectors (numpy); asking the daemon, nothing.
    assert json.loads(alone.stderr.splitlines()[-1]) == ["numpy"]
    assert json.loads(asked.stderr.splitlines()[-1]) == []


def test_with_ollama_down_the_daemons_answer_warns_as_the_command_does(
    indexed: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    env = cli_env(indexed.vault_path, Path(indexed.state_dir), fake_ollama.url)
    alone = _cli(env, "search", "embeds")
    with Running(indexed) as worker:
        asked = _cli(env, "search", "embeds")
    assert worker.served == 1
    assert (asked.stdout, asked.stderr.splitlines()[:-1]) == (
        alone.stdout,
        alone.stderr.splitlines()[:-1],
    )
    assert "words only, semantic search unavailable: Ollama is not reachable" in asked.stderr


def _local_period(settings: Settings, query: str, since: str | None, until: str | None) -> Any:
    from askvault.records import PeriodRequest

    with open_search(settings, OllamaClients(settings)) as (conn, embedder):
        result = search(
            conn, settings, query, embedder=embedder, period=PeriodRequest(since, until)
        )
    return to_json(search_document(result))


@pytest.mark.parametrize(
    ("query", "since", "until"),
    [
        ("embeds", "2000-01-01", None),  # every note (their days are today's file times)
        ("embeds", None, "2000-01-01"),  # none: the period is empty
        ("embeds since 2000", None, None),  # the period's words in the query
    ],
)
def test_the_daemon_answers_a_period_as_the_command_would(
    indexed: Settings, query: str, since: str | None, until: str | None
) -> None:
    expected = _local_period(indexed, query, since, until)
    with Running(indexed) as worker:
        got = ask_daemon(indexed, query, limit=None, explain=False, since=since, until=until)
    assert got == expected and worker.served == 1
    assert got["period"] is not None
    if until == "2000-01-01":
        assert got["hits"] == []
    else:
        assert got["hits"]


@pytest.mark.parametrize("bound", [5, ["2023"], {"y": 1}])
def test_a_request_with_a_bound_that_is_no_text_gets_no_document(
    indexed: Settings, bound: object
) -> None:
    key = search_socket.settings_key(indexed)
    request = {"protocol": 1, "key": key, "query": "embeds", "limit": None, "since": bound}
    with Running(indexed) as worker:
        answer = _raw(socket_path(indexed), json.dumps(request).encode() + b"\n")
    assert json.loads(answer) == {"error": "a malformed request"}
    assert worker.served == 0
