"""`askvault mcp [--http [--host H] [--port N]]`: the vault's tools for agents (MCP)."""

from __future__ import annotations

from typing import Any

import click

from askvault.cli.common import build_traced_settings, common_options, handle_errors


@click.command()
@common_options
@click.option(
    "--http",
    "use_http",
    is_flag=True,
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Loopback address to listen on with --http (anything else is refused).",
)
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=8765,
    show_default=True,
    help="Port to listen on with --http (0: a free one, printed on stderr).",
)
@handle_errors
def mcp(use_http: bool, host: str, port: int, **opts: Any) -> None:
    """Serve the vault to agents over MCP: search, get_context_pack, read_note, ask, status."""
    settings, trace = build_traced_settings(**opts)
    # Imported here: the MCP SDK costs the other commands nothing.
    from askvault.app.logging_setup import configure_logging
    from askvault.app.mcp_serve import serve_mcp

    configure_logging(settings.daemon.log_format, "warning")  # stderr: stdout is the protocol

    def ready(where: str) -> None:
        if where != "stdio":
            click.echo(f"askvault: MCP server listening on {where}", err=True)

    serve_mcp(settings, http=use_http, host=host, port=port, on_ready=ready, config=trace)
