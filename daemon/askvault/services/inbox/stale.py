"""Stale answers (DESIGN §2): an answer whose cited notes changed or vanished says so.

The indexing thread reports the notes it changed (`queue_changes`, any thread); the
inbox's next pass marks each answer citing one of them `status: stale` with a warning
callout naming the pages, or lists it in `askvault status` when the user edited the note
(askvault never rewrites a note that is not byte for byte its own).

A report is not always a change for an answer: an indexing pass commits notes in groups
and reports them at its end, so an answer that read a note committed early in the pass
has seen its current content (`remember` keeps what each answer saw); and after an index
was deleted and rebuilt, the first report of a cited note is the new index reading it
(`adopt` takes it as the baseline).
"""

from __future__ import annotations

import hashlib
import threading

from askvault.adapters import answer_store, search_store, store
from askvault.adapters.answer_store import AnswerRow
from askvault.adapters.db import Connection, write_transaction
from askvault.adapters.vault import resolve_inside
from askvault.core.answer_note import mark_stale, stale_pages_of
from askvault.core.links import page_link
from askvault.errors import AskvaultError, DiskFull, IndexBusy
from askvault.services.inbox.files import AnswerFiles


class StaleMarks:
    """Marks one vault's answers stale when the notes they cite change."""

    def __init__(self, files: AnswerFiles) -> None:
        self.files = files
        self._lock = threading.Lock()
        self._changes: list[tuple[list[str], list[str]]] = []
        # The content each answer written by this inbox saw of its cited notes.
        self._seen: dict[str, dict[str, str]] = {}
        # Adopted answers (an index rebuilt): cited notes whose content at answer time is
        # unknown until the new index reports them.
        self._baseline_unknown: dict[str, set[str]] = {}

    def queue_changes(self, changed: list[str], deleted: list[str]) -> None:
        """Indexed notes changed or vanished (any thread): answers citing them are marked
        stale by the next `apply`."""
        with self._lock:
            self._changes.append((list(changed), list(deleted)))

    def remember(self, answer_rel: str, seen: dict[str, str]) -> None:
        """`answer_rel` was written from these contents of its cited notes (path -> hash)."""
        self._seen[answer_rel] = seen

    def remember_more(self, answer_rel: str, seen: dict[str, str]) -> None:
        """A follow-up's turn in `answer_rel` was written from these contents of its cited
        notes: they join what the note's earlier turns saw."""
        self._seen.setdefault(answer_rel, {}).update(seen)

    def adopt(self, conn: Connection, rows: list[AnswerRow]) -> None:
        """Answer notes recognised again by their marker (an index deleted and rebuilt):
        what their cited notes said when they were written is unknown where the new index
        has not read those notes yet, so the first report of such a note is taken as that
        baseline, not as a change."""
        for row in rows:
            known = store.content_hashes(conn, list(row.cited))
            self._seen[row.path] = dict(known)
            unknown = set(row.cited) - set(known)
            if unknown:
                self._baseline_unknown[row.path] = unknown

    def apply(self, conn: Connection) -> None:
        """Mark answers citing changed notes stale (or list them if the user edited them).
        A busy index or a full disk (raised) keeps every batch not done for the retry
        (marking is idempotent)."""
        with self._lock:
            batches, self._changes = self._changes, []
        for i, (changed, deleted) in enumerate(batches):
            try:
                self._apply_batch(conn, set(changed) | set(deleted), set(deleted))
            except (IndexBusy, DiskFull):
                with self._lock:
                    self._changes[:0] = batches[i:]
                raise

    def _apply_batch(self, conn: Connection, paths: set[str], deleted: set[str]) -> None:
        for row in answer_store.answers_citing(conn, paths):
            pages = [p for p in row.cited if p in paths]
            seen = self._seen.get(row.path)
            unknown = self._baseline_unknown.get(row.path, set())
            first = [p for p in pages if p in unknown and p not in deleted]
            if seen is not None and first:
                seen.update(store.content_hashes(conn, first))
                unknown.difference_update(first)
                pages = [p for p in pages if p not in first]
            if seen is not None:
                now = store.content_hashes(conn, pages)
                pages = [p for p in pages if p in deleted or now.get(p) != seen.get(p)]
            if pages:
                self._seen.pop(row.path, None)
                self._baseline_unknown.pop(row.path, None)
                self._mark(conn, row, pages)

    def _mark(self, conn: Connection, row: AnswerRow, pages: list[str]) -> None:
        files = self.files
        try:
            path = resolve_inside(files.root, row.path)
            data = path.read_bytes()
        except (OSError, AskvaultError):
            with write_transaction(conn):
                answer_store.delete_answer(conn, row.path)  # moved out or deleted by the user
            return
        if not row.holds(data):
            files.list_edited_stale(conn, row.path)
            return
        text = data.decode("utf-8")
        duplicates = search_store.duplicate_basenames(conn, pages)
        names = list(
            dict.fromkeys(stale_pages_of(text) + [page_link(p, None, duplicates) for p in pages])
        )
        new = files.signed(mark_stale(text, names), row.path, text)
        marked = AnswerRow(
            row.path, row.question_path, "stale", hashlib.sha256(new).hexdigest(), row.cited
        )
        if not files.rewrite_own(conn, path, new, marked):
            files.list_edited_stale(conn, row.path)  # a user's save landed meanwhile
