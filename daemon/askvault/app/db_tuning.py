"""The daemon's own SQLite connections: memory and WAL settings, and patience with writers.

adapters/db.py sizes every connection for fast searches (64 MiB page cache, 256 MiB
of memory-mapped reads). The daemon only writes and keeps two connections open for
days, so it trades read speed for a small resident size (issue 3: idle RSS <= 200 MB).

A long-lived reader (a search left open) stops checkpoints from resetting the WAL,
so it grows during a big index; SQLite never shrinks it by itself. The journal size
limit truncates it back after the next checkpoint once the reader is gone (issue 6).

Another writer (an `sqlite3` shell, a backup tool) may hold the index longer than the
busy timeout; the daemon then waits with backoff and tries again, it never exits (issue 15).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from askvault.adapters.db import BUSY_TIMEOUT_S, Connection, connect, set_memory_limits
from askvault.core.backoff import Backoff
from askvault.errors import DiskFull, IndexBusy

log = logging.getLogger(__name__)

DAEMON_CACHE_KIB = 8_192
DAEMON_MMAP_BYTES = 0
DAEMON_WAL_LIMIT_BYTES = 16 * 1024 * 1024


def tune_for_daemon(conn: Connection) -> Connection:
    """Shrink the page cache, turn off memory-mapped reads, cap the idle WAL; return `conn`."""
    set_memory_limits(
        conn,
        cache_kib=DAEMON_CACHE_KIB,
        mmap_bytes=DAEMON_MMAP_BYTES,
        wal_limit_bytes=DAEMON_WAL_LIMIT_BYTES,
    )
    return conn


def connect_for_daemon(
    path: Path,
    stop: threading.Event,
    *,
    busy_timeout_s: float = BUSY_TIMEOUT_S,
    backoff: Backoff | None = None,
    what: str = "the daemon",
    tune: bool = True,
) -> Connection | None:
    """A connection (tuned unless `tune` is off: the inbox's reads are searches), waiting
    with backoff while another writer holds a migration out or the disk is full; None if
    `stop` is set first. Other StoreErrors (corrupt) propagate."""
    backoff = backoff or Backoff()
    while not stop.is_set():
        try:
            conn = connect(path, busy_timeout_s=busy_timeout_s)
            return tune_for_daemon(conn) if tune else conn
        except (IndexBusy, DiskFull) as exc:
            delay = backoff.failed()
            log.warning("%s waits: %s; retrying in %.0f s", what, exc.message, delay)
            stop.wait(delay)
    return None
