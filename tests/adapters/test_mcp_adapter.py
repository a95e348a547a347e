"""adapters/mcp_server.py with small tools: errors, schemas, cancellation, loopback rules."""

from __future__ import annotations

import logging
import threading
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.shared.memory import (
    create_client_server_memory_streams,
    create_connected_server_and_client_session,
)
from mcp.shared.message import SessionMessage

from askvault.adapters.mcp_server import (
    MAX_RESULT_BYTES,
    SDK_HTTP_LOGGER,
    ClientGoneFilter,
    ToolSpec,
    build_server,
    check_loopback,
    is_loopback,
)
from askvault.errors import AskvaultError, StoreError

OPEN = {"type": "object", "properties": {}}


def spec(name: str, call: Any, output: dict[str, Any] | None = None) -> ToolSpec:
    return ToolSpec(name, name, f"{name} tool", {"type": "object"}, output or OPEN, call)


def run_calls(tools: list[ToolSpec], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    server = build_server("t", "0", "", tools)

    async def main() -> list[Any]:
        async with create_connected_server_and_client_session(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(main)


def test_an_askvault_error_is_a_tool_error_with_message_and_hint_and_the_server_goes_on() -> None:
    def fails(args: dict[str, Any], cancelled: threading.Event) -> dict[str, Any]:
        raise StoreError("no index for /v", "run `askvault index` first")

    failed, fine = run_calls(
        [spec("fails", fails), spec("ok", lambda a, c: {"x": 1})], [("fails", {}), ("ok", {})]
    )
    assert failed.isError
    assert failed.content[0].text == "askvault: no index for /v\nhint: run `askvault index` first"
    assert not fine.isError and fine.structuredContent == {"x": 1}


def test_an_unexpected_exception_is_a_tool_error_not_a_dead_server() -> None:
    def bug(args: dict[str, Any], cancelled: threading.Event) -> dict[str, Any]:
        raise KeyError("oops")

    failed, again = run_calls([spec("bug", bug)], [("bug", {}), ("bug", {})])
    assert failed.isError and again.isError
    assert "bug failed" in failed.content[0].text and "server is still up" in failed.content[0].text


def test_a_result_outside_the_output_schema_is_refused_not_sent() -> None:
    strict = {"type": "object", "required": ["hits"], "properties": {"hits": {"type": "array"}}}
    (result,) = run_calls(
        [spec("wrong", lambda a, c: {"hits": "not a list"}, strict)], [("wrong", {})]
    )
    assert result.isError and result.content[0].text.startswith("Output validation error")
    assert result.structuredContent is None


def test_a_result_over_the_byte_bound_is_an_error_naming_its_size_and_the_server_goes_on() -> None:
    # The bound counts bytes, not lines or characters: two characters of 4 bytes each.
    big = "\U0001f600" * (MAX_RESULT_BYTES // 8 + 1)
    small, large = run_calls(
        [spec("echo", lambda a, c: {"text": a["text"]})],
        [("echo", {"text": "hello"}), ("echo", {"text": big})],
    )
    assert not small.isError and small.structuredContent == {"text": "hello"}
    assert large.isError and large.structuredContent is None
    first, hint = large.content[0].text.splitlines()
    assert first.startswith("askvault: the result of echo would be ") and "bytes" in first
    assert hint.startswith("hint: ask for less")


def test_an_invalid_schema_is_refused_when_the_server_is_built() -> None:
    bad = ToolSpec(
        "bad", "bad", "bad", {"type": "object"}, {"type": "no-such-type"}, lambda a, c: {}
    )
    with pytest.raises(Exception, match="no-such-type"):
        build_server("t", "0", "", [bad])


def test_a_cancelled_request_sets_the_tools_cancelled_event() -> None:
    started, seen = threading.Event(), threading.Event()

    def slow(args: dict[str, Any], cancelled: threading.Event) -> dict[str, Any]:
        started.set()
        if cancelled.wait(10):
            seen.set()
        return {}

    server = build_server("t", "0", "", [spec("slow", slow)])

    def message(payload: dict[str, Any]) -> SessionMessage:
        return SessionMessage(types.JSONRPCMessage.model_validate({"jsonrpc": "2.0", **payload}))

    async def main() -> None:
        async with create_client_server_memory_streams() as (client, server_streams):
            (read, write), (s_read, s_write) = client, server_streams
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    lambda: server.run(s_read, s_write, server.create_initialization_options())
                )
                await write.send(
                    message(
                        {
                            "id": 1,
                            "method": "initialize",
                            "params": {
                                "protocolVersion": types.LATEST_PROTOCOL_VERSION,
                                "capabilities": {},
                                "clientInfo": {"name": "t", "version": "0"},
                            },
                        }
                    )
                )
                await read.receive()
                await write.send(message({"method": "notifications/initialized"}))
                await write.send(
                    message(
                        {
                            "id": 2,
                            "method": "tools/call",
                            "params": {"name": "slow", "arguments": {}},
                        }
                    )
                )
                await anyio.to_thread.run_sync(started.wait, 10)
                await write.send(
                    message({"method": "notifications/cancelled", "params": {"requestId": 2}})
                )
                await anyio.to_thread.run_sync(seen.wait, 10)
                tg.cancel_scope.cancel()

    anyio.run(main)
    assert seen.is_set()


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"]
)
def test_loopback_hosts_are_accepted(host: str) -> None:
    assert is_loopback(host)
    check_loopback(host)


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "::", "10.0.0.2", "192.168.1.20", "example.org", "localhost.example.org", ""],
)
def test_other_hosts_are_refused_naming_the_host(host: str) -> None:
    with pytest.raises(AskvaultError, match="not a loopback address"):
        check_loopback(host)


def _record(exc: BaseException | None) -> logging.LogRecord:
    info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord(
        SDK_HTTP_LOGGER, logging.ERROR, __file__, 1, "Error in standalone SSE writer", (), info
    )


@pytest.mark.parametrize(
    ("exc", "kept"),
    [
        (anyio.ClosedResourceError(), False),  # the client closed its session
        (anyio.BrokenResourceError(), False),  # its connection dropped
        (RuntimeError("a real failure"), True),
        (None, True),  # an error without a traceback
    ],
)
def test_a_client_that_goes_away_logs_no_traceback_but_real_errors_stay(
    exc: BaseException | None, kept: bool
) -> None:
    assert ClientGoneFilter().filter(_record(exc)) is kept
