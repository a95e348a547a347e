"""`askvault ask QUESTION [--json] [--save]`: the inbox pipeline in the terminal."""

from __future__ import annotations

import sys
from typing import Any

import click

from askvault.cli.main import build_settings, cli, common_options, handle_errors, print_json
from askvault.errors import AskvaultError


@cli.command()
@common_options
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--save", is_flag=True, help="Also write the answer note to queries/answers/.")
@handle_errors
def ask(question: str, as_json: bool, save: bool, **opts: Any) -> None:
    """Answer QUESTION from the vault: streamed, then the citation report and the log line."""
    from askvault.app.clients import OllamaClients
    from askvault.core.answer_note import render_citation_report
    from askvault.services.ask import ask_question

    settings = build_settings(**opts)

    def show(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    outcome = ask_question(settings, OllamaClients(settings), question,
                           on_token=None if as_json else show, save=save)
    result = outcome.result
    if as_json:
        print_json({**result.as_json(), "saved": outcome.saved, "logged": outcome.logged})
    else:
        click.echo("")
        if result.status in ("answered", "no-answer"):
            if result.answer != result.reply:
                # Excerpt numbers became links, links that back nothing became text,
                # unsupported sentences got a marker: show what the note says.
                click.echo("\nAs checked and published:\n" + result.answer)
            click.echo("\n" + render_citation_report(result.report))
        if result.status == "waiting" and result.note.passages:
            click.echo("\nBest passages found (extractive, not an answer):")
            for passage in result.note.passages:
                click.echo(f"- {passage.wikilink}" + (f" — {passage.heading}"
                                                       if passage.heading else ""))
                click.echo("  > " + " ".join(passage.text.split())[:200])
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
        if outcome.saved:
            click.echo(f"\nSaved: {outcome.saved}")
        if outcome.logged:
            click.echo(f"Logged: {outcome.logged}")
    if result.status in ("waiting", "failed"):
        raise AskvaultError(f"no answer ({result.status}): {result.reason}",
                            "try `askvault doctor`" if result.status == "waiting" else "")
