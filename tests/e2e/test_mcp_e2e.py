"""A real `askvault mcp` subprocess: the SDK's stdio client, and its streamable HTTP client
on 127.0.0.1. A non-loopback bind is refused before any socket exists."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import jsonschema
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from askvault.cli.main import cli
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env
from support.vault_factory import make_fixture_vault

pytestmark = pytest.mark.e2e

T = TypeVar("T")
REPLY = "An embed shows another note inline [[Embeds]]."


@pytest.fixture
def env(vault: Path, state_dir: Path, fake_ollama: FakeOllama) -> dict[str, str]:
    make_fixture_vault(vault)
    env = cli_env(vault, state_dir, fake_ollama.url)
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    return env


def over_stdio(
    env: dict[str, str], body: Callable[[ClientSession], Awaitable[T]], errlog: Path
) -> T:
    params = StdioServerParameters(command=sys.executable, args=["-m", "askvault", "mcp"], env=env)

    async def main() -> T:
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    return await body(client)

    return anyio.run(main)


def test_stdio_server_lists_and_calls_every_tool_with_valid_structured_output(
    env: dict[str, str], tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    vault = Path(env["ASKVAULT_VAULT"])
    fake_ollama.chat_script = [REPLY]
    calls = [
        ("search", {"query": "embed another note"}),
        ("get_context_pack", {"prompt": "fermentation of rye", "budget": 300}),
        ("read_note", {"path": "[[Deep Note#Section two]]"}),
        ("ask", {"question": "What does an embed show?", "save": True}),
        ("status", {}),
    ]

    async def body(client: ClientSession) -> tuple[Any, list[Any], list[Any]]:
        tools = (await client.list_tools()).tools
        results = [await client.call_tool(name, args) for name, args in calls]
        hostile = [
            await client.call_tool("read_note", {"path": "../../etc/passwd"}),
            await client.call_tool("read_note", {"path": "/etc/passwd"}),
            await client.call_tool("search", {"query": ""}),
            await client.call_tool("no_such_tool", {}),
        ]
        return tools, results, hostile

    tools, results, hostile = over_stdio(env, body, tmp_path / "mcp.log")
    schemas = {t.name: t.outputSchema for t in tools}
    assert set(schemas) == {name for name, _ in calls}
    for (name, _), result in zip(calls, results):
        assert not result.isError, (name, result.content[0].text)
        jsonschema.validate(result.structuredContent, schemas[name])
    search, context, read, ask, status = (r.structuredContent for r in results)
    assert search["hits"][0]["file"] == "Embeds.md" and search["degraded"] is None
    assert context["version"] == 1 and context["pages"]
    assert read["file"] == "folder/Deep Note.md" and read["heading"] == "Section two"
    assert ask["status"] == "answered"
    assert (vault / ask["saved"]).is_file() and ask["saved"].startswith("queries/answers/")
    assert status["notes"] > 0 and status["ollama"]["reachable"] is True
    assert all(r.isError for r in hostile)
    assert "`..` is not allowed" in hostile[0].content[0].text
    assert "absolute paths are not allowed" in hostile[1].content[0].text


def test_stdio_server_with_ollama_down_degrades_and_stays_up(
    env: dict[str, str], tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")

    async def body(client: ClientSession) -> list[Any]:
        return [
            await client.call_tool("search", {"query": "embed"}),
            await client.call_tool("ask", {"question": "What does an embed show?"}),
            await client.call_tool("search", {"query": "links"}),
        ]

    search, ask, again = over_stdio(env, body, tmp_path / "mcp.log")
    assert search.structuredContent["degraded"].startswith("semantic search unavailable")
    assert ask.structuredContent["status"] == "waiting"
    assert not again.isError and again.structuredContent["hits"]


def _start_http(env: dict[str, str], tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    errlog = (tmp_path / "http.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "askvault", "mcp", "--http", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=errlog,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(
            r"listening on (http://127\.0\.0\.1:\d+/mcp)", (tmp_path / "http.log").read_text()
        )
        if found:
            return proc, found.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise AssertionError((tmp_path / "http.log").read_text())


def test_http_server_on_loopback_answers_the_sdk_client_and_refuses_a_foreign_host(
    env: dict[str, str], tmp_path: Path
) -> None:
    proc, url = _start_http(env, tmp_path)
    try:

        async def main() -> tuple[Any, Any, int]:
            async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
                async with streamable_http_client(url, http_client=http) as (read, write, _):
                    async with ClientSession(read, write) as client:
                        await client.initialize()
                        tools = await client.list_tools()
                        hits = await client.call_tool("search", {"query": "embed"})
                # A page of another site reaching the server by DNS rebinding names itself.
                rebound = await http.post(url, headers={"Host": "evil.example"}, json={})
                return tools, hits, rebound.status_code

        tools, hits, rebound = anyio.run(main)
        assert len(tools.tools) == 5
        assert hits.structuredContent["hits"][0]["file"] == "Embeds.md"
        assert rebound in (400, 403, 421)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert code == 0, (tmp_path / "http.log").read_text()
    # The client closed its session normally: no error and no traceback in the log (the
    # SDK logged "Error in standalone SSE writer" with a ClosedResourceError before).
    log_text = (tmp_path / "http.log").read_text()
    assert "Traceback" not in log_text and "ERROR" not in log_text, log_text


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.org"])
def test_http_bind_outside_loopback_is_refused_before_any_socket(
    env: dict[str, str], host: str, socket_guard: Any
) -> None:
    result = CliRunner().invoke(cli, ["mcp", "--http", "--host", host], env=env)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"askvault: refusing to serve MCP on {host}: not a loopback address"
    )
    assert result.stderr.splitlines()[1].startswith("hint: `askvault mcp --http` serves this")
    assert socket_guard.violations == []


def test_mcp_beside_the_daemon_sees_its_edits_and_saves_an_answer_while_it_runs(
    env: dict[str, str],
    tmp_path: Path,
    fake_ollama: FakeOllama,
    daemon_factory: Callable[..., Any],
) -> None:
    vault = Path(env["ASKVAULT_VAULT"])
    daemon = daemon_factory()
    daemon.wait_ready()
    fake_ollama.chat_script = [REPLY]

    async def body(client: ClientSession) -> tuple[list[str], Any, Any]:
        before = await client.call_tool("search", {"query": "zanzibarite"})
        (vault / "Ideas.md").write_text("# Ideas\n\nA zanzibarite is a made-up mineral.\n")
        files: list[str] = []
        with anyio.fail_after(20):
            while "Ideas.md" not in files:
                await anyio.sleep(0.1)
                found = await client.call_tool("search", {"query": "zanzibarite"})
                files = [h["file"] for h in found.structuredContent["hits"]]
        asked = await client.call_tool(
            "ask", {"question": "What does an embed show?", "save": True}
        )
        status = await client.call_tool("status", {})
        return [h["file"] for h in before.structuredContent["hits"]], asked, status

    before, asked, status = over_stdio(env, body, tmp_path / "mcp.log")
    assert "Ideas.md" not in before
    assert not asked.isError and (vault / asked.structuredContent["saved"]).is_file()
    assert status.structuredContent["daemon"] == daemon.pid
    assert daemon.proc.poll() is None
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(10) == 0
    assert "Traceback" not in daemon.log()
