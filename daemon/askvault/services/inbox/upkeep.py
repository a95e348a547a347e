"""The upkeep of askvault's notes beside the answering itself (issues 14 and 15).

`AnswerUpkeep` is the part of the inbox that keeps the notes under `queries/` true to
their questions between answers (through the inbox's `AnswerFiles`, and only while
`VaultPresence` finds the inbox folder):

- unfinished notes (`answering`, `waiting`, `failed`) of questions that left the inbox are
  removed, and those that lost their rows are found again by their ownership marker
  (issue 14 item 3, issue 15 16e);
- `refresh: true` set on an answer asks its question again (issue 14 item 5).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import threading
from dataclasses import replace
from typing import Any

from askvault.adapters import answer_store
from askvault.adapters.answer_store import AnswerRow
from askvault.adapters.db import Connection, write_transaction
from askvault.adapters.vault import resolve_inside, write_new_file
from askvault.core.ownership import owned_note, properties_of, sign_note, without_property
from askvault.errors import AskvaultError, DiskFull, IndexBusy
from askvault.records import AnswerStatus
from askvault.services.inbox.files import AnswerFiles, stem_of
from askvault.services.inbox.presence import VaultPresence, question_present
from askvault.services.inbox.question_options import is_draft

log = logging.getLogger(__name__)

REFRESH_KEY = "refresh"
REFRESH_STATUSES: tuple[AnswerStatus, ...] = ("stale", "answered", "no-answer")
UNFINISHED_STATUSES: tuple[AnswerStatus, ...] = ("answering", "waiting", "failed")


class AnswerUpkeep:
    """Keeps one vault's unfinished and refreshed answer notes in step with its inbox."""

    def __init__(self, files: AnswerFiles, presence: VaultPresence) -> None:
        self.files = files
        self.presence = presence
        self.root = files.root
        self.inbox_rel = files.inbox_rel
        self._touched_lock = threading.Lock()
        self._answers_touched: set[str] = set()

    def note_answers_touched(self, paths: set[str]) -> None:
        """Answer notes that changed (from the watcher, any thread): checked for a refresh."""
        with self._touched_lock:
            self._answers_touched |= paths

    def note_refreshable(self, conn: Connection) -> None:
        """At start-up: every finished answer, for a refresh set while the daemon was off."""
        self.note_answers_touched(
            {r.path for r in answer_store.answers_with_status(conn, REFRESH_STATUSES)}
        )

    def forget_vanished(self, conn: Connection, *, orphans: bool = False) -> None:
        """Questions not answered yet whose note left the inbox (deleted, renamed, moved):
        their `answering` / `waiting` / `failed` note, if still askvault's own, is removed
        with their rows, so no note says forever that it will be replaced. With `orphans`
        (at start-up) also such notes that have no question row at all. Nothing is done
        while the inbox folder is missing (a vault moved away)."""
        inbox = self.presence.present_inbox()
        if inbox is None:
            return
        gone: list[tuple[str, str]] = []
        for row in answer_store.questions_unfinished(conn):
            if not question_present(inbox, row.path):
                gone.append((row.path, row.answer_path))
        if orphans:
            asked = {r.answer_path for r in answer_store.questions_unfinished(conn)}
            for answer in answer_store.answers_unfinished(conn):
                q = answer.question_path
                if (
                    answer.path not in asked
                    and q.startswith(self.inbox_rel + "/")
                    and "/" not in q[len(self.inbox_rel) + 1 :]
                    and not question_present(inbox, q)
                ):
                    gone.append((q, answer.path))
        for question_rel, answer_path in gone:
            own = self.files.own_answer(conn, answer_path) if answer_path else None
            if own is not None:
                with contextlib.suppress(OSError, AskvaultError):
                    resolve_inside(self.root, own).unlink()
                    log.info("removed %s: its question %s left the inbox", own, question_rel)
            with write_transaction(conn):
                answer_store.delete_question(conn, question_rel)
                if answer_path:
                    answer_store.delete_answer(conn, answer_path)

    def refresh_asked(self, conn: Connection) -> None:
        """Answer notes the user set `refresh: true` on (issue 14 item 5): the question is
        asked again — its archived note copied back into the inbox, options and all — and
        answered beside the old answer, which is kept with the property removed. Only a
        note that is otherwise untouched (its marker matches with `refresh` left out);
        an edited one is the user's and is left alone."""
        with self._touched_lock:
            touched, self._answers_touched = self._answers_touched, set()
        for rel in sorted(touched):
            try:
                self._refresh(conn, rel)
            except (IndexBusy, DiskFull):
                with self._touched_lock:
                    self._answers_touched.add(rel)
                raise
            except (OSError, AskvaultError) as exc:
                log.warning("could not ask %s again: %s", rel, exc)

    def _refresh(self, conn: Connection, rel: str) -> None:
        row = answer_store.get_answer(conn, rel)
        if row is None or row.status not in REFRESH_STATUSES:
            return
        path = resolve_inside(self.root, rel)
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > self.files.settings.index.max_note_bytes:
            return
        data = path.read_bytes()
        if row.holds(data):
            return  # as askvault wrote it: no refresh asked
        text = data.decode("utf-8", "replace")
        if not is_draft(properties_of(text).get(REFRESH_KEY)):
            return
        owned = owned_note(text, stem_of(rel), ignore=(REFRESH_KEY,))
        if owned is None:
            log.warning(
                "%s asks for a refresh but was edited; it is the user's note now "
                "(drop a question in the inbox to ask again)",
                rel,
            )
            return
        question = self._question_bytes(row, properties_of(text).get("question"))
        if question is None:
            log.warning("%s asks for a refresh but its question is unknown", rel)
            return
        # The property goes first: a crash before the question lands loses the request
        # (visible: no new answer, the property gone), never asks twice.
        kept = sign_note(without_property(text, REFRESH_KEY), owned.question_stem)
        new = kept.encode("utf-8")
        with write_transaction(conn):
            answer_store.put_answer(
                conn,
                replace(row, written_sha256=hashlib.sha256(data).hexdigest(), previous_sha256=""),
            )
        if not self.files.rewrite_own(
            conn,
            path,
            new,
            replace(row, written_sha256=hashlib.sha256(new).hexdigest(), previous_sha256=""),
        ):
            return
        inbox = resolve_inside(self.root, self.inbox_rel)
        inbox.mkdir(parents=True, exist_ok=True)
        asked = write_new_file(inbox / f"{owned.question_stem}.md", question)
        log.info(
            "%s: refresh asked; the question is asked again as %s/%s",
            rel,
            self.inbox_rel,
            asked.name,
        )

    def _question_bytes(self, row: AnswerRow, question: Any) -> bytes | None:
        """The archived question note of `row` (options and all), else its question text."""
        if row.question_path.startswith(self.files.archive_rel + "/"):
            with contextlib.suppress(OSError, AskvaultError):
                archived = resolve_inside(self.root, row.question_path)
                if archived.is_file() and not archived.is_symlink():
                    return archived.read_bytes()
        if isinstance(question, str) and question.strip():
            return (question.strip() + "\n").encode("utf-8")
        return None

    def unfinished_answer(self, conn: Connection, question_rel: str) -> str | None:
        """Our own answering / waiting / failed note of a question with no row, if any."""
        orphan = answer_store.unfinished_answer_of(conn, question_rel)
        if orphan is None:
            orphan = self._adopt_unfinished(conn, question_rel)
        return self.files.own_answer(conn, orphan.path) if orphan else None

    def _adopt_unfinished(self, conn: Connection, question_rel: str) -> AnswerRow | None:
        """An unfinished note of this question that lost its row (`<stem>.md` or
        `<stem> (N).md` whose marker proves it ours), recorded again; else None."""
        stem = stem_of(question_rel)
        try:
            folder = resolve_inside(self.root, self.files.answers_rel)
            names = sorted(
                e.name
                for e in os.scandir(folder)
                if e.name == f"{stem}.md"
                or (e.name.startswith(f"{stem} (") and e.name.endswith(").md"))
            )
        except (OSError, AskvaultError):
            return None
        for name in names:
            rel = f"{self.files.answers_rel}/{name}"
            if answer_store.get_answer(conn, rel) is not None:
                continue
            row = self.files.adopt_own_note(conn, rel)
            if (
                row is not None
                and row.question_path == question_rel
                and row.status in UNFINISHED_STATUSES
            ):
                return row
        return None
