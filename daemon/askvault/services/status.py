"""`askvault status`: what the index holds and what is waiting, as one dict (DESIGN §6).

Only the state of the current settings is reported: a reason why embeddings waited, saved
by an earlier command with another Ollama host or model, is not shown as current.
Questions are counted by state (to be answered, drafts, failed until edited) and stale
answers are listed, marked or not.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, get_args

from askvault.adapters import answer_store, meta, store
from askvault.adapters.db import Connection, connect
from askvault.adapters.lockfile import LockHolder, read_lock_holder, vault_lock_path
from askvault.adapters.ollama_http import probe_ollama
from askvault.core.notes import parse_note
from askvault.errors import AskvaultError
from askvault.records import InboxState
from askvault.services import vault_presence
from askvault.services.embedding import embed_waiting_reason, embedding_target
from askvault.services.question_options import is_draft
from askvault.settings import Settings

# The states a question note in the inbox can be in, as `status` reports them.
QUESTION_STATES: tuple[InboxState, ...] = get_args(InboxState)
# Largest question note read to tell a draft (its frontmatter) from a question.
_DRAFT_PEEK_BYTES = 64 * 1024


def lock_holder(settings: Settings) -> LockHolder | None:
    """The process holding the vault's single-writer lock (`run` or `index`), if any."""
    try:
        return read_lock_holder(vault_lock_path(settings.vault_path))
    except AskvaultError:
        return None


def collect_status(settings: Settings, *, probe: bool = True) -> dict[str, Any]:
    """The status document; works while the daemon runs (WAL readers never block it)."""
    db_path = settings.db_path
    doc: dict[str, Any] = {
        "vault": str(settings.vault_path),
        "index": str(db_path),
        "notes": 0,
        "chunks": 0,
        "embedded_chunks": 0,
        "pending_embeddings": 0,
        "skipped": [],
        "embed_failures": [],
        "last_change_indexed_at": None,
        "embedding": {
            "model": settings.ollama.embed_model,
            "fingerprint": None,
            "index_model": None,
            "building": None,
            "waiting": None,
        },
        "stale_answers": [],
    }
    rows: dict[str, answer_store.QuestionRow] = {}
    if db_path.exists():
        conn = connect(db_path)
        try:
            _index_state(conn, settings, doc)
            rows = answer_store.all_questions(conn)
            doc["stale_answers"] = _stale_answers(conn, settings)
            doc["vault_unavailable"] = vault_presence.refusal_of(conn)
        finally:
            conn.close()
    ollama: dict[str, Any] = {
        "url": settings.ollama.host,
        "reachable": None,
        "refused": None,
        "embed_model": settings.ollama.embed_model,
        "chat_model": settings.ollama.chat_model,
    }
    if probe:
        status = probe_ollama(
            settings.ollama.host,
            timeout_s=min(settings.ollama.timeout_s, 3.0),
            allow_remote=settings.ollama.allow_remote_ollama,
        )
        ollama["url"] = status.url
        ollama["reachable"] = status.reachable
        ollama["refused"] = status.refused
        if status.error:
            ollama["error"] = status.error
            ollama["hint"] = status.hint
    doc["ollama"] = ollama
    questions = inbox_questions(settings, rows)
    doc["questions"] = {state: [q for q, s in questions if s == state] for state in QUESTION_STATES}
    doc["queue"] = sum(len(doc["questions"][s]) for s in ("new", "answering", "waiting"))
    holder = lock_holder(settings)
    doc["daemon"] = holder.pid if holder and holder.command == "run" else None
    doc["writer"] = {"pid": holder.pid, "command": holder.command} if holder else None
    return doc


def _index_state(conn: Connection, settings: Settings, doc: dict[str, Any]) -> None:
    """Counts, and the embedding state of the configured model (not of another one)."""
    doc.update(store.counts(conn))
    active = store.active_fingerprint(conn)
    live = store.live_fingerprints(conn)
    building = next((fp for fp in live if fp.state == "building"), None)
    wanted = settings.ollama.embed_model
    current = next((fp for fp in live if _same_model(fp.fingerprint.model, wanted)), None)
    # Pending for the configured model: all chunks when it has no vectors at all yet.
    doc["pending_embeddings"] = store.count_pending(conn, current)
    doc["embedded_chunks"] = doc["chunks"] - (
        store.count_pending(conn, active) if active else doc["chunks"]
    )
    doc["skipped"] = [{"path": s.path, "reason": s.reason} for s in store.list_skipped(conn)]
    target = building or current
    doc["embed_failures"] = store.list_embed_failures(conn, target) if target else []
    doc["last_change_indexed_at"] = meta.last_change_indexed_at(conn)
    doc["embedding"] = {
        "model": wanted,
        "fingerprint": current.fingerprint.key if current else None,
        "index_model": active.fingerprint.model if active else None,
        "building": building.fingerprint.key if building else None,
        "waiting": embed_waiting_reason(conn, embedding_target(settings.ollama.host, wanted)),
    }


def _same_model(a: str, b: str) -> bool:
    """`nomic-embed-text` is `nomic-embed-text:latest`."""
    return a.removesuffix(":latest") == b.removesuffix(":latest")


def _stale_answers(conn: Connection, settings: Settings) -> list[dict[str, Any]]:
    """Answers whose cited pages changed: those marked `status: stale` in their note, and
    those the user had edited, which askvault does not rewrite (so only listed here)."""
    root = settings.vault_path
    found: dict[str, dict[str, Any]] = {}
    for row in answer_store.answers_with_status(conn, "stale"):
        if (root / row.path).is_file():
            found[row.path] = {"path": row.path, "marked": True}
    edited = meta.stale_answers_edited(conn)
    for path in edited:
        if path not in found and (root / path).is_file():
            found[path] = {"path": path, "marked": False}
    return [found[p] for p in sorted(found)]


def inbox_questions(
    settings: Settings, rows: dict[str, answer_store.QuestionRow]
) -> list[tuple[str, InboxState]]:
    """(vault-relative path, state) of every question note in the inbox, by name.

    new: not taken yet (settling, or edited after it failed); answering; waiting (for
    Ollama, retried by the daemon); filing (answered, being archived and logged); draft
    (`draft: true`, left alone); failed (the answer note says why; waits for an edit).
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
        rel = f"{folder}/{name}"
        data = _peek(inbox / name)
        out.append((rel, _question_state(rel, data, rows.get(rel))))
    return out


def _question_state(
    rel: str, data: bytes | None, row: answer_store.QuestionRow | None
) -> InboxState:
    text = (data or b"").decode("utf-8", errors="replace")
    if is_draft(parse_note(rel, text).frontmatter.get("draft")):
        return "draft"
    if row is None:
        return "new"
    if row.status in ("archiving", "logging"):
        return "filing"
    if row.status == "failed":
        # Failed on these very bytes: only an edit changes that. Other bytes are asked anew.
        same = data is not None and hashlib.sha256(data).hexdigest() == row.content_sha256
        return "failed" if same else "new"
    if row.status == "waiting":
        return "waiting"
    if row.status == "answering":
        return "answering"
    return "new"  # a state this version does not know


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
