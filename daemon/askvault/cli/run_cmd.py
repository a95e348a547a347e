"""`askvault run`: the daemon in the foreground."""

from __future__ import annotations

import sys
from typing import Any

import click

from askvault.cli.common import build_settings, common_options, handle_errors


@click.command()
@common_options
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=None,
    help="Log lines as text (journald-friendly under systemd) or JSON.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default=None,
    help="Least important level logged (default info).",
)
@handle_errors
def run(log_format: str | None, log_level: str | None, **opts: Any) -> None:
    """Keep the index fresh and answer inbox questions until SIGTERM/SIGINT (SIGHUP: reconcile)."""
    from askvault.app.daemon import build_daemon
    from askvault.app.logging_setup import configure_logging

    extra: dict[str, Any] = {"daemon.log_format": log_format, "daemon.log_level": log_level}
    settings = build_settings(**opts, **extra)
    configure_logging(settings.daemon.log_format, settings.daemon.log_level)
    sys.exit(build_daemon(settings).run())
