"""Resolved links: each wikilink's target note, found at index time and kept right.

`links.target_id` is the id of the note a link resolves to under Obsidian's ladder (exact
path, file name, alias; ties to the shortest path: core/links.py), or NULL when it resolves
to nothing (yet). Whether a link resolves, and to which note, depends on the other notes'
names, so `note_names` files each note under the keys it can be linked by
(`links.name_keys`) and `links.target_name` keeps the last segment of each link's target.
When a note appears, is renamed or moved, changes its aliases or goes away, only the links
whose `target_name` is the last segment of one of its old or new keys are resolved again,
over the few notes filed under keys those links can match (migration m037_link_targets).
A question's backlinks are then one indexed query, not a resolution of the whole vault.

Callers (adapters/store.py) run these inside their write transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from askvault.adapters.db import Connection
from askvault.core.links import (
    LinkIndex,
    build_link_index,
    key_segment,
    name_keys,
    resolve_link,
    target_keys,
)
from askvault.records import Link


def link_rows(
    conn: Connection, note_id: int, source: str, links: Sequence[Link]
) -> list[tuple[Any, ...]]:
    """The `links` rows of a note's links, each with its resolved target; the note itself
    must already be filed under its names (`file_note_names`), so a link to itself resolves."""
    keys = {lk.target: target_keys(lk.target) for lk in links if lk.target}
    index, ids = _index_over(conn, {key for pair in keys.values() for key in pair})
    rows = []
    for lk in links:
        segment, resolved = "", None
        if lk.target:
            segment = keys[lk.target][0]
            path = resolve_link(lk.target, index, source) if index.by_path else None
            resolved = ids.get(path) if path is not None else None
        rows.append(
            (note_id, lk.target, lk.heading, lk.block, int(lk.embed), lk.line, segment, resolved)
        )
    return rows


INSERT_LINK = (
    "INSERT INTO links(note_id, target, heading, block, embed, line, target_name,"
    " target_id) VALUES (?,?,?,?,?,?,?,?)"
)


def file_note_names(
    conn: Connection,
    note_id: int,
    path: str,
    aliases: Sequence[str],
    was: tuple[str, Sequence[str]] | None = None,
) -> None:
    """File the note under the keys it can be linked by; when they or its path changed,
    resolve again the links they can affect. `was` is the note's (path, aliases) before
    this change, None for a new note: a note's keys follow from those two alone, so the
    old ones are computed, not looked up (`note_names` has no index by note)."""
    new = name_keys(path, aliases)
    old = name_keys(*was) if was is not None else set()
    old_path = was[0] if was is not None else None
    moved = old_path is not None and old_path != path
    if new == old and not moved:
        return
    conn.executemany(
        "DELETE FROM note_names WHERE key = ? AND note_id = ?",
        [(key, note_id) for key in sorted(old - new)],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO note_names(key, note_id) VALUES (?, ?)",
        [(key, note_id) for key in sorted(new - old)],
    )
    resolve_links_named(conn, old | new, former_target=note_id if moved else None)
    if moved:
        # Its own `./` and `../` links are relative to where it is now.
        resolve_links_of(conn, note_id)


def forget_note_names(conn: Connection, note_id: int, path: str, aliases: Sequence[str]) -> None:
    """Before a note's row goes: drop its keys and its links, then resolve again the links
    that named it (they now resolve to another note with that name, or to nothing)."""
    old = name_keys(path, aliases)
    conn.executemany(
        "DELETE FROM note_names WHERE key = ? AND note_id = ?",
        [(key, note_id) for key in sorted(old)],
    )
    conn.execute("DELETE FROM links WHERE note_id = ?", (note_id,))
    resolve_links_named(conn, old, former_target=note_id)


def resolve_links_named(
    conn: Connection, keys: Iterable[str], *, former_target: int | None = None
) -> None:
    """Resolve again every link whose target ends in the last segment of one of `keys`
    (and every link that resolved to the note `former_target`, an id)."""
    segments = sorted({key_segment(k) for k in keys} - {""})
    rows = (
        conn.execute(
            "SELECT l.rowid, l.target, n.path, l.target_id FROM links l "
            f"JOIN notes n ON n.id = l.note_id WHERE l.target_name IN ({_marks(segments)})",
            segments,
        ).fetchall()
        if segments
        else []
    )
    if former_target is not None:
        rows += conn.execute(
            "SELECT l.rowid, l.target, n.path, l.target_id FROM links l "
            "JOIN notes n ON n.id = l.note_id WHERE l.target_id = ?",
            (former_target,),
        ).fetchall()
    _update_targets(conn, rows)


def resolve_links_of(conn: Connection, note_id: int) -> None:
    """Resolve again the links written in one note."""
    rows = conn.execute(
        "SELECT l.rowid, l.target, n.path, l.target_id FROM links l "
        "JOIN notes n ON n.id = l.note_id WHERE l.note_id = ? AND l.target != ''",
        (note_id,),
    ).fetchall()
    _update_targets(conn, rows)


def _update_targets(conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    if not rows:
        return
    index, ids = _index_over(conn, _keys_of(r[1] for r in rows))
    changed = []
    for rowid, target, source, current in dict.fromkeys(tuple(r) for r in rows):
        path = resolve_link(target, index, source) if target else None
        resolved = ids.get(path) if path is not None else None
        if resolved != current:
            changed.append((resolved, rowid))
    conn.executemany("UPDATE links SET target_id = ? WHERE rowid = ?", changed)


def candidate_index(conn: Connection, targets: Iterable[str]) -> LinkIndex:
    """The resolution tables over the notes these targets can resolve to (those filed
    under one of their `target_keys`): for these targets, the same answers as the tables
    over the whole vault."""
    return _index_over(conn, _keys_of(targets))[0]


def resolve_targets(conn: Connection, targets: Sequence[str]) -> dict[str, str]:
    """Each of `targets` (link targets as written) that resolves, mapped to its vault path,
    in the order given: one lookup over the notes they can name."""
    wanted = [t for t in dict.fromkeys(targets) if t]
    if not wanted:
        return {}
    index = candidate_index(conn, wanted)
    return {t: path for t in wanted if (path := resolve_link(t, index)) is not None}


def _keys_of(targets: Iterable[str]) -> set[str]:
    return {key for target in targets for key in target_keys(target)}


def _index_over(conn: Connection, keys: set[str]) -> tuple[LinkIndex, dict[str, int]]:
    """The resolution tables over the notes filed under one of `keys`, and those notes'
    ids by path."""
    wanted = sorted(keys - {""})
    if not wanted:
        return LinkIndex(), {}
    rows = conn.execute(
        "SELECT DISTINCT n.id, n.path, n.aliases FROM note_names k "
        f"JOIN notes n ON n.id = k.note_id WHERE k.key IN ({_marks(wanted)})",
        wanted,
    ).fetchall()
    if not rows:
        return LinkIndex(), {}
    index = build_link_index((path, json.loads(aliases or "[]")) for _, path, aliases in rows)
    return index, {path: note_id for note_id, path, _ in rows}


def _marks(values: Sequence[object]) -> str:
    # A note's names and link targets are few: far under SQLite's 32,766 parameters.
    return ",".join("?" * len(values))
