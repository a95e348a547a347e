"""The inbox protocol (DESIGN §2): question notes in, answer notes out, one at a time.

The worker runs on its own thread. Each pass lists `queries/inbox/`, takes the
oldest note unchanged for `settle_s` (drafts, failed notes whose bytes did not
change, and questions in backoff are skipped), writes an `answering` note,
answers, then writes the final note, moves the question byte for byte to
`queries/archive/` and appends a line to `queries/log.md`. A `waiting` or
`failed` question stays in the inbox (the `inbox_questions` table remembers
its answer note), so a restart resumes it and a fixed question is re-answered.

askvault rewrites an answer note only while its bytes are exactly what it
wrote (sha256 in the `answers` table); otherwise it writes `<name> (2).md`.
Every path comes from `resolve_inside`, and writes go only under `queries/`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from askvault.adapters import answer_store, store
from askvault.adapters.answer_store import AnswerRow, QuestionRow
from askvault.adapters.db import BUSY_TIMEOUT_S, Connection, connect, write_transaction
from askvault.adapters.vault import (
    TEMP_PREFIX,
    cleanup_temp_files,
    move_to_free_name,
    read_note,
    resolve_inside,
    undecodable_name,
    write_atomic,
    write_new_file,
)
from askvault.core.answer_note import AnswerNote, mark_stale, render_answer_note, stale_pages_of
from askvault.core.notes import parse_note
from askvault.errors import (
    AskvaultError,
    DiskFull,
    IndexBusy,
    NoteUnreadable,
    OllamaError,
    PathOutsideVault,
)
from askvault.services.answering import (
    AnswerCancelled,
    AnswerResult,
    QuestionOptions,
    answer_question,
    iso_now,
    page_wikilink,
)
from askvault.services.index_pass import make_embedder, make_generator
from askvault.services.question_options import (
    is_draft,
    parse_question_options,
    question_summary,
)
from askvault.settings import Settings

log = logging.getLogger(__name__)

POLL_S = 0.25
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
STOP_CHECK_EVERY_S = 0.1


@dataclass(frozen=True)
class _Candidate:
    rel: str
    abs_path: Path
    sig: tuple[int, int, int]


class InboxWorker:
    """Answers the question notes of one vault's inbox (the daemon's Worker protocol)."""

    def __init__(
        self, settings: Settings, *, backoff_first_s: float = BACKOFF_FIRST_S,
        backoff_max_s: float = BACKOFF_MAX_S, busy_timeout_s: float = BUSY_TIMEOUT_S,
    ) -> None:
        self.settings = settings
        self.busy_timeout_s = busy_timeout_s
        self.root = settings.vault_path
        q = settings.queries
        self.inbox_rel = f"{q.folder}/{q.inbox}"
        self.answers_rel = f"{q.folder}/{q.answers}"
        self.archive_rel = f"{q.folder}/{q.archive}"
        self.log_rel = f"{q.folder}/{q.log}"
        self.backoff_first_s = backoff_first_s
        self.backoff_max_s = backoff_max_s
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._changes: list[tuple[list[str], list[str]]] = []
        # The content each answer written by this worker saw of its cited notes: a change
        # report of an indexing pass that committed those notes before the answer read
        # them must not mark it stale.
        self._seen: dict[str, dict[str, str]] = {}
        self._retry_at: dict[str, float] = {}
        self._delay: dict[str, float] = {}
        self._first_seen: dict[str, tuple[tuple[int, int, int], float]] = {}
        self._skip_sig: dict[str, tuple[int, int, int]] = {}

    # -- the Worker protocol -------------------------------------------------------------

    def notice(self, paths: list[str]) -> None:
        """Vault-relative paths under queries/ changed: look at the inbox again soon."""
        if any(p.startswith(self.inbox_rel + "/") for p in paths):
            self._wake.set()

    def on_notes_changed(self, changed: list[str], deleted: list[str]) -> None:
        """Indexed notes changed or vanished: answers citing them become stale (on our thread)."""
        if changed or deleted:
            with self._lock:
                self._changes.append((list(changed), list(deleted)))
            self._wake.set()

    def run(self, stop_event: threading.Event) -> None:
        """Answer questions until `stop_event` is set; returns promptly after it is."""
        conn = self._connect(stop_event)
        if conn is None:
            return
        busy_delay = self.backoff_first_s / 2
        try:
            for rel in (self.answers_rel, self.archive_rel, self.inbox_rel):
                with contextlib.suppress(AskvaultError):
                    cleanup_temp_files(resolve_inside(self.root, rel))
            while not stop_event.is_set():
                try:
                    self.apply_stale_marks(conn)
                except (IndexBusy, DiskFull) as exc:
                    # Another writer holds the index: the marks wait (kept), questions too.
                    busy_delay = min(self.backoff_max_s, busy_delay * 2)
                    log.warning("stale marks wait: %s; retrying in %.0f s", exc.message,
                                busy_delay)
                    stop_event.wait(busy_delay)
                    continue
                busy_delay = self.backoff_first_s / 2
                candidate = self._next_question()
                if candidate is not None:
                    try:
                        self.process(conn, candidate, stop_event)
                    except Exception as exc:  # noqa: BLE001 - one question never stops the worker
                        self._defer(candidate.rel, exc)
                    continue
                if not self._wake.is_set():
                    stop_event.wait(POLL_S)
                self._wake.clear()
        finally:
            conn.close()

    def _connect(self, stop_event: threading.Event) -> Connection | None:
        """The worker's connection, waiting with backoff while another writer holds a
        migration out or the disk is full; None if stopped first."""
        delay = self.backoff_first_s / 2
        while not stop_event.is_set():
            try:
                return connect(self.settings.db_path, busy_timeout_s=self.busy_timeout_s)
            except (IndexBusy, DiskFull) as exc:
                delay = min(self.backoff_max_s, delay * 2)
                log.warning("the inbox waits: %s; retrying in %.0f s", exc.message, delay)
                stop_event.wait(delay)
        return None

    def _defer(self, rel: str, exc: Exception) -> None:
        """A write failed (disk full, permissions, a busy index): keep the question, retry
        with backoff."""
        delay = min(self.backoff_max_s, self._delay.get(rel, self.backoff_first_s / 2) * 2)
        self._delay[rel] = delay
        self._retry_at[rel] = time.monotonic() + delay
        if isinstance(exc, (OSError, IndexBusy, DiskFull)):
            log.warning("question %s stays in the inbox, retried in %.0f s: %s", rel, delay, exc)
        else:
            log.exception("question %s failed unexpectedly; retried in %.0f s", rel, delay)

    # -- choosing a question -------------------------------------------------------------

    def _next_question(self) -> _Candidate | None:
        """The oldest settled question that is due, or None."""
        try:
            inbox = resolve_inside(self.root, self.inbox_rel)
            entries = list(os.scandir(inbox))
        except (OSError, AskvaultError):
            return None
        now_mono, now_wall = time.monotonic(), time.time()
        due: list[tuple[int, str, _Candidate]] = []
        present = set()
        for entry in entries:
            name = entry.name
            if not name.lower().endswith(".md") or name.startswith((".", TEMP_PREFIX)):
                continue
            rel = f"{self.inbox_rel}/{name}"
            present.add(rel)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            sig = (st.st_size, st.st_mtime_ns, st.st_ino)
            bad_name = undecodable_name(rel)
            if bad_name is not None:
                # Its rows could not be stored (SQLite holds UTF-8 text): said once per
                # version of the file, then left alone; the other questions go on.
                if self._skip_sig.get(rel) != sig:
                    self._skip_sig[rel] = sig
                    log.warning("question %s is not answered: %s; rename it", bad_name.path,
                                bad_name.reason)
                continue
            seen = self._first_seen.get(rel)
            if seen is None or seen[0] != sig:
                self._first_seen[rel] = seen = (sig, now_mono)
            settle = self.settings.queries.settle_s
            settled = now_wall - st.st_mtime_ns / 1e9 >= settle or now_mono - seen[1] >= settle
            if not settled or self._skip_sig.get(rel) == sig:
                continue
            if self._retry_at.get(rel, 0.0) > now_mono:
                continue
            due.append((st.st_mtime_ns, name, _Candidate(rel, Path(entry.path), sig)))
        for table in (self._first_seen, self._skip_sig, self._retry_at, self._delay):
            for rel in [r for r in table if r not in present]:
                del table[rel]
        return min(due)[2] if due else None

    # -- answering one question ----------------------------------------------------------

    def process(self, conn: Connection, cand: _Candidate, stop_event: threading.Event) -> None:
        """Answer one settled question (or record why it cannot be), per DESIGN §2."""
        try:
            note = read_note(self.root, cand.rel, self.settings.index.max_note_bytes)
        except NoteUnreadable as exc:
            if not os.path.lexists(cand.abs_path):
                return  # vanished between listing and reading
            self._fail(conn, cand, "", f"the question note cannot be read: {exc.message}", None)
            return
        except PathOutsideVault as exc:
            self._fail(conn, cand, "", f"the question note leads outside the vault: {exc}", None)
            return
        parsed = parse_note(cand.rel, note.text)
        if is_draft(parsed.frontmatter.get("draft")):
            self._skip_sig[cand.rel] = cand.sig
            return
        row = answer_store.get_question(conn, cand.rel)
        if row is not None and row.status == "failed" and row.content_sha256 == note.content_hash:
            self._skip_sig[cand.rel] = cand.sig  # unchanged since it failed: wait for an edit
            return
        question = parsed.body.strip()
        options, errors = parse_question_options(parsed.frontmatter, self.root)
        if errors:
            self._fail(conn, cand, question, "invalid question options: " + "; ".join(errors),
                       note.content_hash)
            return
        asked = row.asked if row else iso_now()
        if row:
            answer_path = self._own_answer(conn, row.answer_path)
        else:
            orphan = answer_store.answering_note_of(conn, cand.rel)
            answer_path = self._own_answer(conn, orphan.path) if orphan else None
        placeholder = AnswerNote(question=question, status="answering", asked=asked,
                                 model=options.model or self.settings.ollama.chat_model,
                                 embed_model=self.settings.ollama.embed_model)
        answer_path = self.write_answer(conn, answer_path, render_answer_note(placeholder),
                                        cand.rel, "answering", (), _stem(cand.rel))
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
        seen = store.content_hashes(conn, result.cited_paths)
        final = self.write_answer(conn, self._own_answer(conn, answer_path),
                                  render_answer_note(result.note), cand.rel, result.status,
                                  tuple(result.cited_paths), _stem(cand.rel))
        if final:
            self._seen[final] = seen
        if result.status == "waiting":
            self._save_question(conn, cand.rel, final, "waiting", note.content_hash, asked)
            delay = min(self.backoff_max_s, self._delay.get(cand.rel, self.backoff_first_s / 2) * 2)
            self._delay[cand.rel] = delay
            self._retry_at[cand.rel] = time.monotonic() + delay
            log.warning("question %s waits %.0f s: %s", cand.rel, delay, result.reason)
            return
        if result.status == "failed":
            self._save_question(conn, cand.rel, final, "failed", note.content_hash, asked)
            self._skip_sig[cand.rel] = cand.sig
            return
        self._delay.pop(cand.rel, None)
        archived = self.archive_question(cand)
        with write_transaction(conn):
            answer_store.delete_question(conn, cand.rel)
            if archived:
                row_now = answer_store.get_answer(conn, final)
                if row_now:
                    answer_store.put_answer(conn, AnswerRow(
                        final, archived, row_now.status, row_now.written_sha256, row_now.cited))
        self.append_log(question)
        log.info("answered %s -> %s (%s)", cand.rel, final, result.status)

    def _answer(
        self, conn: Connection, question: str, options: QuestionOptions,
        should_stop: Callable[[], bool], asked: str,
    ) -> AnswerResult:
        try:
            generator = make_generator(self.settings)
        except OllamaError as exc:
            generator = _Unavailable(exc)  # type: ignore[assignment]
        embedder: Any = None
        with contextlib.suppress(OllamaError):
            embedder = make_embedder(self.settings)
        try:
            return answer_question(conn, self.settings, question, options, embedder=embedder,
                                   generator=generator, should_stop=should_stop, asked=asked)
        finally:
            for client in (generator, embedder):
                close = getattr(client, "close", None)
                if close is not None:
                    close()

    def _after_cancel(
        self, conn: Connection, cand: _Candidate, answer_path: str, stop_event: threading.Event
    ) -> None:
        if stop_event.is_set():
            return  # the question stays in the inbox; the next start resumes it
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
        self, conn: Connection, cand: _Candidate, question: str, reason: str,
        content_hash: str | None,
    ) -> None:
        row = answer_store.get_question(conn, cand.rel)
        asked = row.asked if row else iso_now()
        answer_path = self._own_answer(conn, row.answer_path) if row else None
        note = AnswerNote(question=question or f"(question note {_stem(cand.rel)})",
                          status="failed", asked=asked, reason=reason,
                          model=self.settings.ollama.chat_model,
                          embed_model=self.settings.ollama.embed_model)
        final = self.write_answer(conn, answer_path, render_answer_note(note), cand.rel,
                                  "failed", (), _stem(cand.rel))
        self._save_question(conn, cand.rel, final, "failed", content_hash or "", asked)
        self._skip_sig[cand.rel] = cand.sig
        log.warning("question %s failed: %s", cand.rel, reason)

    def _save_question(
        self, conn: Connection, rel: str, answer_path: str, status: str, content_hash: str,
        asked: str,
    ) -> None:
        with write_transaction(conn):
            answer_store.put_question(conn, QuestionRow(rel, answer_path, status, content_hash,
                                                        asked))

    # -- files ---------------------------------------------------------------------------

    def _own_answer(self, conn: Connection, rel: str) -> str | None:
        """`rel` if that answer note still holds exactly the bytes askvault wrote, else None."""
        row = answer_store.get_answer(conn, rel)
        if row is None:
            return None
        try:
            data = resolve_inside(self.root, rel).read_bytes()
        except (OSError, AskvaultError):
            return None
        return rel if row.holds(data) else None

    def _rewrite_own(self, conn: Connection, path: Path, data: bytes, row: AnswerRow) -> None:
        """Replace our own note's bytes: the new hash is recorded beside the old one before
        the rename and alone after it, so a crash anywhere leaves a note we still know."""
        old = answer_store.get_answer(conn, row.path)
        with write_transaction(conn):
            answer_store.put_answer(conn, replace(
                row, previous_sha256=old.written_sha256 if old else ""))
        write_atomic(path, data)
        with write_transaction(conn):
            answer_store.put_answer(conn, replace(row, previous_sha256=""))

    def write_answer(
        self, conn: Connection, own_path: str | None, text: str, question_rel: str, status: str,
        cited: tuple[str, ...], stem: str,
    ) -> str:
        """Rewrite our own note `own_path`, or write a new `<stem>.md` / `<stem> (2).md`."""
        data = text.encode("utf-8")
        folder = resolve_inside(self.root, self.answers_rel)
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(data).hexdigest()
        if own_path is not None:
            self._rewrite_own(conn, resolve_inside(self.root, own_path), data,
                              AnswerRow(own_path, question_rel, status, digest, cited))
            return own_path
        else:
            claimed: list[str] = []

            def claim(candidate: Path) -> None:
                # Recorded before the file exists: after a crash right behind the link, the
                # restart finds this row and rewrites the note instead of adding `(2)`.
                with write_transaction(conn):
                    for previous in claimed:
                        answer_store.delete_answer(conn, previous)
                    claimed[:] = [f"{self.answers_rel}/{candidate.name}"]
                    answer_store.put_answer(conn, AnswerRow(
                        claimed[0], question_rel, status, digest, cited))

            written = write_new_file(folder / f"{stem}.md", data, claim=claim)
            rel = f"{self.answers_rel}/{written.name}"
        with write_transaction(conn):
            answer_store.put_answer(conn, AnswerRow(rel, question_rel, status, digest, cited))
        return rel

    def archive_question(self, cand: _Candidate) -> str | None:
        """Move the question, byte for byte, to the archive (never over another file)."""
        try:
            folder = resolve_inside(self.root, self.archive_rel)
            folder.mkdir(parents=True, exist_ok=True)
        except (OSError, AskvaultError) as exc:
            log.warning("cannot archive %s: %s", cand.rel, exc)
            return None
        try:
            moved = move_to_free_name(cand.abs_path, folder / f"{_stem(cand.rel)}.md")
        except (OSError, AskvaultError) as exc:
            log.warning("cannot archive %s: %s", cand.rel, exc)
            return None
        return None if moved is None else f"{self.archive_rel}/{moved.name}"

    def append_log(self, question: str) -> bool:
        """`## [YYYY-MM-DD] query | <summary>` appended to the log note; failure only warns."""
        line = f"## [{time.strftime('%Y-%m-%d')}] query | {question_summary(question)}\n"
        try:
            path = resolve_inside(self.root, self.log_rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a+b") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() > 0:
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":
                        line = "\n" + line
                fh.write(line.encode("utf-8"))
        except (OSError, AskvaultError) as exc:
            log.warning("could not append to %s: %s", self.log_rel, exc)
            return False
        return True

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
                    if seen is not None:
                        now = store.content_hashes(conn, pages)
                        pages = [p for p in pages if p in deleted or now.get(p) != seen.get(p)]
                    if pages:
                        self._seen.pop(row.path, None)
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
            with write_transaction(conn):
                listed = json.loads(store.get_meta(conn, "stale_answers_edited") or "[]")
                if row.path not in listed:
                    listed.append(row.path)
                store.set_meta(conn, "stale_answers_edited", json.dumps(listed))
            return
        text = data.decode("utf-8")
        names = list(dict.fromkeys(stale_pages_of(text) + [page_wikilink(p) for p in pages]))
        new = mark_stale(text, names).encode("utf-8")
        self._rewrite_own(conn, path, new, AnswerRow(
            row.path, row.question_path, "stale", hashlib.sha256(new).hexdigest(), row.cited))


class _QuestionWatch:
    """`changed()` is true once shutdown began or the question file changed or vanished."""

    def __init__(self, path: Path, sig: tuple[int, int, int], stop: threading.Event) -> None:
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

    def stream(self, messages: Any, *, model: str, num_ctx: int) -> Any:
        raise self.exc


def _stem(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name
