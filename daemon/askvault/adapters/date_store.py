"""The notes' days in the index (migration m038_note_dates): kept up to date and counted.

Each note row holds its day (`note_date`, ISO), where the day came from (`date_source`)
and `date_key`, what it was computed from: the dating rules, the path and the mtime. After
every write the indexer calls `date_notes`, which dates again only the rows whose key
differs (one SQL comparison per note, then core/note_dates.py for those), so a rename, a
touched file, a changed property or new Daily notes settings are all followed without a
second code path. Search filters on `note_date` (search_store), an index, not a scan.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from askvault.adapters.db import Connection
from askvault.core.note_dates import DATE_SOURCES, DatingRules, note_day

BATCH_ROWS = 5_000


def date_notes(conn: Connection, rules: DatingRules, paths: Sequence[str] | None = None) -> int:
    """Date every note whose day is missing or was computed from other inputs (rules,
    path, mtime; new bytes, which may hold another date property, clear the key:
    store.upsert_note); return how many were dated. Call inside a write transaction."""
    rules_key = rules.key()
    dated = 0
    while True:
        rows = conn.execute(
            "SELECT id, path, frontmatter, mtime_ns FROM notes "
            "WHERE date_key IS NOT (? || '|' || mtime_ns || '|' || path) LIMIT ?",
            (rules_key, BATCH_ROWS),
        ).fetchall()
        if not rows:
            return dated
        updates = []
        for note_id, path, frontmatter, mtime_ns in rows:
            day, source = note_day(path, _frontmatter(frontmatter), int(mtime_ns), rules)
            updates.append((day.isoformat(), source, f"{rules_key}|{mtime_ns}|{path}", note_id))
        conn.executemany(
            "UPDATE notes SET note_date = ?, date_source = ?, date_key = ? WHERE id = ?",
            updates,
        )
        dated += len(rows)


def date_sources(conn: Connection) -> dict[str, int]:
    """How many notes (not derived) took their day from each source; `undated` for notes
    not dated yet."""
    counts: dict[str, int] = {source: 0 for source in DATE_SOURCES}
    counts["undated"] = 0
    for source, count in conn.execute(
        "SELECT coalesce(date_source, 'undated'), count(*) FROM notes WHERE derived = 0 GROUP BY 1"
    ):
        counts[str(source)] = int(count)
    return counts


def notes_in_period(
    conn: Connection, since: str | None, until: str | None, *, include_derived: bool = False
) -> int:
    """How many notes have a day in [since, until] (ISO days, None: open)."""
    where, params = period_condition(since, until)
    if not include_derived:
        where += " AND n.derived = 0"
    return int(conn.execute(f"SELECT count(*) FROM notes n WHERE {where}", params).fetchone()[0])


def period_condition(since: str | None, until: str | None) -> tuple[str, list[Any]]:
    """The SQL condition on `n` (notes) of a period, and its parameters."""
    where = ["n.note_date IS NOT NULL"]
    params: list[Any] = []
    if since:
        where.append("n.note_date >= ?")
        params.append(since)
    if until:
        where.append("n.note_date <= ?")
        params.append(until)
    return " AND ".join(where), params


def _frontmatter(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
