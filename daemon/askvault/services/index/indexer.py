"""The indexer: brings the index in line with the vault.

Stat first, hash on mismatch: a file whose size, mtime and inode match the index
is not read at all; a file whose bytes hash the same as before only gets new
stamps. Each changed note is one transaction, so a crash loses at most the note
being written, and the next reconcile redoes it. When the chunker or its token cap
changed since the index was made, one reconcile reads every note and re-cuts it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from askvault.adapters import date_store, meta, parse_pool, store
from askvault.adapters.db import Connection, WriteBatch, write_transaction
from askvault.adapters.ignore import IgnoreRules, ignore_reason, is_note_path
from askvault.adapters.vault import (
    HARD_LINK_REASON,
    BinaryNote,
    HardLinkedNote,
    OversizedNote,
    load_ignore_rules,
    read_note,
    read_small_file,
    scan_vault,
    stat_note,
    undecodable_name,
)
from askvault.core.chunking import CHUNKER_VERSION, chunk_note
from askvault.core.note_dates import (
    DAILY_NOTES_JSON,
    DAILY_NOTES_MAX_BYTES,
    DatingRules,
    read_daily_notes_config,
)
from askvault.core.notes import parse_note
from askvault.core.timestamps import local_iso
from askvault.errors import NoteUnreadable, PathOutsideVault
from askvault.records import Chunk, FileStamp, NoteFile, ParsedNote, Skipped
from askvault.services.index import deletion_guard
from askvault.settings import Settings

log = logging.getLogger(__name__)

# vault path -> the ignore-rule problems last warned about (app.json is re-read per batch).
_warned_rule_problems: dict[str, tuple[str, ...]] = {}

Progress = Callable[[int, int], None]


@dataclass
class IndexReport:
    """What one reconcile or one batch of paths changed."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    touched: int = 0
    rechunked: int = 0
    unchanged: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    chunks_written: int = 0
    seconds: float = 0.0

    @property
    def changes(self) -> int:
        return len(self.added) + len(self.changed) + len(self.deleted)

    def counts(self) -> tuple[int, int]:
        """(added, deleted) as a person counts them: a rename is one renamed note, not also
        one added and one deleted (the lists keep both paths: the inbox needs the old one)."""
        new = {target for _, target in self.renamed}
        old = {source for source, _ in self.renamed}
        return (
            sum(1 for p in self.added if p not in new),
            sum(1 for p in self.deleted if p not in old),
        )

    def as_dict(self) -> dict[str, object]:
        added, deleted = self.counts()
        return {
            "added": added,
            "changed": len(self.changed),
            "deleted": deleted,
            "renamed": len(self.renamed),
            "touched": self.touched,
            "rechunked": self.rechunked,
            "unchanged": self.unchanged,
            "skipped": len(self.skipped),
            "chunks_written": self.chunks_written,
            "seconds": round(self.seconds, 3),
        }


def ignore_rules_for(settings: Settings) -> IgnoreRules:
    """The ignore rules of the configured vault (re-read: app.json may have changed)."""
    internal = () if settings.index.index_queries else (settings.queries.folder,)
    rules = load_ignore_rules(
        settings.vault_path,
        extra_globs=settings.index.ignore_globs,
        internal_folders=internal,
        max_note_bytes=settings.index.max_note_bytes,
    )
    # Re-read for every batch: warn when what is wrong changes, not on every batch.
    key = str(settings.vault_path)
    if rules.problems and _warned_rule_problems.get(key) != rules.problems:
        for problem in rules.problems:
            log.warning("ignore rules: %s", problem)
    _warned_rule_problems[key] = rules.problems
    return rules


def reconcile(
    conn: Connection,
    settings: Settings,
    *,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    report: IndexReport | None = None,
    allow_empty: bool = False,
) -> IndexReport:
    """Compare the whole vault with the index and apply every difference.

    `report` (filled in place, and returned) keeps what was done even when an error
    (IndexBusy, DiskFull) stops the pass half-way: the caller still learns of it.
    A vault that looks unmounted (missing, empty, another device) raises VaultUnavailable
    before anything is written (services/index/deletion_guard.py); `allow_empty` lets a
    reconcile of a vault emptied on purpose go through."""
    started = time.monotonic()
    root = settings.vault_path
    deletion_guard.root_device(root)
    rules = ignore_rules_for(settings)
    scan = scan_vault(root, rules)
    stored = store.stored_notes(conn)
    on_disk = {stamp.path for stamp in scan.notes}
    removed = {path: stored[path].content_hash for path in stored if path not in on_disk}
    device = deletion_guard.check_reconcile(
        conn,
        root,
        indexed=len(stored),
        found=len(on_disk),
        kept=len(stored) - len(removed),
        allow_empty=allow_empty,
    )
    report = report if report is not None else IndexReport()
    report.skipped.extend(scan.skipped)
    total = len(scan.notes)
    key = chunking_key(settings)
    rechunk = bool(stored) and meta.chunking(conn) != key
    if rechunk:
        log.warning(
            "chunking changed (%s): re-chunking every note once; unchanged text is "
            "not embedded again",
            key,
        )
    to_read = []
    for stamp in scan.notes:
        known = stored.get(stamp.path)
        if (
            known
            and not rechunk
            and (known.size, known.mtime_ns, known.inode)
            == (stamp.size, stamp.mtime_ns, stamp.inode)
        ):
            report.unchanged += 1
        else:
            to_read.append(stamp)
    done = report.unchanged
    if progress:
        progress(done, total)
    workers = settings.index.parse_workers
    with WriteBatch(conn) as batch, parse_pool.worker_map(len(to_read), workers) as prepare_all:
        prepared = prepare_all(
            _prepare_note,
            [
                (
                    str(root),
                    stamp.path,
                    settings.index.max_note_bytes,
                    settings.index.chunk_max_tokens,
                )
                for stamp in to_read
            ],
        )
        moves = _moves_of(removed)
        for stamp, outcome in zip(to_read, prepared, strict=False):
            if should_stop():
                break
            _apply_prepared(
                batch,
                settings,
                root,
                stamp,
                stored.get(stamp.path),
                outcome,
                report,
                rechunk=rechunk,
                moves=moves,
            )
            done += 1
            if progress:
                progress(done, total)
    if not should_stop():
        with write_transaction(conn):
            for path in sorted(removed):
                store.delete_note(conn, path)
                report.deleted.append(path)
            store.replace_skipped(conn, report.skipped, time.time())
            _note_change(conn, report)
            meta.set_chunking(conn, key)
            deletion_guard.record_present(conn, device)
        _pair_renames(conn, report, removed)
        with write_transaction(conn):
            date_store.date_notes(conn, dating_rules_for(settings))
    report.seconds = time.monotonic() - started
    return report


def dating_rules_for(settings: Settings) -> DatingRules:
    """How this vault's notes are dated: its Daily notes settings (re-read, as app.json
    is) and the configured date properties (core/note_dates.py)."""
    raw = read_small_file(settings.vault_path, DAILY_NOTES_JSON, DAILY_NOTES_MAX_BYTES)
    fmt, folder, problem = read_daily_notes_config(raw)
    key = str(settings.vault_path) + "#daily"
    if problem and _warned_rule_problems.get(key) != (problem,):
        log.warning("daily notes settings: %s", problem)
    _warned_rule_problems[key] = (problem,) if problem else ()
    return DatingRules(fmt, folder, tuple(settings.index.date_properties))


def chunking_key(settings: Settings) -> str:
    """What decides how notes are cut: the chunker's version and the token cap."""
    return f"v{CHUNKER_VERSION} max_tokens={settings.index.chunk_max_tokens}"


def index_paths(
    conn: Connection,
    settings: Settings,
    paths: Iterable[str],
    *,
    report: IndexReport | None = None,
) -> IndexReport:
    """Index (or drop) just these vault-relative paths: the watcher's entry point.
    `report` as in `reconcile`."""
    started = time.monotonic()
    root = settings.vault_path
    rules = ignore_rules_for(settings)
    report = report if report is not None else IndexReport()
    removed, to_read = _triage_paths(conn, root, rules, paths, report)
    if removed:
        deletion_guard.check_deletions(conn, root)  # an unmounted vault: every file "gone"
    workers = settings.index.parse_workers
    with WriteBatch(conn) as batch, parse_pool.worker_map(len(to_read), workers) as prepare_all:
        prepared = prepare_all(
            _prepare_note,
            [
                (
                    str(root),
                    stamp.path,
                    settings.index.max_note_bytes,
                    settings.index.chunk_max_tokens,
                )
                for stamp, _ in to_read
            ],
        )
        moves = _moves_of(removed)
        for (stamp, stored_note), outcome in zip(to_read, prepared, strict=False):
            _apply_prepared(batch, settings, root, stamp, stored_note, outcome, report, moves=moves)
    with write_transaction(conn):
        for path in sorted(removed):
            store.delete_note(conn, path)
            report.deleted.append(path)
        now = time.time()
        for item in report.skipped:
            store.record_skipped(conn, item, now)
        store.forget_skipped(conn, removed)
        _note_change(conn, report)
    _pair_renames(conn, report, removed)
    written = [stamp.path for stamp, _ in to_read] + [new for _, new in report.renamed]
    if written:
        with write_transaction(conn):
            date_store.date_notes(conn, dating_rules_for(settings), written)
    report.seconds = time.monotonic() - started
    return report


def _triage_paths(
    conn: Connection,
    root: Path,
    rules: IgnoreRules,
    paths: Iterable[str],
    report: IndexReport,
) -> tuple[dict[str, str], list[tuple[FileStamp, store.StoredNote | None]]]:
    """Sort the watcher's paths into the notes gone (path -> content hash, for rename
    pairing) and the notes to read (stamp, stored row); the unchanged are counted and the
    skipped recorded in `report`."""
    removed: dict[str, str] = {}
    to_read: list[tuple[FileStamp, store.StoredNote | None]] = []
    for path in sorted(set(paths)):
        bad_name = undecodable_name(path)
        if bad_name is not None:
            # Skipped per path, as the reconcile does: it cannot be a row, and must not
            # fail the rest of the batch.
            if is_note_path(path):
                report.skipped.append(bad_name)
            continue
        known = store.stored_note(conn, path)
        reason = ignore_reason(path, rules) if is_note_path(path) else "not a note"
        stamp = None if reason else _safe_stat(root, path)
        if stamp is None:
            if known:
                removed[path] = known.content_hash
            if reason and is_note_path(path) and not _is_quiet_reason(reason):
                report.skipped.append(Skipped(path, reason))
            continue
        if known and (known.size, known.mtime_ns, known.inode) == (
            stamp.size,
            stamp.mtime_ns,
            stamp.inode,
        ):
            report.unchanged += 1
            continue
        to_read.append((stamp, known))
    return removed, to_read


def drop_folder(
    conn: Connection,
    settings: Settings,
    folder: str,
    *,
    report: IndexReport | None = None,
) -> IndexReport:
    """A folder was deleted or moved out of the vault: drop every note below it."""
    report = report if report is not None else IndexReport()
    if undecodable_name(folder) is not None:
        return report  # nothing below a name SQLite cannot hold was ever indexed
    deletion_guard.check_deletions(conn, settings.vault_path)
    with write_transaction(conn):
        report.deleted.extend(store.delete_notes_under(conn, folder))
        _note_change(conn, report)
    return report


@dataclass(frozen=True)
class _Prepared:
    """A note read, parsed and chunked (or why not): picklable, made in a worker process."""

    file: NoteFile | None = None
    parsed: ParsedNote | None = None
    chunks: tuple[Chunk, ...] = ()
    skip_reason: str | None = None
    vanished: bool = False


def _prepare_note(root: str, path: str, max_bytes: int, max_tokens: int) -> _Prepared:
    """Read, parse and chunk one note: no database, so it can run in a worker process."""
    try:
        file = read_note(Path(root), path, max_bytes, refuse_hard_links=True)
    except BinaryNote:
        return _Prepared(skip_reason="binary file")
    except HardLinkedNote:
        return _Prepared(skip_reason=HARD_LINK_REASON)
    except OversizedNote as exc:
        return _Prepared(skip_reason=f"oversized: {exc}")
    except PathOutsideVault:
        return _Prepared(skip_reason="symlink outside vault")
    except NoteUnreadable as exc:
        if not (Path(root) / path).exists():
            return _Prepared(vanished=True)
        return _Prepared(skip_reason=f"unreadable: {exc}")
    parsed = parse_note(path, file.text)
    return _Prepared(file, parsed, tuple(chunk_note(parsed, max_tokens)))


def _moves_of(removed: dict[str, str]) -> dict[str, list[str]]:
    """Paths gone from the vault by content hash: a new path with those bytes is a move."""
    moves: dict[str, list[str]] = {}
    for path in sorted(removed):
        moves.setdefault(removed[path], []).append(path)
    return moves


def _apply_prepared(
    batch: WriteBatch,
    settings: Settings,
    root: Path,
    stamp: FileStamp,
    known: store.StoredNote | None,
    outcome: _Prepared,
    report: IndexReport,
    *,
    rechunk: bool = False,
    moves: dict[str, list[str]] | None = None,
) -> None:
    """Write one prepared note: new stamps only, skipped, vanished, or re-indexed. With
    `rechunk`, a note whose bytes did not change is written again with its new chunks
    (unchanged chunks keep their rows) but not reported as changed: its answers stay fresh.
    A new path with the bytes of a path in `moves` (gone from the vault) takes over that
    note's rows in place (a rename or move): no chunk, vector or word row is rebuilt but
    the title's; it is still reported as the old path deleted and the new one added."""
    if outcome.vanished:
        # Vanished between the scan and the read: the next event or reconcile settles it.
        if known:
            batch.write(lambda conn: store.delete_note(conn, stamp.path))
            report.deleted.append(stamp.path)
        return
    if outcome.skip_reason or outcome.file is None or outcome.parsed is None:
        _skip(batch, stamp.path, outcome.skip_reason or "unreadable", report, known)
        return
    file, parsed, chunks = outcome.file, outcome.parsed, outcome.chunks
    derived = stamp.path.startswith(settings.queries.folder.rstrip("/") + "/")
    if known and known.content_hash == file.content_hash:
        if rechunk:
            batch.write(lambda conn: store.upsert_note(conn, parsed, file, chunks, derived=derived))
            report.rechunked += 1
            return
        batch.write(
            lambda conn: store.update_stamp(
                conn, stamp.path, file.stamp.size, file.stamp.mtime_ns, file.stamp.inode
            )
        )
        report.touched += 1
        return
    olds = moves.get(file.content_hash) if moves and known is None else None
    if olds:
        old = olds.pop(0)

        def move(conn: Connection) -> None:
            store.move_note(conn, old, stamp.path)
            store.upsert_note(conn, parsed, file, chunks, derived=derived)

        batch.write(move)
        report.added.append(stamp.path)
        return
    batch.write(lambda conn: store.upsert_note(conn, parsed, file, chunks, derived=derived))
    report.chunks_written += len(chunks)
    (report.changed if known else report.added).append(stamp.path)
    if parsed.problems or file.problems:
        log.debug("%s: %s", stamp.path, "; ".join(parsed.problems + file.problems))


def _skip(
    batch: WriteBatch,
    path: str,
    reason: str,
    report: IndexReport,
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
        meta.set_last_change_indexed_at(conn, _iso(time.time()))


def _pair_renames(conn: Connection, report: IndexReport, removed: dict[str, str]) -> None:
    """Report a deleted path and an added one with the same bytes as a rename."""
    if not removed or not report.added:
        return
    by_hash: dict[str, list[str]] = {}
    for path, digest in removed.items():
        by_hash.setdefault(digest, []).append(path)
    added_hashes = store.content_hashes(conn, report.added)
    for path in report.added:
        added_hash = added_hashes.get(path)
        olds = by_hash.get(added_hash) if added_hash else None
        if olds:
            report.renamed.append((olds.pop(0), path))


def _iso(ts: float) -> str:
    """ISO 8601 to the second with the local offset (core/timestamps.py)."""
    return local_iso(ts)
