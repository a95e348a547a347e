"""`askvault search`: hybrid search, scored and explained."""

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

# Services are imported inside the command: `askvault --help` and the other commands
# never pay for them (docs/decisions.md, "Lean and instant: storage, start-up, renames").


@click.command("search")
@click.argument("query")
@click.option("--limit", type=click.IntRange(min=1), help="Number of hits (default: search.limit).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document (its fields: docs/reference/documents.md).",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Show each channel's raw score, rank, scaled score (convex) and points.",
)
@period_options
@common_options
@handle_errors
def search_command(
    query: str,
    limit: int | None,
    as_json: bool,
    explain: bool,
    since: str | None,
    until: str | None,
    **opts: Any,
) -> None:
    """Search the vault: hybrid words + vectors, one hit per page, best first. Words of a
    period in QUERY ("last week", "in March 2023") narrow it to the notes of those days."""
    from askvault.app.search_socket import ask_daemon

    settings = build_settings(**opts)
    # The running daemon has everything loaded: its answer is this search's document, or
    # None and the command searches by itself (app/search_socket.py; docs/decisions.md,
    # "A search from the terminal as quick as the peer's").
    doc = ask_daemon(settings, query, limit=limit, explain=explain, since=since, until=until)
    if doc is None:
        from askvault.app.clients import OllamaClients
        from askvault.core.schema import to_json
        from askvault.records import PeriodRequest
        from askvault.services.documents.search import search_document
        from askvault.services.retrieval.search import open_search, search

        with open_search(settings, OllamaClients(settings)) as (conn, embedder):
            result = search(
                conn,
                settings,
                query,
                limit=limit,
                embedder=embedder,
                period=PeriodRequest(since=since, until=until),
            )
        doc = to_json(search_document(result, explain=explain))
    render.warn_degraded(doc["degraded"])
    if as_json:
        print_json(doc)
        return
    render.echo_lines(render.search_lines(doc, explain))
