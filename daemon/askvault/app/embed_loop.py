"""The background embedding thread: drains the backlog, backs off while Ollama is away.

It owns its own SQLite connection (the indexing thread has another; BEGIN
IMMEDIATE and the busy timeout serialise their writes). Between two batches it
checks the stop flag, so shutdown waits at most for one embed call, and the
daemon does not even wait for that (the batch's transaction has not begun).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from askvault.adapters import store
from askvault.adapters.db import BUSY_TIMEOUT_S, Connection, is_disk_full
from askvault.app.activity_board import ActivityBoard
from askvault.app.db_tuning import connect_for_daemon
from askvault.core.backoff import Backoff
from askvault.errors import IndexBusy, OllamaError
from askvault.records import Embedder, ModelClients
from askvault.services.index.calibration import calibrate_cutoff
from askvault.services.index.embedding import (
    EmbedReport,
    drain_backlog,
    embed_waiting_reason,
    embedding_target,
    record_embed_waiting,
    target_fingerprint,
)
from askvault.services.index.foreground import ForegroundWork
from askvault.settings import Settings

log = logging.getLogger(__name__)

IDLE_CHECK_S = 60.0
PROGRESS_LOG_S = 30.0


class _DrainProgress:
    """A drain's texts so far (stored vectors and recorded failures alike): on the activity
    board at each batch, in the log every PROGRESS_LOG_S."""

    def __init__(self, board: ActivityBoard, model: str, pending: Callable[[], int]) -> None:
        self.board, self.model, self.pending = board, model, pending
        self.started = self.logged_at = time.monotonic()
        self.texts = 0

    def stored(self, count: int) -> None:
        self.texts += count
        self.board.embedding(self.model, self.texts, time.monotonic() - self.started)
        if time.monotonic() - self.logged_at >= PROGRESS_LOG_S:
            self.logged_at = time.monotonic()
            log.info("embedding: %d texts so far, %d chunks waiting", self.texts, self.pending())


class EmbedLoop:
    """`run(stop)` in a thread; `wake()` after new chunks were written. Its embedder comes
    from `clients`, once, and is closed when the loop ends."""

    def __init__(
        self,
        settings: Settings,
        clients: ModelClients,
        *,
        backoff: Backoff | None = None,
        idle_check_s: float = IDLE_CHECK_S,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        activity: ActivityBoard | None = None,
        foreground: ForegroundWork | None = None,
    ) -> None:
        self.settings = settings
        # What the drain gives way to: a question being answered, its word hits first.
        self.foreground = foreground
        self.activity = activity or ActivityBoard(None)
        self.busy_timeout_s = busy_timeout_s
        self.clients = clients
        self.backoff = backoff or Backoff()
        self.idle_check_s = idle_check_s
        self._wake = threading.Event()
        # forget_fingerprint runs on the indexing thread, in the middle of a drain maybe:
        # the flag and the row it clears change together, under this lock.
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._fresh_client = False  # set by forget_fingerprint: the next drain makes one
        self._fp: store.FingerprintRow | None = None
        self._reason: str | None = None
        self._target = embedding_target(settings.ollama.host, settings.ollama.embed_model)

    def wake(self) -> None:
        """New text may wait for a vector: drain soon (ignored while backing off)."""
        self._wake.set()

    def forget_fingerprint(self) -> None:
        """Ask the model for its fingerprint again before the next drain, from a new client
        (a client keeps the fingerprint it found): the model may have been re-pulled, or
        its vectors changed length. Called after each reconcile, as `askvault index` asks
        a new client on each pass."""
        with self._lock:
            self._fresh_client = True
            self._fp = None

    def run(self, stop: threading.Event) -> None:
        """Drain whenever woken (and every `idle_check_s`) until `stop` is set."""
        conn = connect_for_daemon(
            Path(self.settings.db_path), stop, busy_timeout_s=self.busy_timeout_s, what="embedding"
        )
        if conn is None:
            return
        try:
            self._reason = embed_waiting_reason(conn, self._target)
            self._wake.set()  # a backlog may be left from before a restart
            while not stop.is_set():
                self._wake.wait(self.idle_check_s)
                self._wake.clear()
                delay = self._drain(conn, stop)
                while delay is not None and not stop.is_set():
                    stop.wait(delay)
                    if stop.is_set():
                        break
                    delay = self._drain(conn, stop)
        finally:
            conn.close()
            if self._embedder is not None:
                self._embedder.close()

    def _drain(self, conn: Connection, stop: threading.Event) -> float | None:
        """One drain of the backlog; the delay before retrying, or None when done."""
        if stop.is_set():
            return None
        log.debug("embedding: draining the backlog")
        progress = _DrainProgress(
            self.activity, self.settings.ollama.embed_model, lambda: self._pending(conn)
        )
        try:
            embedder, fp = self._ready(conn)
            # One drain per wake-up: it reads the backlog once and rescans only when it
            # has emptied it, so a one-note edit costs one embed call and two scans.
            report = drain_backlog(
                conn,
                embedder,
                fp,
                batch_size=self.settings.ollama.embed_batch_size,
                batch_seconds=self.settings.ollama.embed_batch_seconds,
                should_stop=stop.is_set,
                progress=progress.stored,
                foreground=self.foreground,
            )
            if report.promoted:
                with self._lock:
                    self._fp = None  # the next drain asks for the new active row
            if not stop.is_set():
                # A model never measured gets its distance cut-off from the vault once its
                # vectors are complete (a few cheap queries when there is nothing to do);
                # an Ollama failure here waits and retries as a failed drain does.
                calibrate_cutoff(
                    conn,
                    self.settings,
                    embedder,
                    should_stop=stop.is_set,
                    foreground=self.foreground,
                )
        except OllamaError as exc:
            return self._failed(conn, exc, progress.texts)
        except IndexBusy as exc:
            # Another writer holds the index: the vectors of this group are embedded again
            # on the next try (their texts are still pending), nothing is lost.
            return self._put_off(exc.message)
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            # The batch rolled back; the backlog is intact: retry once space returns.
            return self._put_off(f"the disk is full ({exc})")
        finally:
            self.activity.embedding_done()  # the drain ended, whichever way
        self._succeeded(conn, report, progress.started)
        return None

    def _ready(self, conn: Connection) -> tuple[Embedder, store.FingerprintRow]:
        """The drain's embedder (a new one after `forget_fingerprint`) and the target
        model's fingerprint row (asked of the model when not known)."""
        with self._lock:
            fresh, self._fresh_client = self._fresh_client, False
            fp = self._fp  # a local: a drain must not see it turn None half-way
        if fresh and self._embedder is not None:
            self._embedder.close()
            self._embedder = None
        embedder = self._embedder
        if embedder is None:
            embedder = self._embedder = self.clients.embedder()
        if fp is None:
            fp = target_fingerprint(conn, embedder)
            with self._lock:
                # Forgotten while the model was asked (a reconcile ended meanwhile): the
                # answer may be the old model's, so the next drain asks a new client.
                if not self._fresh_client:
                    self._fp = fp
        return embedder, fp

    def _put_off(self, why: str) -> float:
        """A drain stopped by the index (busy, full disk): the delay before the next."""
        delay = self.backoff.failed()
        log.warning("embedding waits: %s; retrying in %.0f s", why, delay)
        return delay

    def _succeeded(self, conn: Connection, report: EmbedReport, started: float) -> None:
        """After a drain that ended well: the backoff reset, a waiting reason cleared."""
        self.backoff.succeeded()
        if self._reason:
            try:
                self._set_reason(conn, None)
            except IndexBusy:
                return  # cleared on the next drain
            log.info("embedding resumed: Ollama answers again")
        if report.texts_embedded:
            log.info(
                "embedded %d texts in %d batches in %.2f s; %d chunks waiting",
                report.texts_embedded,
                report.batches,
                time.monotonic() - started,
                self._pending(conn),
            )

    def _failed(self, conn: Connection, exc: OllamaError, texts: int) -> float:
        delay = self.backoff.failed()
        with self._lock:
            self._fp = None
        reason = exc.message + (f" ({exc.hint})" if exc.hint else "")
        if reason != self._reason:
            log.warning(
                "embedding waits: %s; words are still searchable; retrying with backoff "
                "(1 s doubling to %.0f s)",
                reason,
                self.backoff.max_s,
            )
            try:
                self._set_reason(conn, reason)
            except IndexBusy:
                pass  # status shows the reason once the index is free; the retry sets it
        else:
            log.debug("embedding still waits (%s); next try in %.0f s", reason, delay)
        if texts:
            log.info("embedded %d texts before Ollama failed", texts)
        return delay

    def _set_reason(self, conn: Connection, reason: str | None) -> None:
        record_embed_waiting(conn, self._target, reason)
        self._reason = reason

    def _pending(self, conn: Connection) -> int:
        fp = self._fp
        return store.count_pending(conn, fp) if fp else 0
