"""Memory settings of the daemon's own SQLite connections.

adapters/db.py sizes every connection for fast searches (64 MiB page cache, 256 MiB
of memory-mapped reads). The daemon only writes and keeps two connections open for
days, so it trades read speed for a small resident size (issue 3: idle RSS <= 200 MB).
"""

from __future__ import annotations

from askvault.adapters.db import Connection

DAEMON_CACHE_KIB = 8_192
DAEMON_MMAP_BYTES = 0


def tune_for_daemon(conn: Connection) -> Connection:
    """Shrink the page cache and turn off memory-mapped reads on `conn`; return it."""
    conn.execute(f"PRAGMA cache_size = -{DAEMON_CACHE_KIB}")
    conn.execute(f"PRAGMA mmap_size = {DAEMON_MMAP_BYTES}")
    return conn
