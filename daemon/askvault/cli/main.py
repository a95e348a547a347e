"""The `askvault` command: a thin click layer over the services.

Each command loads settings, calls one service function, formats the result and
translates errors into one line plus a hint (exit 1). Usage errors exit 2. Each command
is defined in its own module (`*_cmd.py`, over `common.py`) and added to the group here.
"""

from __future__ import annotations

import click

from askvault import __version__
from askvault.cli import (
    ask_cmd,
    config_example_cmd,
    context_cmd,
    doctor_cmd,
    index_cmd,
    mcp_cmd,
    run_cmd,
    search_cmd,
    service_cmd,
    status_cmd,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="askvault")
def cli() -> None:
    """askvault: answers from your Obsidian vault, with checked citations, on a local Ollama."""


COMMANDS: tuple[click.Command, ...] = (
    ask_cmd.ask,
    config_example_cmd.config_example,
    context_cmd.context_command,
    doctor_cmd.doctor,
    index_cmd.index,
    mcp_cmd.mcp,
    run_cmd.run,
    search_cmd.search_command,
    service_cmd.service,
    status_cmd.status,
)
for _command in COMMANDS:
    cli.add_command(_command)


def main() -> None:
    """Entry point of the `askvault` script."""
    cli(prog_name="askvault")
