"""The Model Context Protocol, through the official `mcp` SDK (its low-level `Server`).

Owns: turning a table of `ToolSpec`s into an MCP server (tool listing with input and
output JSON schemas, calls run in a worker thread, structured output validated by the SDK
against the tool's schema), askvault's errors as MCP tool errors, cancellation, and the
two transports: stdio, and streamable HTTP bound to a loopback address only (a
non-loopback bind is refused before any socket exists; Host and Origin headers are
checked, so a web page cannot reach the server by DNS rebinding).

This is the only module that imports `mcp`; only `askvault mcp` imports it, so the other
commands never pay for the SDK's imports.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import jsonschema
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from askvault.errors import AskvaultError
from askvault.records import Cancellation

log = logging.getLogger(__name__)

HTTP_PATH = "/mcp"
# The most a tool result may hold (its text and its structured content, as JSON): an
# agent's context window is a few hundred kilobytes, and a result of tens of megabytes
# (a huge query echoed back) would stall the client; a tool asked for less answers.
MAX_RESULT_BYTES = 1 << 20


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what an agent sees (name, description, schemas) and the blocking function
    that answers it. `call(arguments, cancelled)` returns the structured result; it runs in
    a worker thread and should stop early once `cancelled` is set (its `on_cancel`
    callbacks run on the server's event loop the moment the client cancels). `render` is
    the text shown beside the structured result (default: the JSON itself)."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    call: Callable[[dict[str, Any], Cancellation], dict[str, Any]]
    render: Callable[[dict[str, Any]], str] | None = None
    read_only: bool = True


def error_text(exc: AskvaultError) -> str:
    """The CLI's two lines for an error: `askvault: <message>` and `hint: <what to do>`."""
    return f"askvault: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else "")


def build_server(
    name: str,
    version: str,
    instructions: str,
    tools: Sequence[ToolSpec],
    *,
    format_unexpected: Callable[[BaseException], AskvaultError | None] = lambda _: None,
) -> Server[Any, Any]:
    """An MCP server offering `tools`. An AskvaultError raised by a tool (or an exception
    that `format_unexpected` turns into one) is returned as a tool error with the CLI's
    message and hint; the server stays up either way."""
    server: Server[Any, Any] = Server(name, version=version, instructions=instructions)
    by_name = {t.name: t for t in tools}
    # The SDK's own checks call jsonschema.validate, which re-checks the schema itself on
    # every call (about 5 ms each for these schemas, the bulk of a warm search's round trip):
    # the validators are built once here instead, and the SDK's are skipped.
    inputs = {t.name: _validator(t.input_schema) for t in tools}
    outputs = {t.name: _validator(t.output_schema) for t in tools}
    listed = [
        types.Tool(
            name=t.name,
            title=t.title,
            description=t.description,
            inputSchema=t.input_schema,
            outputSchema=t.output_schema,
            annotations=types.ToolAnnotations(
                title=t.title,
                readOnlyHint=t.read_only,
                destructiveHint=False,
                idempotentHint=t.read_only,
                openWorldHint=False,
            ),
        )
        for t in tools
    ]

    @server.list_tools()  # type: ignore[misc, no-untyped-call]
    async def list_tools() -> list[types.Tool]:
        return listed

    @server.call_tool(validate_input=False)  # type: ignore[misc]
    async def call_tool(tool_name: str, arguments: dict[str, Any]) -> Any:
        spec = by_name.get(tool_name)
        if spec is None:
            return _error_result(f"askvault: no tool {tool_name!r}\nhint: list the tools first")
        invalid = jsonschema.exceptions.best_match(inputs[tool_name].iter_errors(arguments))
        if invalid is not None:
            return _error_result(
                f"Input validation error: {invalid.message}\n"
                f"hint: see the input schema of {tool_name}"
            )
        cancelled = Cancellation()
        try:
            doc = await anyio.to_thread.run_sync(
                functools.partial(spec.call, arguments, cancelled), abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            # The thread stops at its next check, before writing anything; what it waits
            # on (a reply being generated) is closed now by the call's on_cancel callbacks.
            cancelled.set()
            raise
        except AskvaultError as exc:
            return _error_result(error_text(exc))
        except Exception as exc:
            known = format_unexpected(exc)
            if known is None:
                log.exception("tool %s failed", tool_name)
                return _error_result(
                    f"askvault: {tool_name} failed: {exc}\n"
                    "hint: this is a bug; the server is still up"
                )
            return _error_result(error_text(known))
        wrong = jsonschema.exceptions.best_match(outputs[tool_name].iter_errors(doc))
        if wrong is not None:  # a bug of ours: never hand an agent what the schema denies
            log.error("tool %s: output does not match its schema: %s", tool_name, wrong.message)
            return _error_result(f"Output validation error: {wrong.message}")
        text = (
            spec.render(doc)
            if spec.render
            else json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2)
        )
        size = len(text.encode("utf-8")) + len(json.dumps(doc, ensure_ascii=False).encode("utf-8"))
        if size > MAX_RESULT_BYTES:
            return _error_result(
                f"askvault: the result of {tool_name} would be {size:,} bytes, more than the "
                f"{MAX_RESULT_BYTES:,} an MCP result may hold\n"
                "hint: ask for less (a shorter query, a smaller budget, a line range)"
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structuredContent=doc,
            isError=False,
        )

    return server


def _validator(schema: dict[str, Any]) -> Any:
    """A validator of `schema` (its draft as declared, else the latest), checked once."""
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


class _ASGIEndpoint:
    """An ASGI app (a class instance, so Starlette's Route passes scope/receive/send)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.manager.handle_request(scope, receive, send)


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)


async def serve_stdio(server: Server[Any, Any]) -> None:
    """Serve one client over stdin/stdout until it closes them."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1, ::ffff:127.x)."""
    if host in ("localhost", "localhost."):
        return True
    try:
        ip = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def check_loopback(host: str) -> None:
    """Refuse to serve on anything but this machine (before any socket is made)."""
    if not is_loopback(host):
        raise AskvaultError(
            f"refusing to serve MCP on {host}: not a loopback address",
            "`askvault mcp --http` serves this machine only: use 127.0.0.1 or ::1 (reach it "
            "from elsewhere through an SSH tunnel)",
        )


def bind_loopback(host: str, port: int) -> socket.socket:
    """A listening socket on the loopback `host`:`port` (0 picks a free port)."""
    check_loopback(host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise AskvaultError(
            f"cannot listen on {host}:{port}: {exc.strerror}", "pick another port with --port"
        ) from exc
    return sock


def serve_http(
    server: Server[Any, Any],
    sock: socket.socket,
    on_ready: Callable[[str], None] = lambda url: None,
) -> None:
    """Serve streamable HTTP at `http://<host>:<port>/mcp` on the bound socket until
    interrupted; `on_ready(url)` is called once it listens."""
    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    names = [shown, "localhost"] + (["127.0.0.1"] if shown.startswith("127.") else [])
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:{port}" for n in names],
        allowed_origins=[f"http://{n}:{port}" for n in names],
    )
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)

    app = Starlette(
        routes=[Route(HTTP_PATH, endpoint=_ASGIEndpoint(manager))],
        lifespan=lambda _app: manager.run(),
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn_server = uvicorn.Server(config)
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again for the handler
    # it found: this one, so that the process exits 0 through our `finally` blocks (the
    # session closed) instead of being killed by the default action.
    previous = signal.signal(signal.SIGTERM, _exit_on_term)
    quiet = ClientGoneFilter()
    logging.getLogger(SDK_HTTP_LOGGER).addFilter(quiet)
    try:
        on_ready(f"http://{shown}:{port}{HTTP_PATH}")  # the socket already listens
        uvicorn_server.run(sockets=[sock])
    finally:
        logging.getLogger(SDK_HTTP_LOGGER).removeFilter(quiet)
        signal.signal(signal.SIGTERM, previous)
        sock.close()
        sys.stderr.flush()


class ClientGoneFilter(logging.Filter):
    """Drops the SDK's error traceback for a client that went away normally.

    When a streamable-HTTP client closes its session, the SDK's standalone SSE writer
    finds its stream closed and logs "Error in standalone SSE writer" with an
    `anyio.ClosedResourceError` traceback: a normal end, not an error of the server."""

    def filter(self, record: logging.LogRecord) -> bool:
        import anyio

        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError))


SDK_HTTP_LOGGER = "mcp.server.streamable_http"


def _exit_on_term(signum: int, frame: Any) -> None:
    raise SystemExit(0)
