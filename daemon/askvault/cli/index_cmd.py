"""`askvault index`, `status`, `doctor` and `config-example`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from askvault.cli.main import build_settings, cli, common_options, handle_errors, print_json
from askvault.errors import AskvaultError
from askvault.settings import render_example_toml


@cli.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--allow-empty", is_flag=True,
              help="Let the reconcile delete every note of a vault that now holds none "
                   "(refused by default: it looks like an unmounted drive).")
@handle_errors
def index(as_json: bool, allow_empty: bool, **opts: Any) -> None:
    """Reconcile the vault with the index and embed what is new, then exit."""
    from askvault.services.index_pass import index_vault

    settings = build_settings(**opts)
    show = sys.stderr.isatty() and not as_json
    with _Bar("scanning", show) as scan_bar, _Bar("embedding", show) as embed_bar:
        report = index_vault(settings, on_scan=scan_bar.update, on_embed=embed_bar.update,
                             allow_empty=allow_empty)
    doc = report.as_dict()
    if as_json:
        print_json(doc)
    else:
        click.echo(
            f"{doc['added']} added, {doc['changed']} changed, {doc['deleted']} deleted, "
            f"{doc['renamed']} renamed, "
            f"{doc['unchanged'] + doc['touched'] + doc['rechunked']} unchanged"
            f"{' (' + str(doc['rechunked']) + ' cut anew)' if doc['rechunked'] else ''}, "
            f"{doc['skipped']} skipped in {doc['seconds']} s; {doc['texts_embedded']} texts "
            f"embedded, {doc['pending_embeddings']} chunks waiting for a vector"
            + (f" ({doc['texts_failed']} texts got an unusable vector, retried later)"
               if doc["texts_failed"] else "")
        )
    if report.embed_error:
        raise AskvaultError(
            f"the index is fresh for words, but embeddings wait: {report.embed_error.message}",
            report.embed_error.hint or "try `askvault doctor`",
        )


@cli.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@handle_errors
def status(as_json: bool, **opts: Any) -> None:
    """What the index holds, what waits, and whether the daemon and Ollama are up."""
    from askvault.services.status import collect_status

    doc = collect_status(build_settings(**opts))
    if as_json:
        print_json(doc)
        return
    ollama = doc["ollama"]
    click.echo(f"vault        {doc['vault']}")
    if doc.get("vault_unavailable"):
        click.echo(f"vault        NOT THERE: {doc['vault_unavailable']} (retried by the daemon)")
    click.echo(f"index        {doc['index']}")
    click.echo(f"notes        {doc['notes']} ({doc['chunks']} chunks, "
               f"{doc['embedded_chunks']} embedded, {doc['pending_embeddings']} pending)")
    for failure in doc.get("embed_failures", [])[:5]:
        click.echo(f"not embedded {failure['file']}: {failure['reason']} "
                   f"(tried {failure['attempts']}x, retried later; searchable by words)")
    if doc["embedding"].get("waiting"):
        click.echo(f"embedding    waiting: {doc['embedding']['waiting']}")
    click.echo(f"last change  {doc['last_change_indexed_at'] or 'never'}")
    click.echo(f"ollama       {ollama['url']} "
               f"({'reachable' if ollama['reachable'] else 'NOT reachable'}; "
               f"embed {ollama['embed_model']}, chat {ollama['chat_model']})")
    click.echo(f"questions    {doc['queue']} waiting")
    writer = doc.get("writer")
    if doc["daemon"]:
        click.echo(f"daemon       pid {doc['daemon']}")
    elif writer:
        click.echo(f"daemon       not running; `askvault {writer['command'] or '?'}` "
                   f"(pid {writer['pid'] or '?'}) writes the index")
    else:
        click.echo("daemon       not running")
    for item in doc["skipped"][:20]:
        click.echo(f"skipped      {item['path']}: {item['reason']}")
    if len(doc["skipped"]) > 20:
        click.echo(f"skipped      … and {len(doc['skipped']) - 20} more (see --json)")


@cli.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@handle_errors
def doctor(as_json: bool, **opts: Any) -> None:
    """Check config, vault, index integrity, sqlite-vec and Ollama; exit 0 only if all pass."""
    from askvault.services.doctor import run_checks

    checks = run_checks(build_settings(**opts))
    if as_json:
        print_json([{"check": c.name, "ok": c.ok, "detail": c.detail, "hint": c.hint}
                    for c in checks])
    else:
        for c in checks:
            click.echo(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
            if not c.ok and c.hint:
                click.echo(f"     hint: {c.hint}")
    if not all(c.ok for c in checks):
        sys.exit(1)


@cli.command("config-example")
@click.option("--write", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to this file instead of stdout.")
def config_example(write: Path | None) -> None:
    """Print the example configuration (every key, its default and meaning)."""
    text = render_example_toml()
    if write:
        write.write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


class _Bar:
    """A click progress bar shown only on a terminal."""

    def __init__(self, label: str, show: bool) -> None:
        self.label, self.show = label, show
        self._bar: Any = None
        self._pos = 0

    def __enter__(self) -> _Bar:
        return self

    def update(self, done: int, total: int) -> None:
        if not self.show or total <= 0:
            return
        if self._bar is None:
            self._bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._pos)
        self._pos = done

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
