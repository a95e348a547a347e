"""`askvault status`: what the index holds and what is waiting, as one dict (DESIGN §6)."""

from __future__ import annotations

import json
from typing import Any

from askvault.adapters import store
from askvault.adapters.db import connect
from askvault.adapters.lockfile import LockHolder, read_lock_holder, vault_lock_path
from askvault.adapters.ollama_http import probe_ollama
from askvault.errors import AskvaultError
from askvault.services import vault_presence
from askvault.settings import Settings


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
        "embedding": {"model": None, "state": None, "waiting": None, "building": None},
    }
    if db_path.exists():
        conn = connect(db_path)
        try:
            doc.update(store.counts(conn))
            active = store.active_fingerprint(conn)
            pending = store.count_pending(conn, active)
            doc["embedded_chunks"] = doc["chunks"] - pending
            building = next(
                (fp for fp in store.live_fingerprints(conn) if fp.state == "building"), None
            )
            doc["pending_embeddings"] = (
                store.count_pending(conn, building) if building else pending
            )
            doc["skipped"] = [{"path": s.path, "reason": s.reason}
                              for s in store.list_skipped(conn)]
            target = building or active
            doc["embed_failures"] = store.list_embed_failures(conn, target) if target else []
            doc["last_change_indexed_at"] = store.get_meta(conn, "last_change_indexed_at")
            doc["embedding"] = {
                "model": active.fingerprint.model if active else None,
                "fingerprint": active.fingerprint.key if active else None,
                "building": building.fingerprint.key if building else None,
                "waiting": store.get_meta(conn, "embed_waiting_reason") or None,
            }
            doc["stale_answers"] = json.loads(store.get_meta(conn, "stale_answers_edited") or "[]")
            doc["vault_unavailable"] = vault_presence.refusal_of(conn)
        finally:
            conn.close()
    ollama: dict[str, Any] = {
        "url": settings.ollama.host,
        "reachable": None,
        "embed_model": settings.ollama.embed_model,
        "chat_model": settings.ollama.chat_model,
    }
    if probe:
        status = probe_ollama(
            settings.ollama.host, timeout_s=min(settings.ollama.timeout_s, 3.0),
            allow_remote=settings.ollama.allow_remote_ollama,
        )
        ollama["url"] = status.url
        ollama["reachable"] = status.reachable
        if status.error:
            ollama["error"] = status.error
    doc["ollama"] = ollama
    doc["queue"] = count_questions_waiting(settings)
    holder = lock_holder(settings)
    doc["daemon"] = holder.pid if holder and holder.command == "run" else None
    doc["writer"] = ({"pid": holder.pid, "command": holder.command} if holder else None)
    return doc


def count_questions_waiting(settings: Settings) -> int:
    """Question notes in the inbox (drafts included: they wait for the user)."""
    inbox = settings.vault_path / settings.queries.folder / settings.queries.inbox
    try:
        return sum(
            1 for p in inbox.iterdir()
            if p.suffix.lower() == ".md" and p.is_file() and not p.name.startswith(".")
        )
    except OSError:
        return 0
