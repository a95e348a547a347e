"""The index's size on disk with 384- and 768-dimension vectors (issue 22 item 5).

Indexes a copy of a vault (default: the Obsidian hub) once per dimension, its vectors from
the repository's fake Ollama (tests/support/fake_ollama.py, hashed word features) serving
that many dimensions on a loopback port: a vector's bytes on disk do not depend on its
values, so this measures the storage of a 768-d model such as nomic-embed-text without
waiting hours for one. Reports the index folder's bytes, the ratio to 384 dims, and the
bytes of each table and index (SQLite's dbstat).

    .venv/bin/python bench/storage_bench.py [--vault obsidian-hub] [--dims 384 768] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, free_port, machine, vault_copy  # noqa: E402
from askvault.adapters.db import connect  # noqa: E402
from askvault.app.clients import OllamaClients  # noqa: E402
from askvault.services.index.index_pass import index_vault  # noqa: E402
from askvault.settings import load_settings  # noqa: E402

FAKE = REPO / "tests" / "support" / "fake_ollama.py"
MODEL = "nomic-embed-text"


def _serve(dim: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "--port", str(port), "--dimension", str(dim)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO / "tests")},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/api/version", timeout=1).read()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the fake Ollama did not start") from None
            time.sleep(0.1)


def _tables(db: Path) -> dict[str, float]:
    """MB per table or index, largest first (dbstat)."""
    conn = connect(db)
    try:
        rows = conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    return {str(name): round(size / 1e6, 2) for name, size in rows if size > 100_000}


def measure(vault: Path, work: Path, dim: int) -> dict[str, object]:
    proc, url = _serve(dim)
    try:
        state = work / f"state-{dim}"
        settings = load_settings(
            None,
            env={
                "ASKVAULT_VAULT": str(vault),
                "ASKVAULT_STATE_DIR": str(state),
                "OLLAMA_HOST": url,
                "ASKVAULT_EMBED_MODEL": MODEL,
            },
        )
        started = time.perf_counter()
        report = index_vault(settings, OllamaClients(settings))
        seconds = time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    if report.pending_embeddings:
        raise RuntimeError(f"{report.pending_embeddings} chunks left without a vector")
    folder = settings.state_path
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return {
        "dim": dim,
        "index_mb": round(total / 1e6, 1),
        "index_s": round(seconds, 1),
        "tables_mb": _tables(settings.db_path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", default="obsidian-hub")
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 768])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with vault_copy(args.vault) as vault, tempfile.TemporaryDirectory() as tmp:
        rows = [measure(vault, Path(tmp), dim) for dim in args.dims]
    base = rows[0]["index_mb"]
    for row in rows:
        row["ratio"] = round(float(row["index_mb"]) / float(base), 3)  # type: ignore[arg-type]
    doc = {"machine": machine(), "vault": args.vault, "load_after": os.getloadavg(), "rows": rows}
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(f"{doc['machine']}; {args.vault}")
    for row in rows:
        print(f"{row['dim']:>4} dims: {row['index_mb']} MB (x{row['ratio']}), {row['index_s']} s")
        for name, mb in row["tables_mb"].items():  # type: ignore[union-attr]
            print(f"       {name:<40} {mb:>8} MB")


if __name__ == "__main__":
    main()
