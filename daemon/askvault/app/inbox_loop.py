"""The question inbox's thread: lists `queries/inbox/`, waits for notes to settle, and hands
each settled question to `services/inbox.Inbox`, which answers it.

It owns its own SQLite connection (not tuned down like the writers': answering runs
searches). Each pass marks stale answers, finishes answered questions whose note vanished,
forgets unfinished ones that left the inbox, takes refreshes, then answers the oldest
question that has been unchanged for `queries.settle_s` and is due. A busy index (another
writer) or a full disk backs off with the one `Backoff`; the watcher's `notice` and the
indexing thread's `on_notes_changed` wake it early.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from askvault.adapters.db import BUSY_TIMEOUT_S
from askvault.adapters.vault import TEMP_PREFIX, resolve_inside, undecodable_name
from askvault.app.db_tuning import connect_for_daemon
from askvault.core.backoff import BACKOFF_FIRST_S, BACKOFF_MAX_S, Backoff
from askvault.errors import AskvaultError, DiskFull, IndexBusy
from askvault.records import ModelClients
from askvault.services.inbox import Inbox, QuestionFile
from askvault.services.question_schedule import Signature
from askvault.settings import Settings

log = logging.getLogger(__name__)

POLL_S = 0.25
VAULT_GONE_POLL_S = 1.0


class InboxWorker:
    """Answers the question notes of one vault's inbox on its own thread (the daemon's
    Worker protocol); `inbox` does the answering, this the listing, settling and waking."""

    def __init__(
        self,
        settings: Settings,
        clients: ModelClients,
        *,
        backoff_first_s: float = BACKOFF_FIRST_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
    ) -> None:
        self.settings = settings
        self.inbox = Inbox(
            settings, clients, backoff_first_s=backoff_first_s, backoff_max_s=backoff_max_s
        )
        self.busy_timeout_s = busy_timeout_s
        self.backoff_first_s = backoff_first_s
        self.backoff_max_s = backoff_max_s
        self._wake = threading.Event()
        # When this thread first saw each question's current bytes: a note whose mtime is
        # ahead (another machine's clock, a sync tool) settles `settle_s` after that.
        self._first_seen: dict[str, tuple[Signature, float]] = {}

    def notice(self, paths: list[str]) -> None:
        """Vault-relative paths under queries/ changed: look at the inbox again soon, and
        at changed answer notes (a `refresh: true` set in Obsidian)."""
        touched = {p for p in paths if p.startswith(self.inbox.answers_rel + "/")}
        if touched:
            self.inbox.note_answers_touched(touched)
        if touched or any(p.startswith(self.inbox.inbox_rel + "/") for p in paths):
            self._wake.set()

    def on_notes_changed(self, changed: list[str], deleted: list[str]) -> None:
        """Indexed notes changed or vanished: answers citing them become stale (on our thread)."""
        if changed or deleted:
            self.inbox.queue_changes(changed, deleted)
            self._wake.set()

    def run(self, stop_event: threading.Event) -> None:
        """Answer questions until `stop_event` is set; returns promptly after it is."""
        conn = connect_for_daemon(
            self.settings.db_path,
            stop_event,
            busy_timeout_s=self.busy_timeout_s,
            backoff=self._backoff(),
            what="the inbox",
            tune=False,
        )
        if conn is None:
            return
        inbox = self.inbox
        busy = self._backoff()
        try:
            inbox.prepare(conn)
            while not stop_event.is_set():
                if not inbox.vault_present():
                    stop_event.wait(VAULT_GONE_POLL_S)
                    continue
                try:
                    inbox.apply_stale_marks(conn)
                except (IndexBusy, DiskFull) as exc:
                    # Another writer holds the index: the marks wait (kept), questions too.
                    delay = busy.failed()
                    log.warning("stale marks wait: %s; retrying in %.0f s", exc.message, delay)
                    stop_event.wait(delay)
                    continue
                busy.succeeded()
                inbox.finish_vanished(conn)
                inbox.forget_vanished(conn)
                inbox.refresh_asked(conn)
                question = self._next_question()
                if question is not None:
                    try:
                        inbox.process(conn, question, stop_event)
                    except Exception as exc:  # noqa: BLE001 - one question never stops the worker
                        inbox.put_off(question.rel, exc)
                    continue
                if not self._wake.is_set():
                    stop_event.wait(POLL_S)
                self._wake.clear()
        finally:
            conn.close()

    def _backoff(self) -> Backoff:
        return Backoff(self.backoff_first_s, self.backoff_max_s)

    def _next_question(self) -> QuestionFile | None:
        """The oldest settled question that is due, or None."""
        inbox, schedule = self.inbox, self.inbox.schedule
        try:
            folder = resolve_inside(inbox.root, inbox.inbox_rel)
            entries = list(os.scandir(folder))
        except (OSError, AskvaultError):
            return None
        now_mono, now_wall = time.monotonic(), time.time()
        settle = self.settings.queries.settle_s
        due: list[tuple[int, str, QuestionFile]] = []
        present = set()
        for entry in entries:
            name = entry.name
            if not name.lower().endswith(".md") or name.startswith((".", TEMP_PREFIX)):
                continue
            rel = f"{inbox.inbox_rel}/{name}"
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
                if not schedule.is_skipped(rel, sig):
                    schedule.skip(rel, sig)
                    log.warning(
                        "question %s is not answered: %s; rename it", bad_name.path, bad_name.reason
                    )
                continue
            seen = self._first_seen.get(rel)
            if seen is None or seen[0] != sig:
                self._first_seen[rel] = seen = (sig, now_mono)
            settled = now_wall - st.st_mtime_ns / 1e9 >= settle or now_mono - seen[1] >= settle
            if not settled or schedule.is_skipped(rel, sig):
                continue
            if not schedule.is_due(rel, now_mono):
                continue
            due.append((st.st_mtime_ns, name, QuestionFile(rel, Path(entry.path), sig)))
        for rel in [
            r for r in self._first_seen if r not in present and not schedule.is_finishing(r)
        ]:
            del self._first_seen[rel]
        schedule.forget_absent(present)
        return min(due)[2] if due else None
