"""The question inbox's thread: runs `services/inbox.Inbox` step by step, and waits.

It owns its own SQLite connection (not tuned down like the writers': answering runs
searches). Between steps it waits `POLL_S` unless woken: by the watcher's `notice` (a
question or an answer note changed) or by the indexing thread's `on_notes_changed`
(answers to mark stale). While the vault is gone it looks again every
`VAULT_GONE_POLL_S`; while another writer holds the index (or the disk is full) it backs
off with the one `Backoff`. What a step does, and when a question has settled, is the
Inbox's.
"""

from __future__ import annotations

import logging
import threading

from askvault.adapters.db import BUSY_TIMEOUT_S
from askvault.app.db_tuning import connect_for_daemon
from askvault.core.backoff import Backoff
from askvault.errors import DiskFull, IndexBusy
from askvault.services.inbox.inbox import Inbox

log = logging.getLogger(__name__)

POLL_S = 0.25
VAULT_GONE_POLL_S = 1.0


class InboxWorker:
    """Runs one vault's `Inbox` on its own thread (the daemon's Worker protocol): the
    inbox does the work, this the waiting and the waking."""

    def __init__(self, inbox: Inbox, *, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.inbox = inbox
        self.busy_timeout_s = busy_timeout_s
        self._wake = threading.Event()

    def notice(self, paths: list[str]) -> None:
        """Vault-relative paths under queries/ changed: look at the inbox again soon."""
        if self.inbox.notice(paths):
            self._wake.set()

    def on_notes_changed(self, changed: list[str], deleted: list[str]) -> None:
        """Indexed notes changed or vanished: answers citing them become stale (on our thread)."""
        if changed or deleted:
            self.inbox.queue_changes(changed, deleted)
            self._wake.set()

    def run(self, stop_event: threading.Event) -> None:
        """Answer questions until `stop_event` is set; returns promptly after it is."""
        conn = connect_for_daemon(
            self.inbox.settings.db_path,
            stop_event,
            busy_timeout_s=self.busy_timeout_s,
            what="the inbox",
            tune=False,
        )
        if conn is None:
            return
        busy = Backoff()
        try:
            self.inbox.prepare(conn)
            while not stop_event.is_set():
                try:
                    step = self.inbox.step(conn, stop_event.is_set)
                except (IndexBusy, DiskFull) as exc:
                    # Another writer holds the index: the marks wait (kept), questions too.
                    delay = busy.failed()
                    log.warning("stale marks wait: %s; retrying in %.0f s", exc.message, delay)
                    stop_event.wait(delay)
                    continue
                busy.succeeded()
                if step == "vault gone":
                    stop_event.wait(VAULT_GONE_POLL_S)
                elif step == "idle":
                    if not self._wake.is_set():
                        stop_event.wait(POLL_S)
                    self._wake.clear()
        finally:
            conn.close()
