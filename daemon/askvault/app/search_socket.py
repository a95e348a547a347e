"""The running daemon answers `askvault search` (issue 22 item 6).

A whole `askvault search` process spends most of its time starting: Python, click, and for a
hybrid search numpy (~0.1 s on the bench machine) before a search of ~15 ms. The daemon has
all of that loaded, so it listens on a Unix socket beside the index, and the command asks it
first: one JSON line there (the query, the options, a key of the settings that decide the
result), one back (the search's JSON document, exactly what the command would have built).
Whenever the daemon cannot answer for exactly this search (not running, another
configuration, a socket path too long, an error, no answer within the wait) the command
searches by itself, as before: the daemon is a shortcut, never a dependency.

The socket lives in `<index folder>/sockets/` (0700, this user's): only this user can
connect; the file is removed when the daemon stops, and a stale one from a killed daemon is
replaced by the next (which holds the vault's lock) and refused by connect meanwhile.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from askvault.settings import Settings

if TYPE_CHECKING:
    import logging

    from askvault.records import ModelClients

# sockaddr_un holds 108 bytes on Linux, 104 on macOS, the terminating NUL included.
MAX_SOCKET_PATH = 100
MAX_REQUEST_BYTES = 64 * 1024
REQUEST_WAIT_S = 2.0  # a client that connects and says nothing is dropped after this
ACCEPT_POLL_S = 0.5  # how often the loop looks at the stop event
# The command waits this long beyond the query's embedding wait for the daemon's answer.
ANSWER_MARGIN_S = 3.0
PROTOCOL = 1


def socket_path(settings: Settings) -> Path:
    """`<index folder>/sockets/search.sock`."""
    return settings.state_path / "sockets" / "search.sock"


def settings_key(settings: Settings) -> str:
    """A digest of everything a search's result depends on: the vault, its index, the search
    and Ollama settings, and askvault's own code (a daemon left running across an upgrade
    would answer with the old code's document). A command whose key differs searches by
    itself."""
    decisive = (
        str(settings.vault_path),
        str(settings.db_path),
        settings.search,
        settings.ollama,
        code_stamp(),
    )
    return hashlib.sha256(repr(decisive).encode("utf-8")).hexdigest()


def code_stamp(package: str | None = None) -> str:
    """The package's version and the size and mtime of each of its modules (~1 ms);
    `package`: another folder than askvault's own."""
    import askvault

    package = package or os.path.dirname(os.path.abspath(askvault.__file__))
    entries = []
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                where = os.path.relpath(folder, package)
                entries.append(f"{where}/{name}:{st.st_size}:{st.st_mtime_ns}")
    digest = hashlib.sha256("\n".join(entries).encode("utf-8")).hexdigest()
    return f"{askvault.__version__}:{digest}"


def ask_daemon(
    settings: Settings,
    query: str,
    *,
    limit: int | None,
    explain: bool,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any] | None:
    """The search document from the running daemon, or None when it cannot give exactly
    this search's (the caller then searches by itself)."""
    path = socket_path(settings)
    if len(os.fsencode(path)) > MAX_SOCKET_PATH or not path.exists():
        return None
    request = {
        "protocol": PROTOCOL,
        "key": settings_key(settings),
        "query": query,
        "limit": limit,
        "explain": explain,
        "since": since,
        "until": until,
    }
    wait_s = settings.search.embed_timeout_s + ANSWER_MARGIN_S
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(wait_s)
            sock.connect(os.fspath(path))
            sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
            answer = _read_line(sock, limit=None)
    except OSError:
        return None  # not running (refused), gone, or too slow: search here
    try:
        reply = json.loads(answer)
    except ValueError:
        return None
    doc = reply.get("document") if isinstance(reply, dict) else None
    return doc if isinstance(doc, dict) else None


def _log() -> logging.Logger:
    import logging  # ~5 ms the command's side never pays

    return logging.getLogger(__name__)


def _read_line(sock: socket.socket, *, limit: int | None) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
        if limit is not None and size > limit:
            raise ValueError("request too long")
    return b"".join(chunks)


class SearchSocketWorker:
    """The daemon's search socket (a `daemon.Worker`): answers one search per connection,
    one at a time, from a warm session (the index open, numpy loaded after the first)."""

    def __init__(self, settings: Settings, clients: ModelClients) -> None:
        from askvault.services.agent.warm_session import WarmSession

        self.settings = settings
        self.key = settings_key(settings)
        self.session = WarmSession(settings, clients)
        self.path = socket_path(settings)
        self.served = 0  # searches answered (for tests and the log)
        self.listening = threading.Event()

    def notice(self, paths: list[str]) -> None:
        """Nothing to do: the socket reads the index as it is."""

    def on_notes_changed(self, changed: list[str], deleted: list[str]) -> None:
        """Nothing to do: each search reads the index as committed."""

    def run(self, stop_event: threading.Event) -> None:
        server = self._listen()
        if server is None:
            return
        self.listening.set()
        try:
            with server:
                while not stop_event.is_set():
                    try:
                        conn, _ = server.accept()
                    except TimeoutError:
                        continue
                    with conn:
                        self._serve(conn)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            self.session.close()

    def _listen(self) -> socket.socket | None:
        if len(os.fsencode(self.path)) > MAX_SOCKET_PATH:
            _log().info("no search socket: its path is too long for a socket (%s)", self.path)
            return None
        folder = self.path.parent
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(folder)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                _log().warning("no search socket: %s is not a folder of this user", folder)
                return None
            os.chmod(folder, 0o700)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # a killed daemon's: this one holds the vault's lock
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(os.fspath(self.path))
            server.listen(8)
            server.settimeout(ACCEPT_POLL_S)
        except OSError as exc:
            _log().warning("no search socket at %s: %s", self.path, exc)
            return None
        return server

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(REQUEST_WAIT_S)
        try:
            request = json.loads(_read_line(conn, limit=MAX_REQUEST_BYTES))
            reply = self._answer(request)
        except (OSError, ValueError) as exc:
            _log().debug("search socket: a request dropped (%s)", exc)
            return
        with contextlib.suppress(OSError):
            conn.settimeout(None)
            conn.sendall(json.dumps(reply).encode("utf-8") + b"\n")

    def _answer(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
            return {"error": "unknown protocol"}
        if request.get("key") != self.key:
            return {"error": "another configuration"}  # the command searches by itself
        query, limit = request.get("query"), request.get("limit")
        since, until = request.get("since"), request.get("until")
        if (
            not isinstance(query, str)
            or not (limit is None or (isinstance(limit, int) and limit >= 1))
            or not all(bound is None or isinstance(bound, str) for bound in (since, until))
        ):
            return {"error": "a malformed request"}
        from askvault.core.schema import to_json
        from askvault.errors import AskvaultError

        try:
            doc = self.session.search(
                query,
                limit=limit,
                since=since,
                until=until,
                explain=bool(request.get("explain")),
            )
        except AskvaultError as exc:  # no index yet, the index busy: the command says it
            return {"error": exc.message}
        except Exception:  # a bug must not end the socket: the command searches by itself
            _log().exception("search socket: the search failed")
            return {"error": "the search failed in the daemon"}
        self.served += 1
        return {"document": to_json(doc)}
