"""How the commands look on a terminal: their tables, lines, progress and reports.

The commands hand their service's result (or its `--json` document) to one function here.
`*_lines` and `*_summary` return text; `show_*` writes a command's whole output, where
stdout and stderr lines interleave in a fixed order. `ProgressLine` is `askvault index`'s
progress on stderr. Services are imported only for their types (or inside a function), so
that loading this module costs `askvault --help` nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

from askvault.core.controls import strip_controls
from askvault.core.progress import RateWindow, format_duration

if TYPE_CHECKING:
    from askvault.services.admin.doctor import Check
    from askvault.services.admin.user_service import ServiceFile, ServiceReport
    from askvault.services.inbox.ask import AskOutcome


def echo_lines(lines: Iterable[str]) -> None:
    """Each line on stdout."""
    for line in lines:
        click.echo(line)


# -- index -----------------------------------------------------------------------------------


def index_summary(doc: dict[str, Any]) -> str:
    """The closing line of `askvault index`: the whole command, scan and embedding."""
    unchanged = doc["unchanged"] + doc["touched"] + doc["rechunked"]
    line = (
        f"{doc['added']} added, {doc['changed']} changed, {doc['deleted']} deleted, "
        f"{doc['renamed']} renamed, {unchanged} unchanged"
        f"{' (' + str(doc['rechunked']) + ' cut anew)' if doc['rechunked'] else ''}, "
        f"{doc['skipped']} skipped (scan {format_duration(doc['seconds'])}); "
        f"{doc['texts_embedded']} of {doc['texts_to_embed']} texts embedded "
        f"({format_duration(doc['embed_wall_seconds'])}); "
        f"{doc['pending_embeddings']} chunks waiting for a vector; "
        f"{format_duration(doc['total_seconds'])} in all"
    )
    if doc["texts_failed"]:
        line += f" ({doc['texts_failed']} texts got an unusable vector, retried later)"
    return line


def show_embeddings_wait(message: str, hint: str, *, model_missing: bool = False) -> None:
    """On stderr: the word index is complete, the embeddings wait for Ollama (or, when
    Ollama answers but lacks the model, for the model to be pulled)."""
    until = "the model is pulled" if model_missing else "Ollama answers"
    hint = f" ({hint})" if hint else ""
    click.echo(
        f"askvault: embeddings wait: {message}{hint}. The word "
        "index is complete and search works by words meanwhile; `askvault run` "
        f"(or the next `askvault index`) embeds them once {until}.",
        err=True,
    )


class ProgressLine:
    """One progress line on stderr, shown only on a terminal: done/total, percent, and an
    ETA from the rate of a moving window (none until that rate means something)."""

    REDRAW_S = 0.1
    WIDTH = 24

    def __init__(
        self, label: str, unit: str, show: bool, clock: Callable[[], float] = time.monotonic
    ) -> None:
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


# -- status and doctor -----------------------------------------------------------------------


def status_lines(doc: dict[str, Any]) -> list[str]:
    """`askvault status` as text: the same facts as --json."""
    out = [f"vault        {doc['vault']}"]
    if doc.get("vault_unavailable"):
        out.append(f"vault        NOT THERE: {doc['vault_unavailable']} (retried by the daemon)")
    out.append(f"index        {doc['index']}")
    out.extend(_config_lines(doc.get("config")))
    out.extend(_index_lines(doc))
    out.extend(_cutoff_lines(doc.get("distance_cutoff")))
    out.append(f"last change  {doc['last_change_indexed_at'] or 'never'}")
    out.extend(_ollama_lines(doc["ollama"]))
    out.extend(_question_lines(doc["questions"]) + _follow_up_lines(doc.get("follow_ups", [])))
    out.extend(_stale_lines(doc["stale_answers"]))
    out.append(_daemon_line(doc))
    out.extend(_skipped_lines(doc["skipped"]))
    return out


def _index_lines(doc: dict[str, Any]) -> list[str]:
    """What the index holds and what is under way: notes and chunks, a scan, the embedding
    rate, how notes are dated, the texts that failed, what embedding waits for."""
    embedding = doc["embedding"]
    out = [_notes_line(doc)]
    scan = doc.get("scan")
    if scan:
        out.append(
            f"scan         running ({scan['reason']}): {scan['done']} of {scan['total']} notes,"
            f" {format_duration(scan['seconds'])} so far"
        )
    if embedding.get("rate_per_s") is not None:
        left = (
            f", about {format_duration(embedding['eta_s'])} left"
            if embedding.get("eta_s") is not None and doc["pending_embeddings"]
            else ""
        )
        out.append(f"embedding    running: {embedding['rate_per_s']:g} texts/s{left}")
    days = doc.get("note_days")
    if days:
        out.append(
            f"note days    {days['daily']} daily-note names, {days['name']} dated file names, "
            f"{days['property']} date properties, {days['mtime']} file times"
            + (f", {days['undated']} not dated yet" if days["undated"] else "")
        )
    for failure in doc.get("embed_failures", [])[:5]:
        out.append(
            f"not embedded {failure['file']}: {failure['reason']} "
            f"(tried {failure['attempts']}x, retried later; searchable by words)"
        )
    return out + _embedding_wait_lines(embedding, daemon=bool(doc["daemon"]))


def _notes_line(doc: dict[str, Any]) -> str:
    """Notes, chunks and their vectors: for two models while the index switches."""
    embedding = doc["embedding"]
    if embedding.get("index_model") and embedding["index_model"] != embedding["model"]:
        # After a model switch the vectors search uses are the old model's, and the new
        # one's are still to make: "2210 embedded, 2210 pending" read as a contradiction.
        return (
            f"notes        {doc['notes']} ({doc['chunks']} chunks: {doc['embedded_chunks']} "
            f"embedded with {embedding['index_model']}, which search uses; "
            f"{doc['pending_embeddings']} to embed with {embedding['model']})"
        )
    return (
        f"notes        {doc['notes']} ({doc['chunks']} chunks, "
        f"{doc['embedded_chunks']} embedded, {doc['pending_embeddings']} pending for "
        f"{embedding['model']})"
    )


def _embedding_wait_lines(embedding: dict[str, Any], *, daemon: bool) -> list[str]:
    """The new model that has no vector yet, and why embedding waits (none: no line)."""
    out: list[str] = []
    if (
        embedding.get("index_model")
        and not embedding.get("fingerprint")
        and embedding["index_model"] != embedding["model"]
    ):
        builder = "the daemon builds them" if daemon else "`askvault index` builds them"
        out.append(
            f"embedding    the index's vectors are of {embedding['index_model']}; "
            f"{embedding['model']} has none yet ({builder})"
        )
    if embedding.get("waiting"):
        out.append(f"embedding    waiting: {embedding['waiting']}")
    return out


def _ollama_lines(ollama: dict[str, Any]) -> list[str]:
    """Where Ollama is and whether it answered; a refused host with what to do."""
    if ollama.get("refused"):
        return [f"ollama       REFUSED: {ollama['error']}", f"             {ollama['hint']}"]
    reach = (
        "not probed"
        if ollama["reachable"] is None
        else "reachable"
        if ollama["reachable"]
        else "NOT reachable"
    )
    return [
        f"ollama       {ollama['url']} ({reach}; "
        f"embed {ollama['embed_model']}, chat {ollama['chat_model']})"
    ]


def _stale_lines(stale_answers: list[dict[str, Any]]) -> list[str]:
    """One line per stale answer, marked or (edited by the user) only listed."""
    out: list[str] = []
    for item in stale_answers:
        how = (
            "marked stale"
            if item["marked"]
            else "edited by you, so not marked: check its cited pages"
        )
        out.append(f"stale        {item['path']} ({how})")
    return out


def _daemon_line(doc: dict[str, Any]) -> str:
    """The daemon's pid, or which command writes the index when no daemon runs."""
    writer = doc.get("writer")
    if doc["daemon"]:
        return f"daemon       pid {doc['daemon']}"
    if writer:
        return (
            f"daemon       not running; `askvault {writer['command'] or '?'}` "
            f"(pid {writer['pid'] or '?'}) writes the index"
        )
    return "daemon       not running"


def _skipped_lines(skipped: list[dict[str, Any]]) -> list[str]:
    """The first 20 files skipped, and how many more."""
    out = [f"skipped      {item['path']}: {item['reason']}" for item in skipped[:20]]
    if len(skipped) > 20:
        out.append(f"skipped      … and {len(skipped) - 20} more (see --json)")
    return out


def _cutoff_lines(cutoff: dict[str, Any] | None) -> list[str]:
    """`cut-off      0.58 (measured for all-minilm)`, or why there is none."""
    if not cutoff:
        return []
    if cutoff["value"] is None:
        return [f"cut-off      {cutoff['detail']}"]
    return [f"cut-off      {cutoff['value']:g} ({cutoff['detail']})"]


def _config_lines(config: dict[str, Any] | None) -> list[str]:
    """`config       <file> (read by default)`, then one line per setting not at its
    default, with where it comes from."""
    if config is None:
        return []
    if config["file"] is None:
        out = [
            f"config       none ({config['user_file']} is read when it exists; "
            "`askvault config-example --write` writes it)"
        ]
    else:
        why = {
            "--config": "given with --config",
            "ASKVAULT_CONFIG": "named by ASKVAULT_CONFIG",
            "default": "read by default",
        }[config["chosen_by"]]
        out = [f"config       {config['file']} ({why})"]
    for item in config["settings"]:
        source = "file" if item["source"] == "file" else f"{item['source']} {item['via']}"
        out.append(f"             {item['key']} = {item['value']}  ({source})")
    return out


def _follow_up_lines(follow_ups: list[str]) -> list[str]:
    """The answer notes with a follow-up to answer (none: no line)."""
    if not follow_ups:
        return []
    return [f"follow-ups   {len(follow_ups)} to answer: {', '.join(follow_ups)}"]


def _question_lines(questions: dict[str, list[str]]) -> list[str]:
    counts = {state: len(paths) for state, paths in questions.items()}
    to_answer = counts["new"] + counts["answering"] + counts["waiting"]
    detail = ", ".join(
        f"{counts[s]} {label}"
        for s, label in (
            ("new", "new"),
            ("answering", "being answered"),
            ("waiting", "waiting for Ollama"),
        )
        if counts[s]
    )
    parts = [f"{to_answer} to answer" + (f" ({detail})" if detail else "")]
    if counts["filing"]:
        parts.append(f"{counts['filing']} answered, being archived")
    parts.append(f"{counts['draft']} draft{'' if counts['draft'] == 1 else 's'}")
    parts.append(f"{counts['failed']} failed")
    if counts.get("empty"):
        parts.append(f"{counts['empty']} with no question text yet")
    out = [f"questions    {', '.join(parts)}"]
    out.extend(
        f"failed       {path} (its answer note says why; edit the question to retry)"
        for path in questions["failed"]
    )
    return out


def doctor_json(checks: list[Check]) -> list[dict[str, Any]]:
    """`askvault doctor --json`: one object per check."""
    return [{"check": c.name, "ok": c.ok, "detail": c.detail, "hint": c.hint} for c in checks]


def doctor_lines(checks: list[Check]) -> list[str]:
    """`askvault doctor` as text: ok/FAIL per check, the hint under a failure."""
    out: list[str] = []
    for c in checks:
        out.append(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
        if not c.ok and c.hint:
            out.append(f"     hint: {c.hint}")
    return out


# -- search and context ----------------------------------------------------------------------


def warn_degraded(reason: str | None) -> None:
    """On stderr, when a search fell back to words only."""
    if reason:
        click.echo(f"askvault: warning: words only, {reason}", err=True)


def evidence_lines(text: str) -> list[str]:
    """The evidence itself, quoted under its citation (blank lines kept as bare `>`)."""
    return [f"          > {line}".rstrip() for line in text.rstrip("\n").splitlines()]


def period_lines(doc: dict[str, Any]) -> list[str]:
    """The period a search or a pack was narrowed to, on one line ([] when none)."""
    period = doc.get("period")
    if not period:
        return []
    since, until = period["since"], period["until"]
    days = (
        (since if since == until else f"{since} to {until}")
        if since and until
        else f"since {since}"
        if since
        else f"until {until}"
    )
    notes = period["notes"]
    return [f"period: “{period['words']}” = {days} ({notes} note{'' if notes == 1 else 's'})"]


def search_lines(doc: dict[str, Any], explain: bool) -> list[str]:
    """`askvault search` as text: the period (if any), then score, link, place and snippet
    per hit."""
    out = period_lines(doc)
    share, weight = doc.get("vector_share"), doc.get("vector_weight")
    if explain and share is not None and weight is not None and share < 1:
        out.append(
            f"vectors for {share * 100:.1f}% of the chunks so far: the vector channel at "
            f"{weight:.2f} of its weight"
        )
    for hit in doc["hits"]:
        out.append(
            f"{hit['score']:.4f}  {hit['wikilink']}  {hit['file']}:{hit['lines'][0]}-"
            f"{hit['lines'][1]}"
        )
        out.append(f"        {hit['snippet']}")
        if explain:
            for channel, info in hit["explain"].items():
                scaled = f" scaled={info['scaled']}" if "scaled" in info else ""
                out.append(
                    f"        {channel:<13} raw={info.get('raw')} rank={info.get('rank')}"
                    f"{scaled} points={info.get('points')}"
                )
    if not doc["hits"]:
        out.append("no hits")
    return out


def context_lines(doc: dict[str, Any]) -> list[str]:
    """`askvault context` as text up to its warnings: the budget, pages, neighbours, sources."""
    out = [f"{doc['used_tokens']}/{doc['budget_tokens']} tokens"]
    for page in doc["pages"]:
        flag = "" if page["fresh"] else "  (not fresh)"
        out.append(f"{page['score']:.4f}  {page['wikilink']}{flag}")
        for chunk in page["chunks"]:
            lines = chunk["lines"]
            out.append(f"        {chunk['citation']}  lines {lines[0]}-{lines[1]}")
            out.extend(evidence_lines(chunk["text"]))
    for n in doc["neighbours"]:
        out.append(f"  near  {n['wikilink']}  ({n['why']})")
    for w in doc["sources"]:
        out.append(f"  source {w['file']}:{w['lines'][0]}-{w['lines'][1]}")
        out.extend(evidence_lines(w["text"]))
    return out


def show_context(doc: dict[str, Any]) -> None:
    """The whole `askvault context` text: the pack, its warnings on stderr, the next steps."""
    echo_lines(period_lines(doc))
    echo_lines(context_lines(doc))
    for line in doc["warnings"]:
        click.echo(f"warning: {line}", err=True)
    echo_lines(f"next: {action}" for action in doc["actions"])


# -- ask -------------------------------------------------------------------------------------


def echo_token(piece: str) -> None:
    """One streamed piece of the model's reply, shown as it comes, without its control
    characters (a reply must not drive the terminal: clear it, retitle it, rewrite lines)."""
    sys.stdout.write(strip_controls(piece))
    sys.stdout.flush()


def show_answer(outcome: AskOutcome) -> None:
    """What `askvault ask` prints after the streamed reply: the answer as published when
    checking changed it, the citation report, passages, warnings, where it was saved."""
    from askvault.core.answer_note import render_citation_report, render_quote_notes

    result = outcome.result
    click.echo("")
    if result.note.period:
        click.echo("\nPeriod: " + result.note.period)
    if result.status == "no-answer" and result.reason and not result.reply:
        click.echo("\n" + strip_controls(result.reason))
    if result.status in ("answered", "no-answer"):
        if result.answer != result.reply:
            # Excerpt numbers became links, links that back nothing went, unsupported
            # sentences got a marker, quotes a footnote: show what the note says.
            click.echo("\nAs checked and published:\n" + strip_controls(result.answer))
        if result.status == "answered" and result.report is not None:
            quotes = render_quote_notes(result.report, result.answer)
            if quotes:
                click.echo("\n" + strip_controls(quotes))
        click.echo("\n" + strip_controls(render_citation_report(result.report)))
    if result.status == "waiting" and result.note.passages:
        click.echo("\nBest passages found (extractive, not an answer):")
        for passage in result.note.passages:
            click.echo(
                f"- {passage.wikilink}" + (f" — {passage.heading}" if passage.heading else "")
            )
            click.echo("  > " + " ".join(strip_controls(passage.text).split())[:200])
    for warning in result.warnings:
        click.echo(f"warning: {strip_controls(warning)}", err=True)
    if outcome.saved:
        click.echo(f"\nSaved: {outcome.saved}")
    if outcome.logged:
        click.echo(f"Logged: {outcome.logged}")


# -- service ---------------------------------------------------------------------------------


def service_install_lines(
    target: ServiceFile, report: ServiceReport, *, started: bool
) -> list[str]:
    """`askvault service install`: the file written, how it was (or is to be) started, logs."""
    out = [f"{'wrote' if report.changed else 'unchanged'} {target.path}"]
    if report.backup is not None:
        out.append(f"kept the file it replaced as {report.backup}")
    if not started:
        out.extend(f"start it with: {line}" for line in _start_commands(target))
    else:
        out.append(f"enabled and started {target.handle}" + _state_text(report))
    if target.platform == "linux":
        out.append(f"logs: journalctl --user -u {target.handle} -f")
    return out


def service_uninstall_lines(target: ServiceFile, report: ServiceReport) -> list[str]:
    """`askvault service uninstall`: what was removed (and kept), or that nothing was there."""
    if not report.changed:
        return [f"no service file at {target.path}: nothing to remove"]
    out = [f"removed {target.path}"]
    if report.backup is not None:
        out.append(f"it held edits: kept as {report.backup}")
    if report.note:
        out.append(report.note)
    return out


def service_status_lines(target: ServiceFile, report: ServiceReport) -> list[str]:
    """`askvault service status` as text: installed or not, up to date, its state."""
    if not report.exists:
        return [f"not installed ({target.path}); `askvault service install` installs it"]
    # Never advise what would replace edits: only a file as askvault wrote it is replaced.
    fresh = (
        "up to date"
        if report.up_to_date
        else "differs from what install writes now: run `askvault service install`"
        if report.found == "as_written"
        else "edited since askvault wrote it: `askvault service install` leaves it as it is"
        if report.found == "edited"
        else "written by an older askvault, perhaps edited since: `askvault service install` "
        "leaves it as it is"
        if report.found == "unknown"
        else "not written by askvault"
    )
    out = [f"installed    {target.path} ({fresh})"]
    if report.state is not None:
        out.append(f"service      {target.handle}{_state_text(report)}")
    return out


def _state_text(report: ServiceReport) -> str:
    state = report.state
    if state is None:
        return ""
    return f" ({state.enabled or 'unknown'}, {state.active or 'unknown'})"


def _start_commands(target: ServiceFile) -> list[str]:
    if target.platform == "linux":
        return ["systemctl --user daemon-reload", f"systemctl --user enable --now {target.handle}"]
    return [f"launchctl bootstrap gui/$(id -u) '{target.path}'"]
