"""Freshness of the daemon's index: how soon an edit is found, and what a burst costs.

With `askvault run` on a copy of ../shared/data/vaults/obsidian-hub (and the Ollama
stand-in of ../shared/tools/minilm_ollama in --hash-embeddings mode), it edits notes
one at a time and measures the time until the new word is found by lexical search
and until its chunk has a vector; then changes 2,000 files at once and measures the
time until all are searchable; then reads the daemon's RSS at idle.

    .venv/bin/python bench/freshness_bench.py [--edits 60] [--burst 2000] [--json]

Targets (issue 3): lexical p95 <= 1.0 s; vector p95 <= 1.0 s plus the embedding call;
burst indexed (apart from embedding) within 30 s; idle RSS <= 200 MB.
Skips (exit 0) when ../shared is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from askvault.adapters import store
from askvault.adapters.db import connect
from askvault.settings import vault_id

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SOURCE_VAULT = SHARED / "data" / "vaults" / "obsidian-hub"
STANDIN = SHARED / "tools" / "minilm_ollama" / "server.py"
EMBED_MODEL = "all-minilm"
POLL_S = 0.005
LOG_LEVEL = os.environ.get("FRESHNESS_LOG_LEVEL", "info")
BURST_POLL_S = 0.5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"the Ollama stand-in did not listen on port {port}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Index:
    """Read-only view of the daemon's index (a WAL reader, as `askvault search` is)."""

    def __init__(self, db_path: Path) -> None:
        self.conn = connect(db_path, readonly=True)

    def chunk_ids(self, word: str) -> list[int]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{word}"',)
            )
        ]

    def notes_matching(self, word: str) -> int:
        return int(
            self.conn.execute(
                "SELECT count(DISTINCT c.note_id) FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
                "WHERE chunks_fts MATCH ?",
                (f'"{word}"',),
            ).fetchone()[0]
        )

    def has_vectors(self, chunk_ids: list[int]) -> bool:
        fp = store.active_fingerprint(self.conn)
        if fp is None or not chunk_ids:
            return False
        marks = ",".join("?" * len(chunk_ids))
        found = self.conn.execute(
            f"SELECT count(*) FROM {fp.bits_table} WHERE chunk_id IN ({marks})", chunk_ids
        ).fetchone()[0]
        return int(found) == len(chunk_ids)

    def pending(self) -> int:
        return store.count_pending(self.conn, store.active_fingerprint(self.conn))


def wait_for(check: Any, timeout_s: float, poll_s: float = POLL_S) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if check():
            return time.monotonic() - started
        time.sleep(poll_s)
    return None


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(edits: int, burst: int, work: Path) -> dict[str, Any]:
    vault, state = work / "vault", work / "state"
    shutil.copytree(SOURCE_VAULT, vault, ignore=shutil.ignore_patterns(".git"))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(STANDIN), "--hash-embeddings", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log_path = work / "daemon.log"
    daemon = None
    try:
        wait_port(port)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASKVAULT_")}
        env.update(
            {
                "OLLAMA_HOST": f"http://127.0.0.1:{port}",
                "ASKVAULT_STATE_DIR": str(state),
                "ASKVAULT_EMBED_MODEL": EMBED_MODEL,
                "XDG_CONFIG_HOME": str(work / "cfg"),
            }
        )
        started = time.monotonic()
        with open(log_path, "wb") as log_file:
            daemon = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "askvault",
                    "run",
                    "--vault",
                    str(vault),
                    "--log-level",
                    LOG_LEVEL,
                ],
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                env=env,
            )
        db_path = state / vault_id(vault.resolve()) / "index.sqlite"
        if wait_for(lambda: "reconciled (start-up)" in log_path.read_text(), 600) is None:
            raise SystemExit("the start-up reconcile did not finish:\n" + log_path.read_text())
        initial_index_s = time.monotonic() - started
        index = Index(db_path)
        wait_for(lambda: index.pending() == 0, 1800)
        initial_total_s = time.monotonic() - started
        notes = sorted(p for p in vault.rglob("*.md") if ".obsidian" not in p.parts)
        lexical: list[float] = []
        vector: list[float] = []
        for i, path in enumerate(notes[:edits]):
            word = f"freshmark{i:04d}q"
            t0 = time.monotonic()
            with open(path, "a", encoding="utf-8") as f:
                f.write(f"\n\nAn edit for the benchmark: {word}.\n")
            lex = wait_for(lambda w=word: bool(index.chunk_ids(w)), 30)
            vec = wait_for(lambda w=word: index.has_vectors(index.chunk_ids(w)), 60)
            if lex is None or vec is None:
                raise SystemExit(f"edit {i} ({path.name}) was not indexed in time")
            lexical.append(lex)
            vector.append(vec + lex)
            time.sleep(0.05)
        burst_paths = notes[edits : edits + burst]
        t0 = time.monotonic()
        for path in burst_paths:
            with open(path, "a", encoding="utf-8") as f:
                f.write("\n\nburstmarkzz\n")
        write_s = time.monotonic() - t0
        # Polled slowly: a reader spinning on a big query would steal the daemon's CPU.
        burst_lex = wait_for(
            lambda: index.notes_matching("burstmarkzz") == len(burst_paths), 300, BURST_POLL_S
        )
        burst_total = wait_for(lambda: index.pending() == 0, 1800, BURST_POLL_S)
        time.sleep(3.0)
        idle_rss = rss_mb(daemon.pid)
        t0 = time.monotonic()
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(30)
        stop_s = time.monotonic() - t0
        index.conn.close()
        log_text = log_path.read_text()
        return {
            "vault_notes": len(notes),
            "initial_index_s": round(initial_index_s, 2),
            "initial_index_and_embed_s": round(initial_total_s, 2),
            "edits": len(lexical),
            "lexical_p50_s": round(statistics.median(lexical), 3),
            "lexical_p95_s": round(percentile(lexical, 0.95), 3),
            "lexical_max_s": round(max(lexical), 3),
            "vector_p50_s": round(statistics.median(vector), 3),
            "vector_p95_s": round(percentile(vector, 0.95), 3),
            "vector_max_s": round(max(vector), 3),
            "burst_files": len(burst_paths),
            "burst_write_s": round(write_s, 2),
            "burst_lexical_s": None if burst_lex is None else round(write_s + burst_lex, 2),
            "burst_embedded_s": None
            if burst_total is None or burst_lex is None
            else round(write_s + burst_lex + burst_total, 2),
            "burst_batches": log_text.count("indexed:"),
            "idle_rss_mb": round(idle_rss, 1),
            "sigterm_exit_code": code,
            "sigterm_exit_s": round(stop_s, 2),
        }
    finally:
        for proc in (daemon, server):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=60)
    parser.add_argument("--burst", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep-log", type=Path, help="copy the daemon's log here")
    args = parser.parse_args()
    if not SOURCE_VAULT.is_dir() or not STANDIN.is_file():
        print(f"skipped: {SOURCE_VAULT} or {STANDIN} is absent")
        return
    with tempfile.TemporaryDirectory(prefix="askvault-fresh-") as tmp:
        try:
            result = run(args.edits, args.burst, Path(tmp))
        finally:
            if args.keep_log and (Path(tmp) / "daemon.log").exists():
                shutil.copy(Path(tmp) / "daemon.log", args.keep_log)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:28} {value}")


if __name__ == "__main__":
    main()
