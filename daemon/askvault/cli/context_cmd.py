"""`askvault context`: the evidence pack for a prompt, no answer."""

from __future__ import annotations

from typing import Any

import click

from askvault.cli import render
from askvault.cli.common import (
    build_settings,
    common_options,
    handle_errors,
    period_options,
    print_json,
)
from askvault.settings import DEFAULT_BUDGET_TOKENS

# Services are imported inside the command: `askvault --help` and the other commands
# never pay for them (docs/decisions.md, "Lean and instant: storage, start-up, renames").


@click.command("context")
@click.argument("prompt")
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=DEFAULT_BUDGET_TOKENS,
    show_default=True,
    help="Token budget of the evidence.",
)
@click.option(
    "--include-sources",
    is_flag=True,
    help="Add raw text windows from the vault's sources/ and raw/ folders.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document (its fields: docs/reference/documents.md).",
)
@period_options
@common_options
@handle_errors
def context_command(
    prompt: str,
    budget: int,
    include_sources: bool,
    as_json: bool,
    since: str | None,
    until: str | None,
    **opts: Any,
) -> None:
    """The evidence pack for PROMPT, without an answer (of the notes of the period its
    words name, if any)."""
    from askvault.app.clients import OllamaClients
    from askvault.core.schema import to_json
    from askvault.records import PeriodRequest
    from askvault.services.documents.context import context_document
    from askvault.services.retrieval.context import build_context
    from askvault.services.retrieval.search import open_search

    settings = build_settings(**opts)
    with open_search(settings, OllamaClients(settings)) as (conn, embedder):
        pack = build_context(
            conn,
            settings,
            prompt,
            budget_tokens=budget,
            embedder=embedder,
            include_sources=include_sources,
            period=PeriodRequest(since=since, until=until),
        )
    render.warn_degraded(pack.degraded)
    doc = to_json(context_document(pack))
    if as_json:
        print_json(doc)
        return
    render.show_context(doc)
