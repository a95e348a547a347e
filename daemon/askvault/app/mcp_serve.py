"""`askvault mcp`: the vault's tools for agents, served over stdio or loopback HTTP.

The index and the Ollama clients are opened once, before the first request, and stay
open: a warm call costs the search itself, not Python's start-up. The server runs beside
`askvault run` on the same vault (WAL readers; it writes the index only to record an
answer note that `ask` saved, in the inbox's short transactions).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio

from askvault import __version__
from askvault.adapters import mcp_server
from askvault.adapters.db import is_disk_full
from askvault.app.clients import OllamaClients
from askvault.app.mcp_tools import INSTRUCTIONS, tool_specs
from askvault.errors import AskvaultError, DiskFull
from askvault.services.agent.warm_session import WarmSession
from askvault.settings import Settings, SettingsTrace

log = logging.getLogger(__name__)


def make_server(session: WarmSession) -> Any:
    """The MCP server of `session`'s vault (the SDK's Server)."""
    return mcp_server.build_server(
        "askvault", __version__, INSTRUCTIONS, tool_specs(session), format_unexpected=_known_error
    )


def _known_error(exc: BaseException) -> AskvaultError | None:
    if is_disk_full(exc):
        return DiskFull(f"the disk is full: {exc}", "free some disk space and try again")
    return None


def serve_mcp(
    settings: Settings,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    on_ready: Callable[[str], None] = lambda where: None,
    config: SettingsTrace | None = None,
) -> None:
    """Serve until the client goes away (stdio) or until interrupted (HTTP); `config`
    (where the settings came from) is part of the `status` tool's result."""
    sock = mcp_server.bind_loopback(host, port) if http else None  # refused before opening
    session = WarmSession(settings, OllamaClients(settings), config=config)
    try:
        try:
            session.open()
        except AskvaultError as exc:
            # Tools answer with this error until the index exists; the server stays up.
            log.warning("%s (%s)", exc.message, exc.hint)
        server = make_server(session)
        if sock is not None:
            mcp_server.serve_http(server, sock, on_ready=on_ready)
        else:
            on_ready("stdio")
            anyio.run(mcp_server.serve_stdio, server)
    finally:
        session.close()
