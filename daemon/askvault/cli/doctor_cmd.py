"""`askvault doctor`: every check, each with a fix."""

from __future__ import annotations

import sys
from typing import Any

import click

from askvault.cli import render
from askvault.cli.common import build_traced_settings, common_options, handle_errors, print_json


@click.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@handle_errors
def doctor(as_json: bool, **opts: Any) -> None:
    """Check config, vault, index integrity, sqlite-vec and Ollama; exit 0 only if all pass."""
    from askvault.app.clients import OllamaClients
    from askvault.services.admin.doctor import run_checks

    settings, trace = build_traced_settings(**opts)
    checks = run_checks(settings, OllamaClients(settings), config=trace)
    if as_json:
        print_json(render.doctor_json(checks))
    else:
        render.echo_lines(render.doctor_lines(checks))
    if not all(c.ok for c in checks):
        sys.exit(1)
