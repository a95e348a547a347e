"""One question note's steps (DESIGN §2): read, answer, publish, archive, log.

`InboxQuestions.process` takes one finished question of the inbox: it writes an
`answering` note, answers through `answer_question`, then writes the final note, moves
the question byte for byte to `queries/archive/` and appends a line to `queries/log.md`.
A `waiting` or `failed` question stays in the inbox (the `inbox_questions` table
remembers its answer note), so a restart resumes it and a fixed question is re-answered.

An answered question is finished from a durable record (its row, status `archiving`
then `logging`, holds the log line): the archive move is idempotent (an archive file that
is the inbox file's own inode means the move was cut short after the link), and a restart
after a crash anywhere archives and logs it exactly once. A question that cannot be
archived (the folder refused, not a folder, a symlink out of the vault; the inbox name
cannot be removed) is never answered again: it waits with backoff, its answer note says
why, and it is archived and logged once that becomes possible.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from askvault.adapters import answer_store, store
from askvault.adapters.answer_store import QuestionRow
from askvault.adapters.db import Connection, write_transaction
from askvault.adapters.vault import read_note, resolve_inside
from askvault.core.answer_note import AnswerNote, render_answer_note
from askvault.core.notes import parse_note
from askvault.core.timestamps import local_iso
from askvault.errors import (
    AnswerCancelled,
    AskvaultError,
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
from askvault.services.answer import AnswerResult, answer_question
from askvault.services.inbox.clock import Clock
from askvault.services.inbox.files import AnswerFiles, log_line_for, stem_of
from askvault.services.inbox.listing import QuestionFile
from askvault.services.inbox.presence import VaultPresence, question_present
from askvault.services.inbox.question_options import (
    describe_options,
    question_note_state,
    read_question_options,
)
from askvault.services.inbox.schedule import QuestionSchedule, Signature
from askvault.services.inbox.stale import StaleMarks
from askvault.services.inbox.upkeep import AnswerUpkeep
from askvault.services.index.foreground import ForegroundWork
from askvault.services.retrieval.search import word_hit_hashes
from askvault.settings import Settings

log = logging.getLogger(__name__)

# While a question is answered, its file is looked at (for an edit or a delete) at most
# this often.
STOP_CHECK_EVERY_S = 0.1


class InboxQuestions:
    """Answers the question notes of one vault's inbox, one at a time. Its clients come
    from `clients`, made per question and closed after it."""

    def __init__(
        self,
        settings: Settings,
        clients: ModelClients,
        *,
        files: AnswerFiles,
        upkeep: AnswerUpkeep,
        presence: VaultPresence,
        schedule: QuestionSchedule,
        stale: StaleMarks,
        clock: Clock,
        foreground: ForegroundWork | None = None,
    ) -> None:
        self.settings = settings
        # Shared with the embedding thread: it gives way while a question is answered.
        self.foreground = foreground or ForegroundWork()
        self.root = settings.vault_path
        self.clients = clients
        self.files = files
        self.upkeep = upkeep
        self.presence = presence
        self.schedule = schedule
        self.stale = stale
        self.clock = clock
        self._warned_wait: str | None = None  # the waiting reason last logged as a warning
        # Why each question was last put off, as logged: one line per reason, not one per
        # retry (a traceback every retry while answers could not be written:
        # docs/reliability.md, "Fixes (issue 25)", 11); forgotten once its answer note is
        # written.
        self._put_off_for: dict[str, str] = {}

    def put_off(self, rel: str, exc: Exception) -> None:
        """A write failed (disk full, permissions, a busy index): keep the question, retry
        with backoff; said once per reason."""
        delay = self.schedule.put_off(rel)
        reason = f"{type(exc).__name__}: {exc}"
        if self._put_off_for.get(rel) == reason:
            log.debug("question %s still waits, retried in %.0f s: %s", rel, delay, exc)
            return
        self._put_off_for[rel] = reason
        if isinstance(exc, VaultUnavailable) or not self.presence.vault_present():
            log.debug("question %s waits for the vault: %s", rel, exc)
        elif isinstance(exc, (OSError, AskvaultError)):
            log.warning(
                "question %s stays in the inbox (retried with backoff, next in %.0f s): %s",
                rel,
                delay,
                exc,
            )
        else:
            log.exception("question %s failed unexpectedly; retried in %.0f s", rel, delay)

    def process(
        self, conn: Connection, cand: QuestionFile, should_stop: Callable[[], bool]
    ) -> None:
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
            reason = "invalid question options: " + "; ".join(reading.errors)
            self.fail(conn, cand, question, reason, note.content_hash, notices)
            return
        asked = row.asked if row else local_iso(self.clock.time())
        if cand.name_problem is not None and row is None:
            log.warning(
                "question %s: %s; answered and archived with U+FFFD in place of its bad bytes",
                cand.rel,
                cand.name_problem,
            )
        answer_path = self._begin(conn, cand, row, question, asked, options, notices, note)
        watch = _QuestionWatch(cand.abs_path, cand.sig, should_stop, self.clock)
        try:
            result = self._answer(conn, question, options, watch.changed, asked)
        except AnswerCancelled:
            self._after_cancel(conn, cand, answer_path, should_stop)
            return
        if watch.changed(force=True):
            self._after_cancel(conn, cand, answer_path, should_stop)
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
            note = read_note(self.root, cand.read_rel, self.settings.index.max_note_bytes)
        except NoteUnreadable as exc:
            if os.path.lexists(cand.abs_path):  # else it vanished between listing and reading
                self.fail(conn, cand, "", f"the question note cannot be read: {exc.message}", None)
            return None
        except PathOutsideVault as exc:
            self.fail(conn, cand, "", f"the question note leads outside the vault: {exc}", None)
            return None
        parsed = parse_note(cand.rel, note.text)
        if question_note_state(parsed) != "question":
            # A draft, or a new note still empty (Obsidian's `Untitled.md`): not yet.
            self.schedule.skip(cand.rel, cand.sig)
            return None
        return note, parsed

    def _begin(
        self,
        conn: Connection,
        cand: QuestionFile,
        row: QuestionRow | None,
        question: str,
        asked: str,
        options: QuestionOptions,
        notices: tuple[str, ...],
        note: NoteFile,
    ) -> str:
        """The answer note this answer will replace: its `answering` note, written and
        recorded now, or (a retry of a waiting question) its waiting note, which says it
        is retried, instead of flipping it to `answering` and back on every try."""
        if row:
            answer_path = self.files.own_answer(conn, row.answer_path)
        else:
            answer_path = self.upkeep.unfinished_answer(conn, cand.rel)
        if row is not None and row.status == "waiting" and answer_path is not None:
            return answer_path
        placeholder = AnswerNote(
            question=question,
            status="answering",
            asked=asked,
            model=options.model or self.settings.ollama.chat_model,
            embed_model=self.settings.ollama.embed_model,
            options=notices,
        )
        answer_path = self.files.write_answer(
            conn,
            answer_path,
            render_answer_note(placeholder),
            cand.rel,
            "answering",
            (),
            stem_of(cand.rel),
        )
        self._save_question(conn, cand.rel, answer_path, "answering", note.content_hash, asked)
        return answer_path

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
        final = self.files.write_answer(
            conn,
            self.files.own_answer(conn, answer_path),
            render_answer_note(shown),
            cand.rel,
            result.status,
            tuple(result.cited_paths),
            stem_of(cand.rel),
        )
        self._put_off_for.pop(cand.rel, None)  # its answer note could be written
        if final:
            self.stale.remember(final, seen)
        if result.status == "waiting":
            self._save_question(conn, cand.rel, final, "waiting", content_hash, asked)
            delay = self.schedule.put_off(cand.rel)
            if result.reason != self._warned_wait:
                # One warning per outage, not one per question and retry: the questions
                # that wait for the same reason after it are logged at debug.
                self._warned_wait = result.reason
                log.warning("question %s waits %.0f s: %s", cand.rel, delay, result.reason)
            else:
                log.debug("question %s waits %.0f s again: %s", cand.rel, delay, result.reason)
            return
        self._warned_wait = None  # Ollama answered: the next wait is a new outage
        if result.status == "failed":
            self._save_question(conn, cand.rel, final, "failed", content_hash, asked)
            self.schedule.skip(cand.rel, cand.sig)
            return
        self.schedule.answered(cand.rel)
        line = log_line_for(question, final, self.clock.time())
        done = QuestionRow(cand.rel, final, "archiving", content_hash, asked, line)
        with write_transaction(conn):
            answer_store.put_question(conn, done)
        if self.finish_answered(conn, done, cand):
            log.info("answered %s -> %s (%s)", cand.rel, final, result.status)

    def finish_answered(
        self, conn: Connection, row: QuestionRow, cand: QuestionFile | None
    ) -> bool:
        """Archive (if `cand`, the question note itself, is given) and log an answered
        question from its durable row; True once done, False if it waits (with backoff)."""
        files = self.files
        archived: str | None = None
        if row.status == "archiving" and cand is not None:
            archived, reason = files.archive_question(conn, cand.rel, cand.abs_path)
            if reason is not None:
                delay = self.schedule.put_off_finishing(row.path)
                files.show_archive_problem(conn, row.answer_path, reason)
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
        files.show_archive_problem(conn, row.answer_path, None)
        if row.log_line:
            try:
                # After a crash between the append and the delete below, the line is there.
                files.append_log_line(row.log_line, unless_last=row.status == "logging")
            except OSError as exc:
                delay = self.schedule.put_off_finishing(row.path)
                log.warning(
                    "could not append to %s (retried in %.0f s): %s", files.log_rel, delay, exc
                )
                return False
        with write_transaction(conn):
            answer_store.delete_question(conn, row.path)
        self.schedule.finished(row.path)
        return True

    def finish_vanished(self, conn: Connection) -> None:
        """Answered questions whose inbox note is gone (a crash after the move; a user's
        delete) are logged and forgotten; nothing is done while the inbox is missing."""
        inbox = self.presence.present_inbox()
        if inbox is None:
            return
        for row in answer_store.questions_answered(conn):
            if not self.schedule.is_due(row.path):
                continue
            if not question_present(inbox, row.path):
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
        # The question's word hits jump the embedding queue (they are what it and a
        # follow-up search); no embedding batch starts while it is answered.
        self.foreground.prefer(word_hit_hashes(conn, question))
        try:
            with self.foreground.answering():
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
        should_stop: Callable[[], bool],
    ) -> None:
        if should_stop():
            return  # the question stays in the inbox; the next start resumes it
        if not self.presence.vault_present():
            return  # not deleted: the vault went away; its rows finish the note once back
        if os.path.lexists(cand.abs_path):
            log.info("question %s changed while being answered; answering it again", cand.rel)
            return  # the user's edit wins: it settles and is answered again
        log.info("question %s was deleted while being answered", cand.rel)
        own = self.files.own_answer(conn, answer_path)
        if own is not None:
            with contextlib.suppress(OSError, AskvaultError):
                resolve_inside(self.root, own).unlink()
        with write_transaction(conn):
            answer_store.delete_question(conn, cand.rel)
            answer_store.delete_answer(conn, answer_path)

    def fail(
        self,
        conn: Connection,
        cand: QuestionFile,
        question: str,
        reason: str,
        content_hash: str | None,
        notices: tuple[str, ...] = (),
    ) -> None:
        """Write (or rewrite) the question's `failed` note saying `reason`; the question
        waits for an edit."""
        row = answer_store.get_question(conn, cand.rel)
        asked = row.asked if row else local_iso(self.clock.time())
        answer_path = (
            self.files.own_answer(conn, row.answer_path)
            if row
            else self.upkeep.unfinished_answer(conn, cand.rel)
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
        final = self.files.write_answer(
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


def _options_trace(options: QuestionOptions) -> tuple[str, ...]:
    """The trace's line for the options that narrowed the search (none if none did)."""
    described = describe_options(options)
    return (f"options: {described}",) if described else ()


class _QuestionWatch:
    """`changed()` is true once shutdown began or the question file changed or vanished;
    the file is looked at once every `STOP_CHECK_EVERY_S` at most, or at once if forced."""

    def __init__(
        self, path: Path, sig: Signature, should_stop: Callable[[], bool], clock: Clock
    ) -> None:
        self.path, self.sig, self.should_stop, self.clock = path, sig, should_stop, clock
        self._checked_at = float("-inf")
        self._changed = False

    def changed(self, *, force: bool = False) -> bool:
        if self.should_stop() or self._changed:
            return True
        at = self.clock.monotonic()
        if force or at - self._checked_at >= STOP_CHECK_EVERY_S:
            self._checked_at = at
            try:
                st = os.stat(self.path, follow_symlinks=False)
                self._changed = (st.st_size, st.st_mtime_ns, st.st_ino) != self.sig
            except OSError:
                self._changed = True
        return self._changed


class _Unavailable:
    """A generator standing in when the Ollama client cannot even be built."""

    def __init__(self, exc: OllamaError) -> None:
        self.exc = exc

    def stream(self, messages: Any, *, model: str, num_ctx: int, **_: Any) -> Any:
        raise self.exc

    def abort(self) -> None:
        """Nothing streams."""

    def close(self) -> None:
        """Nothing to close: no client was built."""
