"""Issue 25 item 5: a cancelled MCP `ask` stops the model, not only askvault's thread.

A real `askvault mcp` subprocess, the SDK's stdio client, and the fake Ollama in the role
of a CPU still reading a long prompt (no byte of the reply for a minute). The client
cancels the call (`notifications/cancelled`); the fake watches its connection as Ollama
does, and must see its client go away at once: before the fix the server's thread waited
for a first piece that a check between pieces needed, and the model computed on.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from askvault.cli.main import cli
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env
from support.vault_factory import make_fixture_vault

pytestmark = pytest.mark.faults

PROMPT_EVALUATION_S = 60.0  # longer than the drill waits: only a closed stream ends it


def test_a_cancelled_ask_closes_the_reply_ollama_has_not_started_and_the_server_serves_on(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    vault = make_fixture_vault(tmp_path / "vault")
    env = cli_env(
        vault,
        tmp_path / "state",
        fake_ollama.url,
        ASKVAULT_OLLAMA__REPLY_SILENCE_S=str(PROMPT_EVALUATION_S * 2),
    )
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    fake_ollama.set_fault("slow", delay_s=PROMPT_EVALUATION_S, paths=("/api/chat",), count=1)
    params = StdioServerParameters(command=sys.executable, args=["-m", "askvault", "mcp"], env=env)

    async def body(client: ClientSession) -> tuple[Any, bool, Any]:
        async def ask() -> None:
            try:
                await client.call_tool("ask", {"question": "What does an embed show?"})
            except Exception:  # noqa: BLE001 - the cancelled call's error reply
                pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            with anyio.fail_after(30):
                while not fake_ollama.requests_to("/api/chat"):
                    await anyio.sleep(0.02)
            request_id = client._request_id - 1  # the ask call: the last request sent
            await client.send_notification(
                types.ClientNotification(
                    types.CancelledNotification(
                        params=types.CancelledNotificationParams(requestId=request_id)
                    )
                )
            )
            hung_up = await anyio.to_thread.run_sync(fake_ollama.hung_up.wait, 10.0)
            tg.cancel_scope.cancel()
        # The server is still up and asks the model again (the fault was for one request).
        fake_ollama.chat_script = ["An embed shows another note inline [[Embeds]]."]
        after = await client.call_tool("ask", {"question": "What does an embed show?"})
        return fake_ollama.abandoned, hung_up, after

    async def main() -> tuple[Any, bool, Any]:
        with (tmp_path / "mcp.log").open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    return await body(client)

    abandoned, hung_up, after = anyio.run(main)
    assert hung_up, "the model kept computing: the cancelled call left its reply open"
    assert abandoned == ["/api/chat"]
    assert not after.isError and after.structuredContent["status"] == "answered"
