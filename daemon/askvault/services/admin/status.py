"""`askvault status`: what the index holds and what is waiting, as one document (DESIGN §6;
its fields: services/documents/status.py).

Only the state of the current settings is reported: a reason why embeddings waited, saved
by an earlier command with another Ollama host or model, is not shown as current.
Questions are counted by state (to be answered, drafts, notes with no question text yet,
failed until edited) and stale answers are listed, marked or not.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple, cast, get_args

from askvault.adapters import answer_store, date_store, meta, store
from askvault.adapters.activity import Activity, activity_path, read_activity
from askvault.adapters.db import Connection, connect
from askvault.adapters.lockfile import LockHolder
from askvault.adapters.lockfile import lock_holder as held_by
from askvault.adapters.ollama_http import probe_ollama
from askvault.adapters.vault import undecodable_name
from askvault.core.followup import thread_of
from askvault.core.notes import parse_note
from askvault.errors import AskvaultError
from askvault.records import InboxState, Skipped
from askvault.services.documents.status import (
    ConfigInForce,
    DistanceCutoff,
    EmbeddingState,
    EmbedFailure,
    NoteDays,
    OllamaState,
    ScanState,
    StaleAnswer,
    StatusDocument,
)
from askvault.services.inbox.question_options import question_note_state
from askvault.services.index import deletion_guard
from askvault.services.index.calibration import cutoff_for
from askvault.services.index.embedding import embed_waiting_reason, embedding_target, same_model
from askvault.settings import Settings, SettingsTrace

# The states a question note in the inbox can be in, as `status` reports them.
QUESTION_STATES: tuple[InboxState, ...] = get_args(InboxState)
# Largest question note read to tell a draft (its frontmatter) from a question.
_DRAFT_PEEK_BYTES = 64 * 1024


def lock_holder(settings: Settings) -> LockHolder | None:
    """The process holding the vault's single-writer lock (`run` or `index`), if any."""
    try:
        return held_by(settings.vault_path, settings.state_path.parent)
    except AskvaultError:
        return None


class _IndexState(NamedTuple):
    """What the index says (all zero and empty when there is no index yet). A NamedTuple:
    this private value's class is made on every `status` start-up, and a NamedTuple
    costs a sixth of a dataclass to make."""

    notes: int = 0
    chunks: int = 0
    embedded_chunks: int = 0
    pending_embeddings: int = 0
    skipped: tuple[Skipped, ...] = ()
    embed_failures: tuple[EmbedFailure, ...] = ()
    last_change_indexed_at: str | None = None
    embedding: EmbeddingState | None = None
    cutoff: DistanceCutoff | None = None
    stale_answers: tuple[StaleAnswer, ...] = ()
    vault_unavailable: str | None = None
    note_days: NoteDays = NoteDays(0, 0, 0, 0, 0)


def collect_status(
    settings: Settings, *, probe: bool = True, config: SettingsTrace | None = None
) -> StatusDocument:
    """The status document; works while the daemon runs (WAL readers never block it).
    `config` says where the settings came from (shown as they are)."""
    index = _IndexState()
    rows: dict[str, answer_store.QuestionRow] = {}
    follow_ups: tuple[str, ...] = ()
    if settings.db_path.exists():
        conn = connect(settings.db_path)
        try:
            index = _index_state(conn, settings)
            rows = answer_store.all_questions(conn)
            follow_ups = waiting_follow_ups(conn, settings)
        finally:
            conn.close()
    questions = inbox_questions(settings, rows)
    by_state = {state: tuple(q for q, s in questions if s == state) for state in QUESTION_STATES}
    holder = lock_holder(settings)
    daemon = holder.pid if holder and holder.command == "run" else None
    activity = daemon_activity(settings, daemon)
    embedding = index.embedding or EmbeddingState(
        settings.ollama.embed_model, None, None, None, None, None, None
    )
    rate = embedding_rate(activity, settings.ollama.embed_model)
    if rate is not None:
        eta = index.pending_embeddings / rate if rate > 0 else None
        embedding = replace(embedding, rate_per_s=round(rate, 1), eta_s=eta)
    return StatusDocument(
        vault=str(settings.vault_path),
        index=str(settings.db_path),
        notes=index.notes,
        chunks=index.chunks,
        embedded_chunks=index.embedded_chunks,
        pending_embeddings=index.pending_embeddings,
        skipped=index.skipped,
        note_days=index.note_days,
        embed_failures=index.embed_failures,
        last_change_indexed_at=index.last_change_indexed_at,
        embedding=embedding,
        distance_cutoff=index.cutoff or _cutoff(None, settings),
        stale_answers=index.stale_answers,
        vault_unavailable=index.vault_unavailable,
        ollama=_ollama_state(settings, probe),
        questions=by_state,
        queue=sum(len(by_state[s]) for s in ("new", "answering", "waiting")),
        follow_ups=follow_ups,
        daemon=daemon,
        writer=holder,
        scan=_scan_state(activity),
        config=ConfigInForce.of(config) if config is not None else None,
    )


# A drain's rate not updated for this long is not shown (the drain may be stuck on a slow
# batch; an old figure would promise too much).
RATE_FRESH_S = 120.0


def daemon_activity(settings: Settings, daemon_pid: int | None) -> Activity | None:
    """What the running daemon reports it is doing; None without a daemon, or when the file
    is another process's (a daemon killed before it could remove it)."""
    if daemon_pid is None:
        return None
    activity = read_activity(activity_path(settings.state_path))
    return activity if activity is not None and activity.pid == daemon_pid else None


def embedding_rate(activity: Activity | None, model: str, now: float | None = None) -> float | None:
    """Texts per second of the daemon's drain under way for `model`, if it is recent."""
    if activity is None or activity.embedding is None:
        return None
    drain = activity.embedding
    now = time.time() if now is None else now
    if drain.model != model or now - drain.updated_at > RATE_FRESH_S or drain.seconds <= 0:
        return None
    return drain.texts / drain.seconds


def _scan_state(activity: Activity | None) -> ScanState | None:
    if activity is None or activity.scan is None:
        return None
    scan = activity.scan
    return ScanState(scan.reason, scan.done, scan.total, max(0.0, time.time() - scan.started_at))


def _ollama_state(settings: Settings, probe: bool) -> OllamaState:
    """The configured host and models; reachability only when `probe`."""
    ollama = settings.ollama
    if not probe:
        return OllamaState(
            ollama.host, None, None, ollama.embed_model, ollama.chat_model, None, None
        )
    status = probe_ollama(
        ollama.host,
        timeout_s=min(ollama.timeout_s, 3.0),
        allow_remote=ollama.allow_remote_ollama,
    )
    return OllamaState(
        url=status.url,
        reachable=status.reachable,
        refused=status.refused,
        embed_model=ollama.embed_model,
        chat_model=ollama.chat_model,
        error=status.error or None,
        hint=status.hint if status.error else None,
    )


def _index_state(conn: Connection, settings: Settings) -> _IndexState:
    """Counts, and the embedding state of the configured model (not of another one)."""
    counts = store.counts(conn)
    active = store.active_fingerprint(conn)
    live = store.live_fingerprints(conn)
    building = next((fp for fp in live if fp.state == "building"), None)
    wanted = settings.ollama.embed_model
    current = next((fp for fp in live if same_model(fp.fingerprint.model, wanted)), None)
    target = building or current
    failures = store.list_embed_failures(conn, target) if target else []
    chunks = counts["chunks"]
    return _IndexState(
        notes=counts["notes"],
        chunks=chunks,
        # Pending for the configured model: all chunks when it has no vectors at all yet.
        pending_embeddings=store.count_pending(conn, current),
        embedded_chunks=chunks - (store.count_pending(conn, active) if active else chunks),
        skipped=tuple(store.list_skipped(conn)),
        embed_failures=tuple(
            EmbedFailure(str(f["file"]), str(f["reason"]), cast(int, f["attempts"]))
            for f in failures
        ),
        last_change_indexed_at=meta.last_change_indexed_at(conn),
        embedding=EmbeddingState(
            model=wanted,
            fingerprint=current.fingerprint.key if current else None,
            index_model=active.fingerprint.model if active else None,
            building=building.fingerprint.key if building else None,
            waiting=embed_waiting_reason(conn, embedding_target(settings.ollama.host, wanted)),
            rate_per_s=None,
            eta_s=None,
        ),
        cutoff=_cutoff(conn, settings),
        stale_answers=_stale_answers(conn, settings),
        vault_unavailable=deletion_guard.refusal_of(conn),
        note_days=NoteDays(**date_store.date_sources(conn)),
    )


def _cutoff(conn: Connection | None, settings: Settings) -> DistanceCutoff:
    cutoff = cutoff_for(conn, settings)
    return DistanceCutoff(cutoff.value, cutoff.source, cutoff.detail)


def _stale_answers(conn: Connection, settings: Settings) -> tuple[StaleAnswer, ...]:
    """Answers whose cited pages changed: those marked `status: stale` in their note, and
    those the user had edited, which askvault does not rewrite (so only listed here)."""
    root = settings.vault_path
    found: dict[str, StaleAnswer] = {}
    for row in answer_store.answers_with_status(conn, "stale"):
        if (root / row.path).is_file():
            found[row.path] = StaleAnswer(row.path, marked=True)
    edited = meta.stale_answers_edited(conn)
    for path in edited:
        if path not in found and (root / path).is_file():
            found[path] = StaleAnswer(path, marked=False)
    return tuple(found[p] for p in sorted(found))


def inbox_questions(
    settings: Settings, rows: dict[str, answer_store.QuestionRow]
) -> list[tuple[str, InboxState]]:
    """(vault-relative path, state) of every question note in the inbox, by name.

    new: not taken yet (settling, or edited after it failed); answering; waiting (for
    Ollama, retried by the daemon); filing (answered, being archived and logged); draft
    (`draft: true`, left alone); empty (no question text yet: a new note, or properties
    alone, left alone as the inbox leaves it); failed (the answer note says why; waits for
    an edit). A name that is not valid UTF-8 is shown, and its rows found, with U+FFFD in
    place of its bad bytes, as the inbox holds it.
    """
    folder = f"{settings.queries.folder}/{settings.queries.inbox}".strip("/")
    inbox = settings.vault_path / folder
    try:
        names = sorted(
            p.name
            for p in inbox.iterdir()
            if p.suffix.lower() == ".md"
            and not p.name.startswith(".")
            and p.is_file()
            and not p.is_symlink()
        )
    except OSError:
        return []
    out = []
    for name in names:
        bad = undecodable_name(f"{folder}/{name}")
        rel = bad.path if bad else f"{folder}/{name}"
        data = _peek(inbox / name)
        out.append((rel, _question_state(rel, data, rows.get(rel))))
    return out


def _question_state(
    rel: str, data: bytes | None, row: answer_store.QuestionRow | None
) -> InboxState:
    kind = question_note_state(parse_note(rel, (data or b"").decode("utf-8", errors="replace")))
    if kind == "draft":
        return "draft"
    if row is not None and row.status in ("archiving", "logging"):
        return "filing"
    if data is not None and kind == "empty":
        return "empty"  # the inbox leaves it alone until it has text
    if row is None:
        return "new"
    if row.status == "failed":
        # Failed on these very bytes: only an edit changes that. Other bytes are asked anew.
        same = data is not None and hashlib.sha256(data).hexdigest() == row.content_sha256
        return "failed" if same else "new"
    if row.status == "waiting":
        return "waiting"
    if row.status == "answering":
        return "answering"
    return "new"  # a state this version does not know


def waiting_follow_ups(conn: Connection, settings: Settings) -> tuple[str, ...]:
    """The answer notes askvault wrote that hold a follow-up it will answer, by path."""
    folder = f"{settings.queries.folder}/{settings.queries.answers}"
    try:
        names = sorted(
            p.name for p in (settings.vault_path / folder).iterdir() if p.suffix.lower() == ".md"
        )
    except OSError:
        return ()
    out = []
    for name in names:
        rel = f"{folder}/{name}"
        if answer_store.get_answer(conn, rel) is None:
            continue
        try:
            data = (settings.vault_path / rel).read_bytes()
        except OSError:
            continue
        if thread_of(rel, data.decode("utf-8", errors="replace")) is not None:
            out.append(rel)
    return tuple(out)


def _peek(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > _DRAFT_PEEK_BYTES:
                return None
            return handle.read()
    except OSError:
        return None


def count_questions_waiting(settings: Settings) -> int:
    """Questions askvault will answer without the user's help (new, answering, waiting)."""
    states = [state for _, state in inbox_questions(settings, {})]
    return sum(1 for s in states if s in ("new", "answering", "waiting"))
