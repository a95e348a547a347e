"""`askvault config-example [--write [FILE]]`: every configuration key, its default and meaning."""

from __future__ import annotations

from pathlib import Path

import click

from askvault.cli.common import handle_errors
from askvault.settings import render_example_toml

# `--write` given without a file: the user's config file, the one askvault reads by default.
USER_FILE = "-"


@click.command("config-example")
@click.option(
    "--write",
    type=click.Path(dir_okay=False, path_type=Path),
    is_flag=False,
    flag_value=USER_FILE,
    help="Write to FILE instead of stdout, never over an existing file. Without FILE: "
    "$XDG_CONFIG_HOME/askvault/config.toml (~/.config/askvault/config.toml), the file "
    "askvault reads by default; its folder is made.",
)
@click.option("--force", is_flag=True, help="With --write: replace an existing file.")
@handle_errors
def config_example(write: Path | None, force: bool) -> None:
    """Print the example configuration (every key, its default and meaning)."""
    text = render_example_toml()
    if write is None:
        click.echo(text, nl=False)
        return
    from askvault.services.admin.config_file import write_config_example, write_user_config

    if str(write) == USER_FILE:
        target = write_user_config(text, force=force)
        click.echo(f"wrote {target}: askvault reads it by default", err=True)
        click.echo('hint: set `vault = "/path/to/your/vault"` at its top', err=True)
    else:
        write_config_example(write, text, force=force)
        click.echo(f"wrote {write}", err=True)
