"""`askvault status`: what the index holds and waits for, and who is up."""

from __future__ import annotations

from typing import Any

import click

from askvault.cli import render
from askvault.cli.common import build_traced_settings, common_options, handle_errors, print_json


@click.command()
@common_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document (its fields: docs/reference/documents.md).",
)
@handle_errors
def status(as_json: bool, **opts: Any) -> None:
    """What the index holds, what waits, and whether the daemon and Ollama are up."""
    from askvault.core.schema import to_json
    from askvault.services.admin.status import collect_status

    settings, trace = build_traced_settings(**opts)
    doc = to_json(collect_status(settings, config=trace))
    if as_json:
        print_json(doc)
        return
    render.echo_lines(render.status_lines(doc))
