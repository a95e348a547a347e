"""The inbox protocol (DESIGN §2): question notes in, answer notes out, one at a time.

`Inbox` answers one settled question at a time for the daemon's inbox thread
(app/inbox_loop.py, which lists `queries/inbox/` and picks the oldest note unchanged
for `settle_s`; drafts, failed notes whose bytes did not change, and questions in
backoff are skipped, as `QuestionSchedule` says): it writes an `answering` note,
answers, then writes the final note, moves the question byte for byte to
`queries/archive/` and appends a line to `queries/log.md`. A `waiting` or
`failed` question stays in the inbox (the `inbox_questions` table remembers
its answer note), so a restart resumes it and a fixed question is re-answered.

An answered question is finished from a durable record (its row, status
`archiving` then `logging`, holds the log line): the archive move is idempotent
(an archive file that is the inbox file's own inode means the move was cut short
after the link), and a restart after a crash anywhere archives and logs it
exactly once. A question that cannot be archived (the folder refused, not a
folder, a symlink out of the vault; the inbox name cannot be removed) is never
answered again: it waits with backoff, its answer note says why, and it is
archived and logged once that becomes possible.

askvault rewrites an answer note only while its bytes are exactly what it
wrote (sha256 in the `answers` table); otherwise it writes `<name> (2).md`.
Every path comes from `resolve_inside`, and writes go only under `queries/`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from askvault.adapters import answer_store, search_store, store
from askvault.adapters.answer_store import AnswerRow, QuestionRow
from askvault.adapters.db import Connection, write_transaction
from askvault.adapters.vault import cleanup_temp_files, read_note, resolve_inside
from askvault.core.answer_note import AnswerNote, mark_stale, render_answer_note, stale_pages_of
from askvault.core.answer_parts import page_wikilink
from askvault.core.backoff import BACKOFF_FIRST_S, BACKOFF_MAX_S
from askvault.core.notes import parse_note
from askvault.errors import (
    AnswerCancelled,
    AskvaultError,
    DiskFull,
    IndexBusy,
    NoteUnreadable,
    OllamaError,
    PathOutsideVault,
    VaultUnavailable,
)
from askvault.records import (
    Embedder,
    Generator,
    ModelClients,
    NoteFile,
    ParsedNote,
    QuestionOptions,
    QuestionStatus,
)
from askvault.services.answer import AnswerResult, answer_question, iso_now
from askvault.services.answer_files import log_line_for, stem_of
from askvault.services.answer_upkeep import AnswerUpkeep
from askvault.services.question_options import (
    describe_options,
    is_draft,
    read_question_options,
)
from askvault.services.question_schedule import QuestionSchedule, Signature
from askvault.settings import Settings

log = logging.getLogger(__name__)

STOP_CHECK_EVERY_S = 0.1


@dataclass(frozen=True)
class QuestionFile:
    """A question note of the inbox as listed: vault-relative path, path, signature."""

    rel: str
    abs_path: Path
    sig: Signature


class Inbox(AnswerUpkeep):
    """Answers the question notes of one vault's inbox, one at a time, and keeps their
    answer notes true: finishing answered questions, marking stale answers. Its clients
    come from `clients`, made per question and closed after it."""

    def __init__(
        self,
        settings: Settings,
        clients: ModelClients,
        *,
        backoff_first_s: float = BACKOFF_FIRST_S,
        backoff_max_s: float = BACKOFF_MAX_S,
    ) -> None:
        super().__init__(settings)
        self.clients = clients
        self.schedule = QuestionSchedule(backoff_first_s, backoff_max_s)
        self._lock = threading.Lock()
        self._changes: list[tuple[list[str], list[str]]] = []
        # The content each answer written by this inbox saw of its cited notes: a change
        # report of an indexing pass that committed those notes before the answer read
        # them must not mark it stale.
        self._seen: dict[str, dict[str, str]] = {}
        # Adopted answers (an index rebuilt): cited notes whose content at answer time is
        # unknown until the new index reports them.
        self._baseline_unknown: dict[str, set[str]] = {}

    def queue_changes(self, changed: list[str], deleted: list[str]) -> None:
        """Indexed notes changed or vanished (any thread): answers citing them are marked
        stale by the next `apply_stale_marks`."""
        with self._lock:
            self._changes.append((list(changed), list(deleted)))

    def prepare(self, conn: Connection) -> None:
        """What a start does before the first question: temp files of dead writers and
        placeholders removed, our own notes recognised again, the write problem note
        cleared, unfinished notes of vanished questions removed, refreshes looked for."""
        for rel in (self.answers_rel, self.archive_rel, self.inbox_rel):
            with contextlib.suppress(AskvaultError, OSError):
                cleanup_temp_files(resolve_inside(self.root, rel))
        self.clean_placeholders(conn)
        self._adopt(conn)
        self.clear_write_problem(at_start=True)
        self.forget_vanished(conn, orphans=True)
        self.note_refreshable(conn)

    def _adopt(self, conn: Connection) -> None:
        """Record again the answer notes whose marker proves them ours (an index deleted
        and rebuilt). What their cited notes said when they were written is unknown where
        the new index has not read those notes yet: the first report of such a note is
        taken as that baseline, not as a change (it is the rebuilt index reading it)."""
        try:
            adopted = self.adopt_own_notes(conn)
        except (IndexBusy, DiskFull) as exc:
            log.warning("answer notes not recognised yet: %s", exc.message)
            return
        for row in adopted:
            known = store.content_hashes(conn, list(row.cited))
            self._seen[row.path] = dict(known)
            unknown = set(row.cited) - set(known)
            if unknown:
                self._baseline_unknown[row.path] = unknown

    def put_off(self, rel: str, exc: Exception) -> None:
        """A write failed (disk full, permissions, a busy index): keep the question, retry
        with backoff."""
        delay = self.schedule.put_off(rel)
        if isinstance(exc, VaultUnavailable) or not self.vault_present():
            log.debug("question %s waits for the vault: %s", rel, exc)
        elif isinstance(exc, (OSError, IndexBusy, DiskFull)):
            log.warning("question %s stays in the inbox, retried in %.0f s: %s", rel, delay, exc)
        else:
            log.exception("question %s failed unexpectedly; retried in %.0f s", rel, delay)

    # -- answering one question ----------------------------------------------------------

    def process(self, conn: Connection, cand: QuestionFile, stop_event: threading.Event) -> None:
        """Answer one settled question (or record why it cannot be), per DESIGN §2."""
        read = self._read_question(conn, cand)
        if read is None:
            return
        note, parsed = read
        row = answer_store.get_question(conn, cand.rel)
        if row is not None and row.status in ("archiving", "logging"):
            # Answered already. The same bytes: only the archive and the log are left. Other
            # bytes: an edit after the answer, or a new question at the old name once the
            # move was done; the answered one is finished first, then this one is asked.
            ours = row.status == "archiving" and row.content_sha256 == note.content_hash
            if not self.finish_answered(conn, row, cand if ours else None) or ours:
                return
            row = None
        if row is not None and row.status == "failed" and row.content_sha256 == note.content_hash:
            self.schedule.skip(cand.rel, cand.sig)  # unchanged since it failed: wait for an edit
            return
        question = parsed.body.strip()
        reading = read_question_options(parsed.frontmatter, self.root)
        options, notices = reading.options, tuple(reading.notices)
        if reading.errors:
            self._fail(
                conn,
                cand,
                question,
                "invalid question options: " + "; ".join(reading.errors),
                note.content_hash,
                notices,
            )
            return
        asked = row.asked if row else iso_now()
        if row:
            answer_path = self._own_answer(conn, row.answer_path)
        else:
            answer_path = self._unfinished_answer(conn, cand.rel)
        if row is None or row.status != "waiting" or answer_path is None:
            # A retry of a waiting question keeps its waiting note (which says it is retried)
            # instead of flipping it to `answering` and back on every try.
            placeholder = AnswerNote(
                question=question,
                status="answering",
                asked=asked,
                model=options.model or self.settings.ollama.chat_model,
                embed_model=self.settings.ollama.embed_model,
                options=notices,
            )
            answer_path = self.write_answer(
                conn,
                answer_path,
                render_answer_note(placeholder),
                cand.rel,
                "answering",
                (),
                stem_of(cand.rel),
            )
            self._save_question(conn, cand.rel, answer_path, "answering", note.content_hash, asked)
        watch = _QuestionWatch(cand.abs_path, cand.sig, stop_event)
        try:
            result = self._answer(conn, question, options, watch.changed, asked)
        except AnswerCancelled:
            self._after_cancel(conn, cand, answer_path, stop_event)
            return
        if watch.changed():
            self._after_cancel(conn, cand, answer_path, stop_event)
            return
        self._publish(
            conn, cand, question, note.content_hash, asked, answer_path, result, options, notices
        )

    def _read_question(
        self, conn: Connection, cand: QuestionFile
    ) -> tuple[NoteFile, ParsedNote] | None:
        """The question note read and parsed, or None when there is nothing to ask yet (a
        draft, an empty new note, a note that vanished) or it failed (recorded)."""
        try:
            note = read_note(self.root, cand.rel, self.settings.index.max_note_bytes)
        except NoteUnreadable as exc:
            if os.path.lexists(cand.abs_path):  # else it vanished between listing and reading
                self._fail(conn, cand, "", f"the question note cannot be read: {exc.message}", None)
            return None
        except PathOutsideVault as exc:
            self._fail(conn, cand, "", f"the question note leads outside the vault: {exc}", None)
            return None
        parsed = parse_note(cand.rel, note.text)
        if is_draft(parsed.frontmatter.get("draft")) or not parsed.body.strip():
            # A draft, or a new note still empty (Obsidian's `Untitled.md`): not yet.
            self.schedule.skip(cand.rel, cand.sig)
            return None
        return note, parsed

    def _publish(
        self,
        conn: Connection,
        cand: QuestionFile,
        question: str,
        content_hash: str,
        asked: str,
        answer_path: str,
        result: AnswerResult,
        options: QuestionOptions,
        notices: tuple[str, ...],
    ) -> None:
        """Write the answer note of `result` and move the question on by its status:
        waiting (retried later), failed (until an edit), or answered (archive and log)."""
        seen = store.content_hashes(conn, result.cited_paths)
        shown = (
            replace(result.note, options=notices, trace=_options_trace(options) + result.note.trace)
            if notices
            else result.note
        )
        final = self.write_answer(
            conn,
            self._own_answer(conn, answer_path),
            render_answer_note(shown),
            cand.rel,
            result.status,
            tuple(result.cited_paths),
            stem_of(cand.rel),
        )
        if final:
            self._seen[final] = seen
        if result.status == "waiting":
            self._save_question(conn, cand.rel, final, "waiting", content_hash, asked)
            delay = self.schedule.put_off(cand.rel)
            log.warning("question %s waits %.0f s: %s", cand.rel, delay, result.reason)
            return
        if result.status == "failed":
            self._save_question(conn, cand.rel, final, "failed", content_hash, asked)
            self.schedule.skip(cand.rel, cand.sig)
            return
        self.schedule.answered(cand.rel)
        done = QuestionRow(
            cand.rel, final, "archiving", content_hash, asked, log_line_for(question, final)
        )
        with write_transaction(conn):
            answer_store.put_question(conn, done)
        if self.finish_answered(conn, done, cand):
            log.info("answered %s -> %s (%s)", cand.rel, final, result.status)

    def finish_answered(
        self, conn: Connection, row: QuestionRow, cand: QuestionFile | None
    ) -> bool:
        """Archive (if `cand`, the question note itself, is given) and log an answered
        question from its durable row; True once done, False if it waits (with backoff)."""
        archived: str | None = None
        if row.status == "archiving" and cand is not None:
            archived, reason = self.archive_question(conn, cand.rel, cand.abs_path)
            if reason is not None:
                delay = self.schedule.put_off_finishing(row.path)
                self._show_archive_problem(conn, row.answer_path, reason)
                log.warning(
                    "question %s is answered but cannot be archived (retried in %.0f s): %s",
                    row.path,
                    delay,
                    reason,
                )
                return False
        with write_transaction(conn):
            answer_store.put_question(conn, replace(row, status="logging"))
            answer_row = answer_store.get_answer(conn, row.answer_path) if archived else None
            if answer_row is not None and archived is not None:
                answer_store.put_answer(conn, replace(answer_row, question_path=archived))
        self._show_archive_problem(conn, row.answer_path, None)
        if row.log_line:
            try:
                # After a crash between the append and the delete below, the line is there.
                self.append_log_line(row.log_line, unless_last=row.status == "logging")
            except OSError as exc:
                delay = self.schedule.put_off_finishing(row.path)
                log.warning(
                    "could not append to %s (retried in %.0f s): %s", self.log_rel, delay, exc
                )
                return False
        with write_transaction(conn):
            answer_store.delete_question(conn, row.path)
        self.schedule.finished(row.path)
        return True

    def finish_vanished(self, conn: Connection) -> None:
        """Answered questions whose inbox note is gone (a crash after the move; a user's
        delete) are logged and forgotten; nothing is done while the inbox is missing."""
        inbox = self.present_inbox()
        if inbox is None:
            return
        now = time.monotonic()
        for row in answer_store.questions_answered(conn):
            if not self.schedule.is_due(row.path, now):
                continue
            if not os.path.lexists(inbox / row.path.rsplit("/", 1)[-1]):
                self.finish_answered(conn, row, None)

    def _answer(
        self,
        conn: Connection,
        question: str,
        options: QuestionOptions,
        should_stop: Callable[[], bool],
        asked: str,
    ) -> AnswerResult:
        generator: Generator
        try:
            generator = self.clients.generator()
        except OllamaError as exc:
            generator = _Unavailable(exc)
        embedder: Embedder | None = None
        with contextlib.suppress(OllamaError):
            embedder = self.clients.embedder()
        try:
            return answer_question(
                conn,
                self.settings,
                question,
                options,
                embedder=embedder,
                generator=generator,
                should_stop=should_stop,
                asked=asked,
            )
        finally:
            generator.close()
            if embedder is not None:
                embedder.close()

    def _after_cancel(
        self,
        conn: Connection,
        cand: QuestionFile,
        answer_path: str,
        stop_event: threading.Event,
    ) -> None:
        if stop_event.is_set():
            return  # the question stays in the inbox; the next start resumes it
        if not self.vault_present():
            return  # not deleted: the vault went away; its rows finish the note once back
        if os.path.lexists(cand.abs_path):
            log.info("question %s changed while being answered; answering it again", cand.rel)
            return  # the user's edit wins: it settles and is answered again
        log.info("question %s was deleted while being answered", cand.rel)
        own = self._own_answer(conn, answer_path)
        if own is not None:
            with contextlib.suppress(OSError, AskvaultError):
                resolve_inside(self.root, own).unlink()
        with write_transaction(conn):
            answer_store.delete_question(conn, cand.rel)
            answer_store.delete_answer(conn, answer_path)

    def _fail(
        self,
        conn: Connection,
        cand: QuestionFile,
        question: str,
        reason: str,
        content_hash: str | None,
        notices: tuple[str, ...] = (),
    ) -> None:
        row = answer_store.get_question(conn, cand.rel)
        asked = row.asked if row else iso_now()
        answer_path = (
            self._own_answer(conn, row.answer_path)
            if row
            else self._unfinished_answer(conn, cand.rel)
        )
        note = AnswerNote(
            question=question or f"(question note {stem_of(cand.rel)})",
            status="failed",
            asked=asked,
            reason=reason,
            model=self.settings.ollama.chat_model,
            embed_model=self.settings.ollama.embed_model,
            options=notices,
        )
        final = self.write_answer(
            conn, answer_path, render_answer_note(note), cand.rel, "failed", (), stem_of(cand.rel)
        )
        self._save_question(conn, cand.rel, final, "failed", content_hash or "", asked)
        self.schedule.skip(cand.rel, cand.sig)
        log.warning("question %s failed: %s", cand.rel, reason)

    def _save_question(
        self,
        conn: Connection,
        rel: str,
        answer_path: str,
        status: QuestionStatus,
        content_hash: str,
        asked: str,
    ) -> None:
        with write_transaction(conn):
            answer_store.put_question(
                conn, QuestionRow(rel, answer_path, status, content_hash, asked)
            )

    # -- stale answers -------------------------------------------------------------------

    def apply_stale_marks(self, conn: Connection) -> None:
        """Mark answers citing changed notes stale (or list them if the user edited them)."""
        with self._lock:
            batches, self._changes = self._changes, []
        for i, (changed, deleted) in enumerate(batches):
            paths = set(changed) | set(deleted)
            try:
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
                        self._mark_stale(conn, row, pages)
            except (IndexBusy, DiskFull):
                # Keep this batch and the later ones for the retry (marking is idempotent).
                with self._lock:
                    self._changes[:0] = batches[i:]
                raise

    def _mark_stale(self, conn: Connection, row: AnswerRow, pages: list[str]) -> None:
        try:
            path = resolve_inside(self.root, row.path)
            data = path.read_bytes()
        except (OSError, AskvaultError):
            with write_transaction(conn):
                answer_store.delete_answer(conn, row.path)  # moved out or deleted by the user
            return
        if not row.holds(data):
            self._list_edited_stale(conn, row.path)
            return
        text = data.decode("utf-8")
        duplicates = search_store.duplicate_basenames(conn, pages)
        names = list(
            dict.fromkeys(stale_pages_of(text) + [page_wikilink(p, duplicates) for p in pages])
        )
        new = self.signed(mark_stale(text, names), row.path, text)
        if not self._rewrite_own(
            conn,
            path,
            new,
            AnswerRow(
                row.path, row.question_path, "stale", hashlib.sha256(new).hexdigest(), row.cited
            ),
        ):
            self._list_edited_stale(conn, row.path)  # a user's save landed meanwhile


def _options_trace(options: QuestionOptions) -> tuple[str, ...]:
    """The trace's line for the options that narrowed the search (none if none did)."""
    described = describe_options(options)
    return (f"options: {described}",) if described else ()


class _QuestionWatch:
    """`changed()` is true once shutdown began or the question file changed or vanished."""

    def __init__(self, path: Path, sig: Signature, stop: threading.Event) -> None:
        self.path, self.sig, self.stop = path, sig, stop
        self._checked_at = 0.0
        self._changed = False

    def changed(self) -> bool:
        if self.stop.is_set() or self._changed:
            return True
        now = time.monotonic()
        if now - self._checked_at >= STOP_CHECK_EVERY_S:
            self._checked_at = now
            try:
                st = os.stat(self.path, follow_symlinks=False)
                self._changed = (st.st_size, st.st_mtime_ns, st.st_ino) != self.sig
            except OSError:
                self._changed = True
        return self._changed

    def __call__(self) -> bool:
        return self.changed()


class _Unavailable:
    """A generator standing in when the Ollama client cannot even be built."""

    def __init__(self, exc: OllamaError) -> None:
        self.exc = exc

    def stream(self, messages: Any, *, model: str, num_ctx: int, **_: Any) -> Any:
        raise self.exc

    def close(self) -> None:
        """Nothing to close: no client was built."""
