"""`askvault search` and `askvault context`."""

from __future__ import annotations

from typing import Any

import click

from askvault.cli.main import build_settings, cli, common_options, handle_errors, print_json
from askvault.settings import DEFAULT_BUDGET_TOKENS

# Services are imported inside each command: `askvault --help` and the other commands
# never pay for them (issue 11).


def _warn_degraded(reason: str | None) -> None:
    if reason:
        click.echo(f"askvault: warning: words only, {reason}", err=True)


def _echo_evidence(text: str) -> None:
    """The evidence itself, quoted under its citation (blank lines kept as bare `>`)."""
    for line in text.rstrip("\n").splitlines():
        click.echo(f"          > {line}".rstrip())


@cli.command("search")
@click.argument("query")
@click.option("--limit", type=click.IntRange(min=1), help="Number of hits (default: search.limit).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--explain", is_flag=True,
              help="Show each channel's raw score, rank, scaled score (convex) and points.")
@common_options
@handle_errors
def search_command(
    query: str, limit: int | None, as_json: bool, explain: bool, **opts: Any
) -> None:
    """Search the vault: hybrid words + vectors, one hit per page, best first."""
    from askvault.app.clients import OllamaClients
    from askvault.services.search import open_search, search, search_result_to_json

    settings = build_settings(**opts)
    with open_search(settings, OllamaClients(settings)) as (conn, embedder):
        result = search(conn, settings, query, limit=limit, embedder=embedder)
    _warn_degraded(result.degraded)
    doc = search_result_to_json(result, explain=explain)
    if as_json:
        print_json(doc)
        return
    for hit in doc["hits"]:
        click.echo(f"{hit['score']:.4f}  {hit['wikilink']}  {hit['file']}:{hit['lines'][0]}-"
                   f"{hit['lines'][1]}")
        click.echo(f"        {hit['snippet']}")
        if explain:
            for channel, info in hit["explain"].items():
                scaled = f" scaled={info['scaled']}" if "scaled" in info else ""
                click.echo(f"        {channel:<13} raw={info.get('raw')} rank={info.get('rank')}"
                           f"{scaled} points={info.get('points')}")
    if not doc["hits"]:
        click.echo("no hits")


@cli.command("context")
@click.argument("prompt")
@click.option("--budget", type=click.IntRange(min=1), default=DEFAULT_BUDGET_TOKENS,
              show_default=True, help="Token budget of the evidence.")
@click.option("--include-sources", is_flag=True,
              help="Add raw text windows from the vault's sources/ and raw/ folders.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@common_options
@handle_errors
def context_command(prompt: str, budget: int, include_sources: bool, as_json: bool,
                    **opts: Any) -> None:
    """The evidence pack for PROMPT, without an answer."""
    from askvault.services.context import build_context, context_pack_to_json
    from askvault.app.clients import OllamaClients
    from askvault.services.search import open_search

    settings = build_settings(**opts)
    with open_search(settings, OllamaClients(settings)) as (conn, embedder):
        pack = build_context(conn, settings, prompt, budget_tokens=budget, embedder=embedder,
                             include_sources=include_sources)
    _warn_degraded(pack.degraded)
    doc = context_pack_to_json(pack)
    if as_json:
        print_json(doc)
        return
    click.echo(f"{doc['used_tokens']}/{doc['budget_tokens']} tokens")
    for page in doc["pages"]:
        flag = "" if page["fresh"] else "  (not fresh)"
        click.echo(f"{page['score']:.4f}  {page['wikilink']}{flag}")
        for chunk in page["chunks"]:
            lines = chunk["lines"]
            click.echo(f"        {chunk['citation']}  lines {lines[0]}-{lines[1]}")
            _echo_evidence(chunk["text"])
    for n in doc["neighbours"]:
        click.echo(f"  near  {n['wikilink']}  ({n['why']})")
    for w in doc["sources"]:
        click.echo(f"  source {w['file']}:{w['lines'][0]}-{w['lines'][1]}")
        _echo_evidence(w["text"])
    for line in doc["warnings"]:
        click.echo(f"warning: {line}", err=True)
    for action in doc["actions"]:
        click.echo(f"next: {action}")
