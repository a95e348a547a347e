"""The indexer: brings the index in line with the vault.

Stat first, hash on mismatch: a file whose size, mtime and inode match the index
is not read at all; a file whose bytes hash the same as before only gets new
stamps. Each changed note is one transaction, so a crash loses at most the note
being written, and the next reconcile redoes it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from askvault.adapters import store
from askvault.adapters.db import Connection, WriteBatch, write_transaction
from askvault.adapters.ignore import IgnoreRules, ignore_reason, is_note_path, load_ignore_rules
from askvault.adapters.vault import BinaryNote, OversizedNote, read_note, scan_vault, stat_note
from askvault.core.chunking import chunk_note
from askvault.core.notes import parse_note
from askvault.errors import NoteUnreadable, PathOutsideVault
from askvault.records import FileStamp, Skipped
from askvault.settings import Settings

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


@dataclass
class IndexReport:
    """What one reconcile or one batch of paths changed."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    touched: int = 0
    unchanged: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    chunks_written: int = 0
    seconds: float = 0.0

    @property
    def changes(self) -> int:
        return len(self.added) + len(self.changed) + len(self.deleted)

    def as_dict(self) -> dict[str, object]:
        return {
            "added": len(self.added),
            "changed": len(self.changed),
            "deleted": len(self.deleted),
            "renamed": len(self.renamed),
            "touched": self.touched,
            "unchanged": self.unchanged,
            "skipped": len(self.skipped),
            "chunks_written": self.chunks_written,
            "seconds": round(self.seconds, 3),
        }


def ignore_rules_for(settings: Settings) -> IgnoreRules:
    """The ignore rules of the configured vault (re-read: app.json may have changed)."""
    internal = () if settings.index.index_queries else (settings.queries.folder,)
    return load_ignore_rules(
        settings.vault_path,
        extra_globs=settings.index.ignore_globs,
        internal_folders=internal,
        max_note_bytes=settings.index.max_note_bytes,
    )


def reconcile(
    conn: Connection, settings: Settings, *, progress: Progress | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> IndexReport:
    """Compare the whole vault with the index and apply every difference."""
    started = time.monotonic()
    root = settings.vault_path
    rules = ignore_rules_for(settings)
    scan = scan_vault(root, rules)
    stored = store.stored_notes(conn)
    report = IndexReport(skipped=list(scan.skipped))
    on_disk = {stamp.path for stamp in scan.notes}
    removed = {path: stored[path].content_hash for path in stored if path not in on_disk}
    total = len(scan.notes)
    with WriteBatch(conn) as batch:
        for done, stamp in enumerate(scan.notes, 1):
            if should_stop():
                break
            _apply_stamp(batch, settings, root, stamp, stored.get(stamp.path), report)
            if progress:
                progress(done, total)
    if not should_stop():
        with write_transaction(conn):
            for path in sorted(removed):
                store.delete_note(conn, path)
                report.deleted.append(path)
            store.replace_skipped(conn, report.skipped, time.time())
            _note_change(conn, report)
        _pair_renames(conn, report, removed)
    report.seconds = time.monotonic() - started
    return report


def index_paths(conn: Connection, settings: Settings, paths: Iterable[str]) -> IndexReport:
    """Index (or drop) just these vault-relative paths: the watcher's entry point."""
    started = time.monotonic()
    root = settings.vault_path
    rules = ignore_rules_for(settings)
    report = IndexReport()
    removed: dict[str, str] = {}
    for path in sorted(set(paths)):
        known = conn.execute(
            "SELECT id, path, size, mtime_ns, inode, content_hash FROM notes WHERE path = ?",
            (path,),
        ).fetchone()
        reason = ignore_reason(path, rules) if is_note_path(path) else "not a note"
        stamp = None if reason else _safe_stat(root, path)
        if stamp is None:
            if known:
                removed[path] = known[5]
            if reason and is_note_path(path) and not _is_quiet_reason(reason):
                report.skipped.append(Skipped(path, reason))
            continue
        with WriteBatch(conn) as batch:
            _apply_stamp(batch, settings, root, stamp,
                         store.StoredNote(*known) if known else None, report)
    with write_transaction(conn):
        for path in sorted(removed):
            store.delete_note(conn, path)
            report.deleted.append(path)
        now = time.time()
        for item in report.skipped:
            store.record_skipped(conn, item, now)
        for path in removed:
            conn.execute("DELETE FROM skipped WHERE path = ?", (path,))
        _note_change(conn, report)
    _pair_renames(conn, report, removed)
    report.seconds = time.monotonic() - started
    return report


def drop_folder(conn: Connection, settings: Settings, folder: str) -> IndexReport:
    """A folder was deleted or moved out of the vault: drop every note below it."""
    report = IndexReport()
    with write_transaction(conn):
        report.deleted = store.delete_notes_under(conn, folder)
        _note_change(conn, report)
    return report


def _apply_stamp(
    batch: WriteBatch, settings: Settings, root: Path, stamp: FileStamp,
    known: store.StoredNote | None, report: IndexReport,
) -> None:
    """Bring one note in line: unchanged, new stamps only, skipped, or re-parsed."""
    if known and (known.size, known.mtime_ns, known.inode) == (
        stamp.size, stamp.mtime_ns, stamp.inode
    ):
        report.unchanged += 1
        return
    try:
        file = read_note(root, stamp.path, settings.index.max_note_bytes)
    except BinaryNote:
        _skip(batch, stamp.path, "binary file", report, known)
        return
    except OversizedNote as exc:
        _skip(batch, stamp.path, f"oversized: {exc}", report, known)
        return
    except PathOutsideVault:
        _skip(batch, stamp.path, "symlink outside vault", report, known)
        return
    except NoteUnreadable as exc:
        # Vanished between the scan and the read: the next event or reconcile settles it.
        if not (root / stamp.path).exists():
            if known:
                batch.write(lambda conn: store.delete_note(conn, stamp.path))
                report.deleted.append(stamp.path)
            return
        _skip(batch, stamp.path, f"unreadable: {exc}", report, known)
        return
    if known and known.content_hash == file.content_hash:
        batch.write(lambda conn: store.update_stamp(
            conn, stamp.path, file.stamp.size, file.stamp.mtime_ns, file.stamp.inode))
        report.touched += 1
        return
    parsed = parse_note(stamp.path, file.text)
    chunks = chunk_note(parsed, settings.index.chunk_max_tokens)
    derived = stamp.path.startswith(settings.queries.folder.rstrip("/") + "/")
    batch.write(lambda conn: store.upsert_note(conn, parsed, file, chunks, derived=derived))
    report.chunks_written += len(chunks)
    (report.changed if known else report.added).append(stamp.path)
    if parsed.problems or file.problems:
        log.debug("%s: %s", stamp.path, "; ".join(parsed.problems + file.problems))


def _skip(
    batch: WriteBatch, path: str, reason: str, report: IndexReport,
    known: store.StoredNote | None,
) -> None:
    report.skipped.append(Skipped(path, reason))

    def apply(conn: Connection) -> None:
        if known:
            store.delete_note(conn, path)
        store.record_skipped(conn, Skipped(path, reason), time.time())

    batch.write(apply)
    if known:
        report.deleted.append(path)


def _safe_stat(root: Path, path: str) -> FileStamp | None:
    try:
        return stat_note(root, path)
    except (PathOutsideVault, NoteUnreadable):
        return None


def _is_quiet_reason(reason: str) -> bool:
    """Reasons not worth listing file by file (internal and hidden folders)."""
    return reason.startswith(("askvault ", "hidden"))


def _note_change(conn: Connection, report: IndexReport) -> None:
    if report.changes:
        store.set_meta(conn, "last_change_indexed_at", _iso(time.time()))


def _pair_renames(conn: Connection, report: IndexReport, removed: dict[str, str]) -> None:
    """Report a deleted path and an added one with the same bytes as a rename."""
    if not removed or not report.added:
        return
    by_hash: dict[str, list[str]] = {}
    for path, digest in removed.items():
        by_hash.setdefault(digest, []).append(path)
    for path in report.added:
        row = conn.execute("SELECT content_hash FROM notes WHERE path = ?", (path,)).fetchone()
        olds = by_hash.get(row[0]) if row else None
        if olds:
            report.renamed.append((olds.pop(0), path))


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
