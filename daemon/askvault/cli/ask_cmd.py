"""`askvault ask QUESTION [--json] [--save] [--follow-up NOTE]`: the inbox pipeline in the
terminal."""

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
from askvault.errors import AskvaultError


@click.command()
@common_options
@click.argument("question")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document (its fields: docs/reference/documents.md).",
)
@click.option("--save", is_flag=True, help="Also write the answer note to queries/answers/.")
@click.option(
    "--follow-up",
    "follow_up",
    metavar="NOTE",
    help="Answer QUESTION as a follow-up to the answer note NOTE (its questions carried "
    "into the search, its ask_* options kept unless --since/--until say otherwise); NOTE "
    "is not changed.",
)
@period_options
@handle_errors
def ask(
    question: str,
    as_json: bool,
    save: bool,
    follow_up: str | None,
    since: str | None,
    until: str | None,
    **opts: Any,
) -> None:
    """Answer QUESTION from the vault: streamed, then the citation report and the log line.
    Words of a period ("last week", "in March 2023") answer from the notes of those days."""
    from askvault.app.clients import OllamaClients
    from askvault.core.schema import to_json
    from askvault.records import QuestionOptions
    from askvault.services.answer import read_thread
    from askvault.services.answer.resources import opened
    from askvault.services.documents.answer import answer_document
    from askvault.services.inbox.ask import ask_question

    settings = build_settings(**opts)
    thread = read_thread(settings, follow_up) if follow_up else None
    with opened(settings, OllamaClients(settings)) as resources:
        outcome = ask_question(
            settings,
            resources,
            question,
            on_token=None if as_json else render.echo_token,
            save=save,
            options=QuestionOptions(since=since, until=until),
            thread=thread,
        )
    result = outcome.result
    if as_json:
        print_json(to_json(answer_document(result, saved=outcome.saved, logged=outcome.logged)))
    else:
        render.show_answer(outcome)
    if result.status in ("waiting", "failed"):
        raise AskvaultError(
            f"no answer ({result.status}): {result.reason}",
            "try `askvault doctor`" if result.status == "waiting" else "",
        )
