"""What the commands share: the common options, the settings they give, the one
translation of errors into a line and a hint, and a JSON document on stdout.

Imported by each command module (`*_cmd.py`); it imports none of them, and `main` imports
them all, so the commands and the group they join import in one direction.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import click

from askvault.core.controls import strip_controls
from askvault.errors import AskvaultError
from askvault.settings import Settings, SettingsTrace, load_traced_settings


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--vault, --config, --embed-model, --chat-model on every command."""
    options = [
        click.option(
            "--vault",
            type=click.Path(file_okay=False, path_type=Path),
            help="The vault folder (or ASKVAULT_VAULT, or `vault =` in the config).",
        ),
        click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False, path_type=Path),
            help="A TOML config file (default: $XDG_CONFIG_HOME/askvault/config.toml).",
        ),
        click.option("--embed-model", help="Embedding model (or ASKVAULT_EMBED_MODEL)."),
        click.option("--chat-model", help="Chat model (or ASKVAULT_CHAT_MODEL)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def period_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--since and --until: narrow to the notes of a period (search, context, ask)."""
    help_tail = " (a date 2024-01-05, a month 2024-01, a year 2023, or words such as 'last week')."
    func = click.option(
        "--until", help="Only notes dated up to the end of this day, month or year" + help_tail
    )(func)
    return click.option(
        "--since", help="Only notes dated from the start of this day, month or year" + help_tail
    )(func)


def build_settings(
    vault: Path | None,
    config_file: Path | None,
    embed_model: str | None,
    chat_model: str | None,
    *,
    need_vault: bool = True,
    **extra: Any,
) -> Settings:
    """Settings from defaults, file, environment and these flags; a vault is required."""
    return build_traced_settings(
        vault, config_file, embed_model, chat_model, need_vault=need_vault, **extra
    )[0]


def build_traced_settings(
    vault: Path | None,
    config_file: Path | None,
    embed_model: str | None,
    chat_model: str | None,
    *,
    need_vault: bool = True,
    **extra: Any,
) -> tuple[Settings, SettingsTrace]:
    """`build_settings`, and which config file is in force and where each setting comes
    from (`status` and `doctor` show it)."""
    flags: dict[str, Any] = {
        "vault": str(vault) if vault else None,
        "ollama.embed_model": embed_model,
        "ollama.chat_model": chat_model,
        **extra,
    }
    settings, trace = load_traced_settings(config_file, flags=flags)
    if need_vault and not settings.vault:
        raise AskvaultError("no vault given", "pass --vault PATH or set ASKVAULT_VAULT")
    if need_vault and not settings.vault_path.is_dir():
        raise AskvaultError(
            f"the vault {settings.vault_path} is not a folder",
            "pass --vault PATH to your Obsidian vault",
        )
    return settings, trace


def handle_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn AskvaultError into `askvault: <message>` + `hint: ...` on stderr and exit 1."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except AskvaultError as exc:
            # A message may carry what a server sent (Ollama's error text): no controls.
            click.echo(f"askvault: {strip_controls(exc.message)}", err=True)
            if exc.hint:
                click.echo(f"hint: {strip_controls(exc.hint)}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            sys.exit(130)
        except Exception as exc:
            # A full disk can surface anywhere (a temp table of a search, a log file, a
            # note written): one line, never a traceback. Imported here: the adapter (and
            # SQLite) stays out of the start of every command.
            from askvault.adapters.db import is_disk_full

            if not is_disk_full(exc):
                raise
            where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
            click.echo(f"askvault: the disk is full{where}: {exc}", err=True)
            click.echo("hint: free some disk space and try again", err=True)
            sys.exit(1)

    return wrapper


def print_json(doc: Any) -> None:
    """One JSON document on stdout, stable key order, nothing else."""
    import json

    click.echo(json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2))
