"""The daemon (`askvault run`): keeps the index fresh by itself until told to stop.

Threads, each with one job:
- the watcher's flush thread hands debounced batches of paths to the WorkQueue
  (and inbox paths to the workers);
- the indexing thread (one SQLite connection) takes the queue: reconciles,
  dropped folders, paths — whole notes per transaction (db.WriteBatch);
- the embedding thread (another connection) drains the backlog with backoff;
- one thread per Worker (the question inbox, the search socket);
- APScheduler's thread only queues the periodic reconcile, so two reconciles
  never run at once.
The main thread holds the lock, handles signals and waits.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

from apscheduler.schedulers.background import BackgroundScheduler

from askvault.adapters.activity import activity_path
from askvault.adapters.db import BUSY_TIMEOUT_S, Connection, connect, is_disk_full
from askvault.adapters.lockfile import VaultLock
from askvault.adapters.ollama_http import host_refusal
from askvault.adapters.watcher import VaultWatcher, WatchBatch, choose_watch_mode
from askvault.app.activity_board import ActivityBoard
from askvault.app.clients import OllamaClients
from askvault.app.db_tuning import connect_for_daemon
from askvault.app.embed_loop import EmbedLoop
from askvault.app.inbox_loop import InboxWorker
from askvault.app.search_socket import SearchSocketWorker
from askvault.app.signals import install_signal_handlers
from askvault.app.work import IndexWork, WorkQueue
from askvault.core.backoff import Backoff
from askvault.errors import DiskFull, IndexBusy, StoreError, VaultUnavailable
from askvault.records import ModelClients
from askvault.services.inbox.inbox import Inbox
from askvault.services.index.foreground import ForegroundWork
from askvault.services.index.indexer import IndexReport, drop_folder, index_paths, reconcile
from askvault.settings import Settings

log = logging.getLogger(__name__)

SHUTDOWN_BUDGET_S = 2.5  # of the 5 s allowed: leaves room for the interpreter to exit
INDEX_SLICE = 200
TAKE_TIMEOUT_S = 0.5


class Worker(Protocol):
    """A daemon extension with its own thread (the question inbox is one)."""

    def notice(self, paths: list[str]) -> None:
        """Paths under the queries folder changed (called from the watcher's thread)."""

    def on_notes_changed(self, changed: list[str], deleted: list[str]) -> None:
        """The index changed (called from the indexing thread after each batch)."""

    def run(self, stop_event: threading.Event) -> None:
        """The worker's loop; must return promptly once `stop_event` is set."""


def default_workers(
    settings: Settings,
    *,
    clients: ModelClients | None = None,
    busy_timeout_s: float = BUSY_TIMEOUT_S,
    foreground: ForegroundWork | None = None,
) -> list[Worker]:
    """The workers `askvault run` starts: the question inbox and the search socket (their
    clients from `clients`, by default the composition root's). `foreground` is the
    daemon's: the embedding thread gives way while the inbox answers a question."""
    clients = clients or OllamaClients(settings)
    inbox = Inbox(settings, clients, foreground=foreground)
    return [
        InboxWorker(inbox, busy_timeout_s=busy_timeout_s),
        SearchSocketWorker(settings, clients),
    ]


def build_daemon(settings: Settings) -> Daemon:
    """The daemon `askvault run` starts: its default workers, and one ForegroundWork shared
    by the inbox and the embedding thread (the backlog gives way to a question)."""
    busy = settings.daemon.busy_timeout_s
    foreground = ForegroundWork()
    workers = default_workers(settings, busy_timeout_s=busy, foreground=foreground)
    return Daemon(settings, workers, busy_timeout_s=busy, foreground=foreground)


class Daemon:
    """`run()` blocks until SIGTERM/SIGINT (or `stop()`); returns the exit code. The
    embedding thread's clients come from `clients`, by default the composition root's."""

    def __init__(
        self,
        settings: Settings,
        workers: Sequence[Worker] = (),
        *,
        clients: ModelClients | None = None,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        activity: ActivityBoard | None = None,
        foreground: ForegroundWork | None = None,
    ) -> None:
        self.settings = settings
        self.workers = list(workers)
        self.busy_timeout_s = busy_timeout_s
        self.stop_event = threading.Event()
        # Set once start() has returned: the index migrated, the vault watched, every
        # thread running (what a test, or a readiness notice, waits for).
        self.started = threading.Event()
        self.work = WorkQueue()
        # What status shows of the work under way (a reconcile's progress, the rate).
        self.activity = activity or ActivityBoard(activity_path(settings.state_path))
        self.embed = EmbedLoop(
            settings,
            clients or OllamaClients(settings),
            busy_timeout_s=busy_timeout_s,
            activity=self.activity,
            foreground=foreground,
        )
        self.failure: BaseException | None = None
        self._threads: list[threading.Thread] = []
        self._watcher: VaultWatcher | None = None
        self._scheduler: BackgroundScheduler | None = None
        self._queries_prefix = settings.queries.folder.strip("/") + "/"
        self._retry_at: float | None = None
        self._retry_backoff = Backoff()

    # -- lifecycle --------------------------------------------------------------------------

    def run(self) -> int:
        """Hold the vault's lock, run until stopped, shut down within 5 s; 0 or 1.

        Raises RemoteHostRefused (exit 1, its hint naming the setting) when the
        configuration refuses the Ollama host: settings are read once, so the daemon could
        only retry a refusal that can never change, with every question left waiting."""
        refusal = host_refusal(self.settings.ollama.host, self.settings.ollama.allow_remote_ollama)
        if refusal is not None:
            raise refusal
        lock = VaultLock(self.settings.vault_path, "run", state_dir=self.settings.state_path.parent)
        lock.acquire()  # VaultLocked: the CLI prints it and exits 1
        restore: Callable[[], None] = _nothing_to_restore
        try:
            if threading.current_thread() is threading.main_thread():
                restore = install_signal_handlers(
                    self._on_stop_signal, lambda: self.request_reconcile("SIGHUP")
                )
            try:
                self.start()
            except BaseException:
                self.shutdown()
                raise
            while not self.stop_event.wait(0.5):
                pass
            return self.shutdown()
        finally:
            restore()
            lock.release()

    def start(self) -> None:
        """Open (and migrate) the index, start every thread, queue the start-up reconcile."""
        try:
            # Fails fast on a corrupt or unopenable index (exit 1, with its hint).
            connect(self.settings.db_path, busy_timeout_s=self.busy_timeout_s).close()
        except (IndexBusy, DiskFull) as exc:
            log.warning("%s; the daemon starts and its threads wait for the index", exc.message)
        mode = choose_watch_mode(self.settings.daemon.watch_mode, self.settings.vault_path)
        # Watch before the start-up reconcile scans: a file saved between its scan and a
        # later watch was seen by neither until the periodic reconcile (an e2e test saw it).
        self._watcher = VaultWatcher(
            self.settings.vault_path,
            self._on_batch,
            debounce_s=self.settings.daemon.debounce_s,
            mode=mode,
            poll_interval_s=self.settings.daemon.poll_interval_s,
        )
        self._watcher.start()
        self.work.request_reconcile("start-up")
        self._spawn("askvault-index", self._index_loop)
        self._spawn("askvault-embed", partial(self.embed.run, self.stop_event))
        for i, worker in enumerate(self.workers):
            self._spawn(f"askvault-worker-{i}", partial(worker.run, self.stop_event), fatal=False)
        self._scheduler = BackgroundScheduler(daemon=True)
        self._scheduler.add_job(
            self.request_reconcile,
            "interval",
            args=["periodic"],
            seconds=self.settings.daemon.reconcile_interval_s,
            coalesce=True,
            max_instances=1,
            id="reconcile",
        )
        self._scheduler.start()
        log.info(
            "askvault daemon started (pid %d): vault %s, index %s, watching by %s",
            os.getpid(),
            self.settings.vault_path,
            self.settings.db_path,
            self._watcher.mode,
        )
        self.started.set()

    def stop(self) -> None:
        """Ask every thread to stop (safe from any thread or a signal handler)."""
        self.stop_event.set()

    def shutdown(self) -> int:
        """Stop the watcher and scheduler, join threads within the budget; the exit code."""
        self.stop_event.set()
        self.embed.wake()  # it may be idle, waiting to be woken
        deadline = time.monotonic() + SHUTDOWN_BUDGET_S
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
        if self._watcher is not None:
            self._watcher.stop()
        for thread in self._threads:
            thread.join(max(0.05, deadline - time.monotonic()))
            if thread.is_alive():
                # A daemon thread stuck in an embed call: its batch's transaction has
                # not begun, so leaving it behind loses nothing.
                log.debug("thread %s did not stop in time; leaving it", thread.name)
        self.activity.close()
        if self.failure is not None:
            log.error("askvault daemon stopped on an error: %s", self.failure)
            return 1
        log.info("askvault daemon stopped")
        return 0

    def _on_stop_signal(self, signum: int) -> None:
        self.stop_event.set()

    def _spawn(self, name: str, target: Callable[[], None], *, fatal: bool = True) -> None:
        def body() -> None:
            try:
                target()
            except BaseException as exc:  # noqa: BLE001 - logged, and the daemon told
                log.exception("%s failed", name)
                if fatal:
                    self.failure = exc
                    self.stop_event.set()

        thread = threading.Thread(target=body, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    # -- producers --------------------------------------------------------------------------

    def request_reconcile(self, reason: str) -> None:
        """Queue a full reconcile (start-up, periodic, SIGHUP, lost events)."""
        if reason == "SIGHUP":
            log.info("reconcile requested (SIGHUP)")
        self.work.request_reconcile(reason)

    def _on_batch(self, batch: WatchBatch) -> None:
        inbox = [p for p in batch.changed if p.startswith(self._queries_prefix)]
        if inbox:
            for worker in self.workers:
                try:
                    worker.notice(inbox)
                except Exception:
                    log.exception("worker %r failed to take notice of %d paths", worker, len(inbox))
        self.work.add_paths(batch.changed, batch.dropped_folders)
        if batch.events_lost:
            self.request_reconcile("events lost")
        elif batch.rules_changed:
            # Obsidian's Excluded files may have changed: the reconcile drops the notes
            # now excluded and adds those no longer excluded, at once.
            self.request_reconcile(".obsidian/app.json changed")

    # -- the indexing thread ----------------------------------------------------------------

    def _index_loop(self) -> None:
        conn = connect_for_daemon(
            self.settings.db_path,
            self.stop_event,
            busy_timeout_s=self.busy_timeout_s,
            what="indexing",
        )
        if conn is None:
            return
        try:
            while not self.stop_event.is_set():
                if self._retry_at is not None and time.monotonic() >= self._retry_at:
                    self._retry_at = None
                    self.request_reconcile("retry after a failed batch")
                work = self.work.take(TAKE_TIMEOUT_S)
                if work is not None and not self.stop_event.is_set():
                    self._do_work(conn, work)
        finally:
            conn.close()

    def _do_work(self, conn: Connection, work: IndexWork) -> None:
        report = IndexReport()
        try:
            if work.reconcile:
                reason = work.reconcile

                def progress(done: int, total: int) -> None:
                    self.activity.scanning(reason, done, total)

                try:
                    reconcile(
                        conn,
                        self.settings,
                        should_stop=self.stop_event.is_set,
                        report=report,
                        progress=progress,
                    )
                finally:
                    self.activity.scan_done()
                self.embed.forget_fingerprint()
                # Ask the model now, not at the embedder's next idle check: a re-pulled
                # model's vectors are built from this reconcile on, changed notes or not.
                self.embed.wake()
                _log_report(f"reconciled ({work.reconcile})", report, always=True)
            else:
                self._index_batch(conn, work, report)
                _log_report("indexed", report)
        except (IndexBusy, DiskFull, VaultUnavailable) as exc:
            # Another writer holds the index, the disk is full, or the vault looks
            # unmounted: the work waits, the daemon does not stop. What was committed
            # before is kept; a reconcile redoes the rest, backing off while it lasts.
            if isinstance(exc, VaultUnavailable) and self._watcher is not None:
                self._watcher.watch_again()  # the old watch died with the unmounted drive
            self._retry_later(exc.message)
        except StoreError:
            raise  # the database is unusable: the daemon stops (exit 1)
        except Exception as exc:
            # One bad batch must not stop the daemon; the next reconcile retries it.
            log.exception("indexing a batch of %d paths failed", len(work.paths))
            if is_disk_full(exc):
                # Its transaction rolled back: redo the work soon, not at the next
                # periodic reconcile, backing off while the disk stays full.
                self._retry_later(str(exc))
        else:
            if self._retry_backoff.waiting:
                log.info("indexing resumed")
            self._retry_backoff.succeeded()
        self._notify(report)

    def _retry_later(self, reason: str) -> None:
        """Queue a reconcile after the next backoff delay (1 s doubling to 60 s)."""
        delay = self._retry_backoff.failed()
        self._retry_at = time.monotonic() + delay
        log.warning("indexing waits: %s; retrying in %.0f s", reason, delay)

    def _notify(self, report: IndexReport) -> None:
        """Wake the embedder and tell the workers what changed (also after a partial pass)."""
        if report.chunks_written or report.added or report.changed:
            self.embed.wake()
        changed = sorted(set(report.added) | set(report.changed))
        if (changed or report.deleted) and self.workers:
            for worker in self.workers:
                try:
                    worker.on_notes_changed(changed, list(report.deleted))
                except Exception:
                    log.exception("worker %r failed on a change of the index", worker)

    def _index_batch(self, conn: Connection, work: IndexWork, total: IndexReport) -> None:
        started = time.monotonic()
        try:
            # Folders first: a folder deleted and re-created in one batch (a git
            # checkout) keeps the notes that exist again.
            for folder in work.dropped_folders:
                drop_folder(conn, self.settings, folder, report=total)
            for i in range(0, len(work.paths), INDEX_SLICE):
                if self.stop_event.is_set():
                    break
                part = IndexReport()
                try:
                    index_paths(conn, self.settings, work.paths[i : i + INDEX_SLICE], report=part)
                finally:
                    _merge(total, part)
        finally:
            total.seconds = time.monotonic() - started


def _merge(total: IndexReport, part: IndexReport) -> None:
    total.added += part.added
    total.changed += part.changed
    total.deleted += part.deleted
    total.renamed += part.renamed
    total.touched += part.touched
    total.rechunked += part.rechunked
    total.unchanged += part.unchanged
    total.skipped += part.skipped
    total.chunks_written += part.chunks_written


def _log_report(what: str, report: IndexReport, *, always: bool = False) -> None:
    level = logging.INFO if (always or report.changes or report.renamed) else logging.DEBUG
    added, deleted = report.counts()
    log.log(
        level,
        "%s: %d added, %d changed, %d deleted, %d renamed, %d unchanged, %d skipped; "
        "%d chunks written in %.2f s",
        what,
        added,
        len(report.changed),
        deleted,
        len(report.renamed),
        report.unchanged + report.touched + report.rechunked,
        len(report.skipped),
        report.chunks_written,
        report.seconds,
    )


def _nothing_to_restore() -> None:
    """No signal handlers were installed (the daemon runs off the main thread, in tests)."""
