"""Memory and WAL settings of the daemon's own SQLite connections.

adapters/db.py sizes every connection for fast searches (64 MiB page cache, 256 MiB
of memory-mapped reads). The daemon only writes and keeps two connections open for
days, so it trades read speed for a small resident size (issue 3: idle RSS <= 200 MB).

A long-lived reader (a search left open) stops checkpoints from resetting the WAL,
so it grows during a big index; SQLite never shrinks it by itself. The journal size
limit truncates it back after the next checkpoint once the reader is gone (issue 6).
"""

from __future__ import annotations

from askvault.adapters.db import Connection

DAEMON_CACHE_KIB = 8_192
DAEMON_MMAP_BYTES = 0
DAEMON_WAL_LIMIT_BYTES = 16 * 1024 * 1024


def tune_for_daemon(conn: Connection) -> Connection:
    """Shrink the page cache, turn off memory-mapped reads, cap the idle WAL; return `conn`."""
    conn.execute(f"PRAGMA cache_size = -{DAEMON_CACHE_KIB}")
    conn.execute(f"PRAGMA mmap_size = {DAEMON_MMAP_BYTES}")
    conn.execute(f"PRAGMA journal_size_limit = {DAEMON_WAL_LIMIT_BYTES}")
    return conn
