"""`askvault config-example [--write FILE]`: every configuration key, its default and meaning."""

from __future__ import annotations

from pathlib import Path

import click

from askvault.cli.main import cli, handle_errors
from askvault.settings import render_example_toml


@cli.command("config-example")
@click.option(
    "--write",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to this file instead of stdout (never over an existing file).",
)
@click.option("--force", is_flag=True, help="With --write: replace an existing file.")
@handle_errors
def config_example(write: Path | None, force: bool) -> None:
    """Print the example configuration (every key, its default and meaning)."""
    text = render_example_toml()
    if write:
        from askvault.services.config_file import write_config_example

        write_config_example(write, text, force=force)
        click.echo(f"wrote {write}", err=True)
    else:
        click.echo(text, nl=False)
