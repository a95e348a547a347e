"""`askvault index`, `status`, `doctor` and `config-example`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from askvault.cli.main import build_settings, cli, common_options, handle_errors, print_json
from askvault.core.progress import RateWindow, format_duration
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
    """Reconcile the vault with the index and embed what is new, then exit.

    Exits 0 once the word index is complete, even when embeddings must wait for Ollama
    (it says so); 1 on a real failure, a refused Ollama host included."""
    from askvault.app.clients import OllamaClients
    from askvault.services.index_pass import index_vault

    settings = build_settings(**opts)
    show = sys.stderr.isatty() and not as_json
    with ProgressLine("scanning", "notes", show) as scan_bar, \
            ProgressLine("embedding", "texts", show) as embed_bar:
        report = index_vault(settings, OllamaClients(settings), on_scan=scan_bar.update,
                             on_embed=embed_bar.update, allow_empty=allow_empty)
    doc = report.as_dict()
    if as_json:
        print_json(doc)
    else:
        click.echo(index_summary(doc))
    if report.embeddings_refused and report.embed_error is not None:
        raise AskvaultError(
            f"the word index is complete, but embeddings are refused: "
            f"{report.embed_error.message}", report.embed_error.hint)
    if report.embed_error is not None and not as_json:
        hint = f" ({report.embed_error.hint})" if report.embed_error.hint else ""
        click.echo(f"askvault: embeddings wait: {report.embed_error.message}{hint}. The word "
                   "index is complete and search works by words meanwhile; `askvault run` "
                   "(or the next `askvault index`) embeds them once Ollama answers.", err=True)


def index_summary(doc: dict[str, Any]) -> str:
    """The closing line of `askvault index`: the whole command, scan and embedding."""
    unchanged = doc["unchanged"] + doc["touched"] + doc["rechunked"]
    line = (f"{doc['added']} added, {doc['changed']} changed, {doc['deleted']} deleted, "
            f"{doc['renamed']} renamed, {unchanged} unchanged"
            f"{' (' + str(doc['rechunked']) + ' cut anew)' if doc['rechunked'] else ''}, "
            f"{doc['skipped']} skipped (scan {format_duration(doc['seconds'])}); "
            f"{doc['texts_embedded']} of {doc['texts_to_embed']} texts embedded "
            f"({format_duration(doc['embed_wall_seconds'])}); "
            f"{doc['pending_embeddings']} chunks waiting for a vector; "
            f"{format_duration(doc['total_seconds'])} in all")
    if doc["texts_failed"]:
        line += f" ({doc['texts_failed']} texts got an unusable vector, retried later)"
    return line


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
    for line in status_lines(doc):
        click.echo(line)


def status_lines(doc: dict[str, Any]) -> list[str]:
    """`askvault status` as text: the same facts as --json."""
    ollama, embedding = doc["ollama"], doc["embedding"]
    out = [f"vault        {doc['vault']}"]
    if doc.get("vault_unavailable"):
        out.append(f"vault        NOT THERE: {doc['vault_unavailable']} (retried by the daemon)")
    out.append(f"index        {doc['index']}")
    out.append(f"notes        {doc['notes']} ({doc['chunks']} chunks, "
               f"{doc['embedded_chunks']} embedded, {doc['pending_embeddings']} pending for "
               f"{embedding['model']})")
    for failure in doc.get("embed_failures", [])[:5]:
        out.append(f"not embedded {failure['file']}: {failure['reason']} "
                   f"(tried {failure['attempts']}x, retried later; searchable by words)")
    if (embedding.get("index_model") and not embedding.get("fingerprint")
            and embedding["index_model"] != embedding["model"]):
        out.append(f"embedding    the index's vectors are of {embedding['index_model']}; "
                   f"{embedding['model']} has none yet (`askvault index` builds them)")
    if embedding.get("waiting"):
        out.append(f"embedding    waiting: {embedding['waiting']}")
    out.append(f"last change  {doc['last_change_indexed_at'] or 'never'}")
    if ollama.get("refused"):
        out.append(f"ollama       REFUSED: {ollama['error']}")
        out.append(f"             {ollama['hint']}")
    else:
        reach = ("not probed" if ollama["reachable"] is None
                 else "reachable" if ollama["reachable"] else "NOT reachable")
        out.append(f"ollama       {ollama['url']} ({reach}; "
                   f"embed {ollama['embed_model']}, chat {ollama['chat_model']})")
    out.extend(_question_lines(doc["questions"]))
    for item in doc["stale_answers"]:
        how = ("marked stale" if item["marked"]
               else "edited by you, so not marked: check its cited pages")
        out.append(f"stale        {item['path']} ({how})")
    writer = doc.get("writer")
    if doc["daemon"]:
        out.append(f"daemon       pid {doc['daemon']}")
    elif writer:
        out.append(f"daemon       not running; `askvault {writer['command'] or '?'}` "
                   f"(pid {writer['pid'] or '?'}) writes the index")
    else:
        out.append("daemon       not running")
    for item in doc["skipped"][:20]:
        out.append(f"skipped      {item['path']}: {item['reason']}")
    if len(doc["skipped"]) > 20:
        out.append(f"skipped      … and {len(doc['skipped']) - 20} more (see --json)")
    return out


def _question_lines(questions: dict[str, list[str]]) -> list[str]:
    counts = {state: len(paths) for state, paths in questions.items()}
    to_answer = counts["new"] + counts["answering"] + counts["waiting"]
    detail = ", ".join(f"{counts[s]} {label}" for s, label in (
        ("new", "new"), ("answering", "being answered"), ("waiting", "waiting for Ollama"))
        if counts[s])
    parts = [f"{to_answer} to answer" + (f" ({detail})" if detail else "")]
    if counts["filing"]:
        parts.append(f"{counts['filing']} answered, being archived")
    parts.append(f"{counts['draft']} draft{'' if counts['draft'] == 1 else 's'}")
    parts.append(f"{counts['failed']} failed")
    out = [f"questions    {', '.join(parts)}"]
    out.extend(f"failed       {path} (its answer note says why; edit the question to retry)"
               for path in questions["failed"])
    return out


@cli.command()
@common_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@handle_errors
def doctor(as_json: bool, **opts: Any) -> None:
    """Check config, vault, index integrity, sqlite-vec and Ollama; exit 0 only if all pass."""
    from askvault.app.clients import OllamaClients
    from askvault.services.doctor import run_checks

    settings = build_settings(**opts)
    checks = run_checks(settings, OllamaClients(settings))
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
              help="Write to this file instead of stdout (never over an existing file).")
@click.option("--force", is_flag=True, help="With --write: replace an existing file.")
@handle_errors
def config_example(write: Path | None, force: bool) -> None:
    """Print the example configuration (every key, its default and meaning)."""
    text = render_example_toml()
    if write:
        from askvault.services.config_file import write_config_example

        write_config_example(write, text, force=force)
        click.echo(f"wrote {write}", err=True)
    else:
        click.echo(text, nl=False)


class ProgressLine:
    """One progress line on stderr, shown only on a terminal: done/total, percent, and an
    ETA from the rate of a moving window (none until that rate means something)."""

    REDRAW_S = 0.1
    WIDTH = 24

    def __init__(self, label: str, unit: str, show: bool,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.unit, self.show, self.clock = label, unit, show, clock
        self.window = RateWindow()
        self.started: float | None = None
        self.finished_at: float | None = None
        self._drawn_at: float | None = None
        self._closed = False
        self._last = (0, 0)

    def __enter__(self) -> ProgressLine:
        return self

    def update(self, done: int, total: int) -> None:
        now = self.clock()
        if self.started is None:
            self.started = now
        self.window.add(now, done)
        self._last = (done, total)
        if total > 0 and done >= total and self.finished_at is None:
            self.finished_at = now
        if not self.show or total <= 0 or self._closed:
            return
        if self.finished_at is not None:
            # Done: the line is closed now, so the next bar starts on a line of its own.
            click.echo("\r" + self.render(done, total) + "\x1b[K", err=True)
            self._closed = True
        elif self._drawn_at is None or now - self._drawn_at >= self.REDRAW_S:
            self._drawn_at = now
            click.echo("\r" + self.render(done, total) + "\x1b[K", nl=False, err=True)

    def render(self, done: int, total: int) -> str:
        """`scanning  [######------------------]  120/500 notes  24%  ETA 12 s`; once done,
        the time it took instead of the ETA."""
        filled = self.WIDTH * min(done, total) // total if total > 0 else self.WIDTH
        percent = 100 * min(done, total) // total if total > 0 else 100
        if done >= total and self.started is not None:
            end = self.finished_at if self.finished_at is not None else self.clock()
            tail = format_duration(end - self.started)
        else:
            eta = self.window.eta_s(done, total)
            tail = f"ETA {format_duration(eta)}" if eta is not None else ""
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        return f"{self.label:<10}[{bar}]  {done}/{total} {self.unit}  {percent}%  {tail}".rstrip()

    def __exit__(self, *exc: object) -> None:
        if self.show and self._drawn_at is not None and not self._closed:
            done, total = self._last  # stopped short (an error, Ctrl-C): keep what it showed
            click.echo("\r" + self.render(done, total) + "\x1b[K", err=True)
            self._closed = True
