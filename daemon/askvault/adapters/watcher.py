"""The vault watcher: watchdog events -> debounced, coalesced batches of vault paths.

A path is handed on once it has been quiet for `debounce_s`, and everything
pending goes out together as soon as the whole vault is quiet: a git checkout
or a sync of thousands of files becomes one batch. When events never stop
(a long sync), paths already quiet go out every `max_wait_s`, so a note is
processed at most twice. Atomic saves (temp file + rename) arrive as a move
whose destination is the note: it is indexed once, with its final content.

Only `.md` paths and directories matter here; which notes are ignored is the
indexer's decision (adapters/ignore.py), so the scanner and the watcher agree. The one
other file is Obsidian's `.obsidian/app.json`: a change of it may change the Excluded
files, so its batch asks for a reconcile under the new rules (`rules_changed`).

A watch dies with the folder it watches: a drive unmounted, a share reconnected, a vault
folder deleted and made again. The watcher checks the root's identity (device, inode)
every `ROOT_CHECK_S` and watches the root again when it is another folder now, when the
watched one was deleted and the path is back, or when the caller saw the vault away
(`watch_again`: an unmount reports nothing, and a drive mounted again within a second
can get its device number back); each new watch asks for a reconcile (events of the
time away were never seen).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from askvault.adapters.ignore import APP_JSON, is_note_path

log = logging.getLogger(__name__)

MAX_WAIT_FACTOR = 4
MIN_MAX_WAIT_S = 1.0
OBSERVER_JOIN_S = 2.0
# How often the watcher looks whether its root is still the folder it watches.
ROOT_CHECK_S = 1.0
# Filesystems whose changes made elsewhere (another machine, the host of a VM)
# never reach inotify: network shares, FUSE mounts, VM shared folders.
POLLING_FSTYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ncpfs",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "9p",
        "vboxsf",
        "vmhgfs",
        "prl_fs",
        "davfs",
        "fuse",
        "fuseblk",
        "drvfs",
    }
)
_OVERFLOW_LOGGERS = ("watchdog.observers.inotify_c", "watchdog.observers.inotify")
# Obsidian's folder: made, moved or deleted as a whole (a vault restored), its app.json too.
_OBSIDIAN = APP_JSON.split("/", 1)[0]


@dataclass
class WatchBatch:
    """What changed since the last batch: note paths, folders gone, events lost, and
    whether `.obsidian/app.json` (Obsidian's Excluded files) changed."""

    changed: list[str] = field(default_factory=list)
    dropped_folders: list[str] = field(default_factory=list)
    events_lost: bool = False
    rules_changed: bool = False

    def __bool__(self) -> bool:
        return bool(self.changed or self.dropped_folders or self.events_lost or self.rules_changed)


class Debouncer:
    """Pending paths with their last event time; decides which go out in a batch.

    Thread-safe; the clock is passed in, so the rules are testable without sleeping.
    """

    def __init__(self, debounce_s: float, max_wait_s: float | None = None) -> None:
        self.debounce_s = debounce_s
        self.max_wait_s = (
            max(MIN_MAX_WAIT_S, MAX_WAIT_FACTOR * debounce_s) if max_wait_s is None else max_wait_s
        )
        self._lock = threading.Lock()
        self._paths: dict[str, float] = {}
        self._folders: dict[str, float] = {}
        self._lost = False
        self._rules = False
        self._first = 0.0
        self._last = 0.0

    def _idle(self) -> bool:
        return not self._paths and not self._folders and not self._lost and not self._rules

    def _touch(self, now: float) -> None:
        if self._idle():
            self._first = now
        self._last = now

    def add_path(self, path: str, now: float) -> None:
        """A note path changed (created, modified, deleted, moved from or to)."""
        with self._lock:
            self._touch(now)
            self._paths[path] = now

    def add_dropped_folder(self, folder: str, now: float) -> None:
        """A folder was deleted or moved out of the vault."""
        with self._lock:
            self._touch(now)
            self._folders[folder] = now

    def mark_events_lost(self, now: float) -> None:
        """Events were lost (queue overflow): the batch asks for a full reconcile."""
        with self._lock:
            self._touch(now)
            self._lost = True

    def mark_rules_changed(self, now: float) -> None:
        """`.obsidian/app.json` changed: the batch asks for a reconcile under its rules."""
        with self._lock:
            self._touch(now)
            self._rules = True

    def next_due(self) -> float | None:
        """When `take_due` may next return a batch (a clock value), or None if idle."""
        with self._lock:
            if self._idle():
                return None
            return min(self._last + self.debounce_s, self._first + self.max_wait_s)

    def take_due(self, now: float) -> WatchBatch | None:
        """The batch due at `now`, removed from the pending set; None if nothing is due."""
        with self._lock:
            if self._idle():
                return None
            if now - self._last >= self.debounce_s:
                batch = WatchBatch(
                    sorted(self._paths), sorted(self._folders), self._lost, self._rules
                )
                self._paths.clear()
                self._folders.clear()
                self._lost = self._rules = False
                return batch
            if now - self._first < self.max_wait_s:
                return None
            quiet = lambda d: [k for k, t in d.items() if now - t >= self.debounce_s]  # noqa: E731
            batch = WatchBatch(
                sorted(quiet(self._paths)), sorted(quiet(self._folders)), self._lost, self._rules
            )
            for key in batch.changed:
                del self._paths[key]
            for key in batch.dropped_folders:
                del self._folders[key]
            self._lost = self._rules = False
            rest = list(self._paths.values()) + list(self._folders.values())
            self._first = min(rest) if rest else now
            return batch or None


class EventRouter(FileSystemEventHandler):
    """Turns watchdog events into Debouncer entries of vault-relative POSIX paths."""

    def __init__(
        self, root: Path, debouncer: Debouncer, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.root = os.path.realpath(root)
        self.debouncer = debouncer
        self.clock = clock
        # Set when the watched root itself was deleted or moved away (its watch is dead),
        # or when the caller found the vault away (`VaultWatcher.watch_again`).
        self.watch_lost = threading.Event()

    def relative(self, path: str | bytes) -> str | None:
        """The vault-relative POSIX path of an absolute event path; None if outside the vault."""
        text = os.fsdecode(path)
        if not text:
            return None
        rel = os.path.relpath(text, self.root)
        if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
            return None
        return rel.replace(os.sep, "/")

    def on_any_event(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return
        if event.is_directory and kind in ("deleted", "moved") and self._is_root(event.src_path):
            self.watch_lost.set()
            return
        now = self.clock()
        src = self.relative(event.src_path)
        dest = self.relative(event.dest_path) if kind == "moved" else None
        if APP_JSON in (src, dest) or (kind != "modified" and _OBSIDIAN in (src, dest)):
            self.debouncer.mark_rules_changed(now)
        if event.is_directory:
            self._directory_event(kind, src, dest, now)
            return
        for path in (src, dest):
            if path and is_note_path(path):
                self.debouncer.add_path(path, now)

    def _is_root(self, path: str | bytes) -> bool:
        return os.path.normpath(os.fsdecode(path)) == self.root

    def _directory_event(self, kind: str, src: str | None, dest: str | None, now: float) -> None:
        if kind == "deleted" and src:
            # A deleted folder may arrive without events for the files inside it
            # (a folder moved out of the vault is reported as deleted, alone).
            self.debouncer.add_dropped_folder(src, now)
        elif kind == "moved":
            if src and dest:
                # Re-path every note below: the old path of each is gone, the new
                # one appears; the indexer pairs them as renames (no re-embedding).
                # A note below the old folder missed by this walk is settled by the next
                # reconcile; dropping the old folder here would lose the rename pairing.
                for rel in self._notes_below(dest):
                    self.debouncer.add_path(src + rel[len(dest) :], now)
                    self.debouncer.add_path(rel, now)
            elif src:
                self.debouncer.add_dropped_folder(src, now)
            elif dest:
                for rel in self._notes_below(dest):
                    self.debouncer.add_path(rel, now)
        elif kind == "created" and src:
            # A folder moved in from outside the vault: its notes raise no events.
            for rel in self._notes_below(src):
                self.debouncer.add_path(rel, now)

    def _notes_below(self, rel_dir: str) -> list[str]:
        out: list[str] = []
        base = os.path.join(self.root, rel_dir)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            rel_base = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            out.extend(f"{rel_base}/{name}" for name in filenames if is_note_path(name))
        return out


def filesystem_type(path: Path, mounts_text: str) -> str | None:
    """The fstype of the mount holding `path`, from the text of /proc/mounts."""
    target = os.path.realpath(path)
    best: tuple[int, str] | None = None
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        # /proc/mounts escapes spaces and tabs in mount points as octal.
        point = parts[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), parts[2])
    return best[1] if best else None


def needs_polling(fstype: str | None) -> bool:
    """True for filesystems whose changes inotify may never report."""
    if not fstype:
        return False
    return fstype in POLLING_FSTYPES or fstype.startswith("fuse.")


def choose_watch_mode(mode: str, root: Path, mounts_file: Path = Path("/proc/mounts")) -> str:
    """`events` or `polling`: `mode` unless it is `auto`, then from the vault's filesystem."""
    if mode != "auto":
        return mode
    try:
        fstype = filesystem_type(root, mounts_file.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return "events"
    if needs_polling(fstype):
        log.info("the vault is on a %s filesystem: watching it by polling", fstype)
        return "polling"
    return "events"


class _OverflowListener(logging.Handler):
    """watchdog reports an inotify queue overflow only as a log warning; catch it."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self.on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.on_overflow()


def default_observer(mode: str, poll_interval_s: float) -> BaseObserver:
    """watchdog's polling observer, or its native one (inotify on Linux)."""
    # watchdog's inotify observer warns when a new folder is watched twice (a folder made
    # under a watched one, `queries/inbox` on the first question), with a repr of every
    # watch in the vault: kilobytes of noise in the user's log for a harmless re-register.
    warnings.filterwarnings(
        "ignore",
        message=r"Callback with id .* already exists for watch",
        category=RuntimeWarning,
        module=r"watchdog\.",
    )
    return PollingObserver(timeout=poll_interval_s) if mode == "polling" else Observer()


def _identity(folder: str | Path) -> tuple[int, int] | None:
    """(device, inode) of `folder`, or None when it is not a folder now."""
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


class VaultWatcher:
    """Watches a vault recursively and calls `on_batch(WatchBatch)` from its own thread."""

    def __init__(
        self,
        root: Path,
        on_batch: Callable[[WatchBatch], None],
        *,
        debounce_s: float = 0.3,
        mode: str = "events",
        poll_interval_s: float = 2.0,
        make_observer: Callable[[str, float], BaseObserver] | None = None,
        root_check_s: float = ROOT_CHECK_S,
    ) -> None:
        """`make_observer(mode, poll_interval_s)` builds watchdog's observer (a parameter so
        that a test can stand in for an inotify that refuses to watch); the root's identity
        is checked every `root_check_s` (at most every 0.25 s, the loop's wake-up)."""
        self.root = Path(os.path.realpath(root))
        self.root_check_s = root_check_s
        self._make_observer = make_observer or default_observer
        self.on_batch = on_batch
        self.mode = mode
        self.poll_interval_s = poll_interval_s
        self.debouncer = Debouncer(debounce_s)
        self.router = EventRouter(self.root, self.debouncer)
        self._observer: BaseObserver | None = None
        self._observer_lock = threading.Lock()
        self._root_id: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._listener = _OverflowListener(self._events_lost)

    def start(self) -> None:
        """Start observing; falls back to polling if inotify's watch limit is reached."""
        self._root_id = _identity(self.root)
        try:
            self._observer = self._start_observer(self.mode)
        except OSError as exc:
            if self.mode == "polling":
                raise
            log.warning(
                "cannot watch the vault with inotify (%s): falling back to polling every %.1f s; "
                "raise fs.inotify.max_user_watches to get events again",
                exc,
                self.poll_interval_s,
            )
            self.mode = "polling"
            self._observer = self._start_observer("polling")
            self._events_lost()
        for name in _OVERFLOW_LOGGERS:
            logging.getLogger(name).addHandler(self._listener)
        self._thread = threading.Thread(target=self._flush_loop, name="askvault-watch", daemon=True)
        self._thread.start()

    def _start_observer(self, mode: str) -> BaseObserver:
        observer = self._make_observer(mode, self.poll_interval_s)
        try:
            observer.schedule(self.router, str(self.root), recursive=True)
            observer.start()
        except BaseException:
            observer.stop()
            raise
        return observer

    def _events_lost(self, why: str = "inotify queue overflow") -> None:
        log.warning("file events were lost (%s): reconciling the vault", why)
        self.debouncer.mark_events_lost(time.monotonic())
        self._wake.set()

    def watch_again(self) -> None:
        """The vault was found away (missing, empty: an unmounted drive): watch its root
        again as soon as it is a folder, even one with the old identity."""
        self.router.watch_lost.set()

    def _check_root(self) -> None:
        """Watch the root again if it is another folder than the one watched (remounted,
        made again), or if the watched one was deleted and the path is a folder again."""
        current = _identity(self.root)
        if current is None or (current == self._root_id and not self.router.watch_lost.is_set()):
            return  # still the watched folder, or gone for now (the indexer says so)
        with self._observer_lock:
            if self._stop.is_set():
                return
            old = self._observer
            self.router.watch_lost.clear()
            try:
                self._observer = self._start_observer(self.mode)
            except OSError as exc:
                self._observer = old  # tried again at the next check
                log.warning("cannot watch the vault folder %s again yet: %s", self.root, exc)
                return
            self._root_id = current
        if old is not None:
            old.stop()
            old.join(OBSERVER_JOIN_S)
        log.info("the vault folder %s is back: watching it again", self.root)
        self._events_lost("the vault folder was away")

    def _flush_loop(self) -> None:
        next_root_check = time.monotonic() + self.root_check_s
        while not self._stop.is_set():
            due = self.debouncer.next_due()
            wait_s = 0.25 if due is None else max(0.0, due - time.monotonic())
            self._wake.wait(min(wait_s, 0.25))
            self._wake.clear()
            if time.monotonic() >= next_root_check:
                next_root_check = time.monotonic() + self.root_check_s
                try:
                    self._check_root()
                except Exception:
                    log.exception("checking the vault folder failed")
            batch = self.debouncer.take_due(time.monotonic())
            if batch:
                try:
                    self.on_batch(batch)
                except Exception:
                    log.exception("handling a batch of file events failed")

    def stop(self) -> None:
        """Stop observing and join the threads (bounded); pending events are dropped."""
        self._stop.set()
        self._wake.set()
        for name in _OVERFLOW_LOGGERS:
            logging.getLogger(name).removeHandler(self._listener)
        with self._observer_lock:
            observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(OBSERVER_JOIN_S)
        if self._thread is not None:
            self._thread.join(OBSERVER_JOIN_S)
            self._thread = None
