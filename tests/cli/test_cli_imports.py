"""The CLI's import-time budget: only `askvault mcp` loads the MCP SDK (and its web stack)."""

from __future__ import annotations

import subprocess
import sys

# pydantic is not listed: the ollama client already needs it.
HEAVY = ("mcp", "starlette", "uvicorn", "sse_starlette", "jsonschema")


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return set(out.stdout.split())


def test_loading_the_cli_and_every_command_does_not_import_the_mcp_sdk() -> None:
    loaded = _loaded_after(
        "from askvault.cli.main import cli\n"
        "import click\n"
        "ctx = click.Context(cli)\n"
        "for name in cli.commands: cli.commands[name].get_help(ctx)"
    )
    assert "askvault" in loaded
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_the_mcp_adapter_is_the_one_module_that_imports_mcp() -> None:
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "daemon" / "askvault"
    importers = sorted(
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if any(
            line.strip().startswith(("import mcp", "from mcp"))
            for line in p.read_text(encoding="utf-8").splitlines()
        )
    )
    assert importers == ["adapters/mcp_server.py"]
