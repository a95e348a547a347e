"""Shared helpers of the benchmarks: data paths, the Ollama stand-in, statistics."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DATA = SHARED / "data"
STANDIN = SHARED / "tools" / "minilm_ollama" / "server.py"


def require_shared(path: Path) -> None:
    """Exit cleanly (status 0, a message) when ../shared data is absent."""
    if not path.exists():
        print(f"skipped: {path} is absent (benchmarks need ../shared/data)")
        sys.exit(0)


def free_port(start: int | None = None) -> int:
    """A free loopback port: any, or the first free one from `start` on."""
    for port in range(start, start + 200) if start else [0]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError(f"no free loopback port from {start}")


@contextlib.contextmanager
def standin_ollama(
    *,
    hashed: bool = True,
    cache: Path | None = None,
    python: str | None = None,
    first_port: int | None = None,
) -> Iterator[str]:
    """Run ../shared/tools/minilm_ollama on a free loopback port (from `first_port` on,
    if given); yield its URL."""
    require_shared(STANDIN)
    port = free_port(first_port)
    args = [python or sys.executable, str(STANDIN), "--port", str(port)]
    if hashed:
        args.append("--hash-embeddings")
    if cache:
        args += ["--cache", str(cache)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/api/version", timeout=1).read()
                break
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "the Ollama stand-in did not start: "
                        + (proc.stderr.read().decode() if proc.stderr else "")
                    ) from exc
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def vault_copy(name: str) -> Iterator[Path]:
    """A temporary copy of ../shared/data/vaults/<name> (the original is read-only)."""
    source = DATA / "vaults" / name
    require_shared(source)
    with tempfile.TemporaryDirectory(prefix="askvault-bench-") as tmp:
        target = Path(tmp) / name
        shutil.copytree(source, target, symlinks=True)
        for path in target.rglob("*"):
            with contextlib.suppress(OSError):
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
        yield target


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def machine() -> str:
    """One line naming this machine for docs/benchmarks.md."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores ({cpu}), Python {sys.version.split()[0]}"
