"""Helpers of the end-to-end daemon tests: a real `askvault run` subprocess on a temp vault.

`DaemonProcess` runs one daemon; `IndexProbe` reads
what the index holds. The probe reads the index database read-only for now;
`search_files` is the one place to switch to `askvault search --json`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from askvault.adapters import store
from askvault.adapters.db import connect
from askvault.settings import vault_id
from support.fake_ollama import FAKE_EMBED_MODEL

E2E_DEBOUNCE_S = 0.05
START_TIMEOUT_S = 15.0


class DaemonProcess:
    """One `askvault run` subprocess; stderr (the log) goes to a file."""

    def __init__(
        self,
        vault: Path,
        state_dir: Path,
        ollama_url: str,
        log_path: Path,
        env_extra: dict[str, str],
    ) -> None:
        self.vault = vault
        self.log_path = log_path
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("ASKVAULT_") and k not in ("OLLAMA_HOST", "JOURNAL_STREAM")
        }
        env.update(
            {
                "ASKVAULT_STATE_DIR": str(state_dir),
                "OLLAMA_HOST": ollama_url,
                "ASKVAULT_EMBED_MODEL": FAKE_EMBED_MODEL,
                "XDG_CONFIG_HOME": str(state_dir / "config"),
                "ASKVAULT_DAEMON__DEBOUNCE_S": str(E2E_DEBOUNCE_S),
                "ASKVAULT_OLLAMA__TIMEOUT_S": "10",
                **env_extra,
            }
        )
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "askvault", "run", "--vault", str(vault)],
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=env,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_for_log(self, pattern: str, timeout_s: float = 10.0, count: int = 1) -> str:
        """Wait until `pattern` (a regex) matched `count` log lines; return the log."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.log()
            if len(re.findall(pattern, text)) >= count:
                return text
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no log line {pattern!r} (x{count}); the log:\n{self.log()}")

    def wait_ready(self) -> None:
        """Wait for the start-up reconcile to finish."""
        self.wait_for_log(r"reconciled \(start-up\)", START_TIMEOUT_S)

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout_s: float) -> int:
        return self.proc.wait(timeout_s)

    def close(self) -> None:
        """Kill the process if it still runs, reap it, close the log."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._log.close()


class IndexProbe:
    """What the daemon's index holds, read the way another command would (WAL reader)."""

    def __init__(self, vault: Path, state_dir: Path) -> None:
        self.db_path = state_dir / vault_id(vault.resolve()) / "index.sqlite"

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if not self.db_path.exists():
            return []
        conn = connect(self.db_path, readonly=True)
        try:
            return [tuple(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    def note_paths(self) -> list[str]:
        return [r[0] for r in self._query("SELECT path FROM notes ORDER BY path")]

    def search_files(self, word: str) -> set[str]:
        """Files whose text matches `word` lexically (later: `askvault search --json`)."""
        return {
            r[0]
            for r in self._query(
                "SELECT DISTINCT n.path FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
                "JOIN notes n ON n.id = c.note_id WHERE chunks_fts MATCH ?",
                (f'"{word}"',),
            )
        }

    def pending_embeddings(self) -> int:
        """Chunks without a vector of the model being filled (all chunks before any vector)."""
        if not self.db_path.exists():
            return 0
        conn = connect(self.db_path, readonly=True)
        try:
            live = store.live_fingerprints(conn)
            target = next((fp for fp in live if fp.state == "building"), None)
            return store.count_pending(conn, target or store.active_fingerprint(conn))
        finally:
            conn.close()

    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def duplicate_paths(self) -> list[str]:
        return [
            r[0] for r in self._query("SELECT path FROM notes GROUP BY path HAVING count(*) > 1")
        ]


def wait_until(check: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Poll `check` until true; return the seconds it took, or fail saying `what`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if check():
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout_s} s: {what}")


@contextlib.contextmanager
def launched_daemons(
    vault: Path,
    state_dir: Path,
    ollama_url: str,
    log_dir: Path,
    base_env: dict[str, str] | None = None,
) -> Iterator[Callable[..., DaemonProcess]]:
    """A `start(ready=True, **env)` function for `askvault run` subprocesses; every daemon
    it started is killed and reaped on exit, whatever the test did."""
    started: list[DaemonProcess] = []

    def start(ready: bool = True, **env_extra: str) -> DaemonProcess:
        daemon = DaemonProcess(
            vault,
            state_dir,
            ollama_url,
            log_dir / f"daemon-{len(started)}.log",
            {**(base_env or {}), **env_extra},
        )
        started.append(daemon)
        if ready:
            daemon.wait_ready()
        return daemon

    try:
        yield start
    finally:
        for daemon in started:
            if daemon.proc.poll() is None:
                daemon.signal(signal.SIGKILL)
            daemon.close()
