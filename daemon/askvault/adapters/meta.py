"""The `meta` table: the index's few named facts, one text value per key.

Every key is named here, each with a typed accessor, so no other module spells one.
Reads take the caller's connection; writes run inside the caller's transaction
(`db.write_transaction`), like the rest of the store.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from askvault.adapters.db import Connection
from askvault.core.abstention import Calibration

# How the indexed notes were cut: the chunker's version and its token cap
# (services/index/indexer.chunking_key); a change re-chunks every note once.
CHUNKING = "chunking"
# When the last reconcile or batch changed a note (core/timestamps.local_iso).
LAST_CHANGE_INDEXED_AT = "last_change_indexed_at"
# Answer notes whose cited pages changed but which the user had edited (a JSON list of
# vault paths): askvault does not rewrite them, `status` lists them.
STALE_ANSWERS_EDITED = "stale_answers_edited"
# The vault root's device at the last reconcile, and why the last one was refused
# (empty when it was not): services/index/deletion_guard.py.
VAULT_DEVICE = "vault_device"
VAULT_UNAVAILABLE = "vault_unavailable"
# Why embeddings wait (Ollama down, model missing), and for which host and model.
EMBED_WAITING_REASON = "embed_waiting_reason"
EMBED_WAITING_FOR = "embed_waiting_for"
# The distance cut-offs the vault calibrated (services/index/calibration.py): a JSON object, one
# entry per embedding fingerprint key, so a model switched back to keeps its own.
DISTANCE_CALIBRATIONS = "distance_calibrations"

KEYS = (
    CHUNKING,
    LAST_CHANGE_INDEXED_AT,
    STALE_ANSWERS_EDITED,
    VAULT_DEVICE,
    VAULT_UNAVAILABLE,
    EMBED_WAITING_REASON,
    EMBED_WAITING_FOR,
    DISTANCE_CALIBRATIONS,
)


def get_value(conn: Connection, key: str, default: str | None = None) -> str | None:
    """The value stored under `key`, or `default` when there is none."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def set_value(conn: Connection, key: str, value: str) -> None:
    """Store `value` under `key` (replacing what was there)."""
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def chunking(conn: Connection) -> str | None:
    """How the indexed notes were cut, or None for an index made before it was recorded."""
    return get_value(conn, CHUNKING)


def set_chunking(conn: Connection, key: str) -> None:
    set_value(conn, CHUNKING, key)


def last_change_indexed_at(conn: Connection) -> str | None:
    """When the index last took a change of a note (ISO 8601), None before the first."""
    return get_value(conn, LAST_CHANGE_INDEXED_AT)


def set_last_change_indexed_at(conn: Connection, iso: str) -> None:
    set_value(conn, LAST_CHANGE_INDEXED_AT, iso)


def stale_answers_edited(conn: Connection) -> list[str]:
    """The edited answer notes whose cited pages changed, in the order they were listed."""
    return list(json.loads(get_value(conn, STALE_ANSWERS_EDITED) or "[]"))


def set_stale_answers_edited(conn: Connection, paths: Sequence[str]) -> None:
    set_value(conn, STALE_ANSWERS_EDITED, json.dumps(list(paths)))


def vault_device(conn: Connection) -> int | None:
    """The vault root's device at the last reconcile, None before the first."""
    value = get_value(conn, VAULT_DEVICE)
    return int(value) if value and value.isdigit() else None


def set_vault_device(conn: Connection, device: int) -> None:
    set_value(conn, VAULT_DEVICE, str(device))


def vault_refusal(conn: Connection) -> str | None:
    """Why the last reconcile was refused (the vault looked unmounted), None if it was not."""
    return get_value(conn, VAULT_UNAVAILABLE) or None


def set_vault_refusal(conn: Connection, reason: str | None) -> None:
    """Record why a reconcile was refused; None clears it."""
    set_value(conn, VAULT_UNAVAILABLE, reason or "")


def embed_waiting(conn: Connection) -> tuple[str | None, str]:
    """Why embeddings wait (None if they do not) and the host and model it was saved for."""
    return (get_value(conn, EMBED_WAITING_REASON) or None, get_value(conn, EMBED_WAITING_FOR) or "")


def set_embed_waiting(conn: Connection, target: str, reason: str | None) -> None:
    """Save why embeddings for `target` wait; None clears it."""
    set_value(conn, EMBED_WAITING_REASON, reason or "")
    set_value(conn, EMBED_WAITING_FOR, target if reason else "")


def distance_calibration(conn: Connection, fingerprint: str) -> Calibration | None:
    """The cut-off calibrated for the vectors of `fingerprint` (a key), None if none is."""
    entry = _calibrations(conn).get(fingerprint)
    if not isinstance(entry, dict):
        return None
    try:
        return Calibration(
            fingerprint=fingerprint,
            cutoff=None if entry.get("cutoff") is None else float(entry["cutoff"]),
            titles=int(entry["titles"]),
            notes=int(entry["notes"]),
            chunking=str(entry["chunking"]),
        )
    except (KeyError, TypeError, ValueError):
        return None  # written by another version: calibrated again


def set_distance_calibration(conn: Connection, calibration: Calibration) -> None:
    """Store `calibration` under its fingerprint key (replacing that key's entry only)."""
    entries = _calibrations(conn)
    entry = dataclasses.asdict(calibration)
    entries[entry.pop("fingerprint")] = entry
    set_value(conn, DISTANCE_CALIBRATIONS, json.dumps(entries, sort_keys=True))


def _calibrations(conn: Connection) -> dict[str, object]:
    try:
        entries = json.loads(get_value(conn, DISTANCE_CALIBRATIONS) or "{}")
    except ValueError:
        return {}
    return entries if isinstance(entries, dict) else {}
