"""`askvault index`: one reconcile and embedding pass without the daemon."""

from __future__ import annotations

import sys
from typing import Any

import click

from askvault.cli import render
from askvault.cli.common import build_settings, common_options, handle_errors, print_json
from askvault.errors import AskvaultError, ModelMissing


@click.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Let the reconcile delete every note of a vault that now holds none "
    "(refused by default: it looks like an unmounted drive).",
)
@handle_errors
def index(as_json: bool, allow_empty: bool, **opts: Any) -> None:
    """Reconcile the vault with the index and embed what is new, then exit.

    Exits 0 once the word index is complete, even when embeddings must wait for Ollama
    (it says so); 1 on a real failure, a refused Ollama host included."""
    from askvault.app.clients import OllamaClients
    from askvault.services.index.index_pass import index_vault

    settings = build_settings(**opts)
    show = sys.stderr.isatty() and not as_json
    with (
        render.ProgressLine("scanning", "notes", show) as scan_bar,
        render.ProgressLine("embedding", "texts", show) as embed_bar,
    ):
        report = index_vault(
            settings,
            OllamaClients(settings),
            on_scan=scan_bar.update,
            on_embed=embed_bar.update,
            allow_empty=allow_empty,
        )
    doc = report.as_dict()
    if as_json:
        print_json(doc)
    else:
        click.echo(render.index_summary(doc))
    if report.embeddings_refused and report.embed_error is not None:
        raise AskvaultError(
            f"the word index is complete, but embeddings are refused: {report.embed_error.message}",
            report.embed_error.hint,
        )
    if report.embed_error is not None and not as_json:
        render.show_embeddings_wait(
            report.embed_error.message,
            report.embed_error.hint,
            model_missing=isinstance(report.embed_error, ModelMissing),
        )
