"""`askvault index` as a whole process on a vault already indexed: unchanged, and after one
edit, for one checkout or two side by side (a branch and its base), alternating which goes
first. Prints each row's median of `--runs` runs and every run.

    .venv/bin/python bench/reindex_bench.py --tree base=/path/to/base/daemon \\
        --tree branch=daemon [--runs 7] [--vault obsidian-hub]

Each `--tree NAME=DIR` names a checkout's `daemon/` folder (put first on PYTHONPATH), so two
versions run with the same interpreter and packages. Vectors come from
../shared/tools/minilm_ollama in --hash-embeddings mode (fast, functional vectors: this
measures askvault's own work); each tree has its own copy of the vault and its own index.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA, machine, median, require_shared, standin_ollama  # noqa: E402

EDITED_NOTE = "00 - Start here.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=DAEMON_DIR")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--vault", default="obsidian-hub")
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    source = DATA / "vaults" / args.vault
    require_shared(source)
    with tempfile.TemporaryDirectory(prefix="askvault-reindex-") as tmp, standin_ollama() as url:
        root = Path(tmp)
        for name in trees:
            shutil.copytree(source, root / name / "vault", symlinks=True)
            (root / name / "run").mkdir(mode=0o700)

        def index(name: str) -> float:
            env = {
                k: v for k, v in os.environ.items() if not k.startswith(("ASKVAULT_", "OLLAMA_"))
            }
            env.update(
                PYTHONPATH=str(Path(trees[name]).resolve()),
                OLLAMA_HOST=url,
                ASKVAULT_EMBED_MODEL="all-minilm",
                ASKVAULT_STATE_DIR=str(root / name / "state"),
                XDG_CONFIG_HOME=str(root / name / "config"),
                XDG_RUNTIME_DIR=str(root / name / "run"),
            )
            vault = str(root / name / "vault")
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "askvault", "index", "--vault", vault, "--json"],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            elapsed = time.monotonic() - started
            if done.returncode != 0:
                raise SystemExit(f"{name}: askvault index failed: {done.stderr.strip()}")
            return elapsed

        for name in trees:
            print(f"cold index ({name}): {index(name):.1f} s", flush=True)
        rows: dict[tuple[str, str], list[float]] = {
            (n, r): [] for r in ("unchanged", "one edit") for n in trees
        }
        for run in range(args.runs):
            order = list(trees) if run % 2 == 0 else list(trees)[::-1]
            for name in order:
                rows[(name, "unchanged")].append(index(name))
            for name in order:
                with contextlib.suppress(OSError):
                    with open(root / name / "vault" / EDITED_NOTE, "a", encoding="utf-8") as fh:
                        fh.write(f"\nAn edit of run {run}.\n")
                rows[(name, "one edit")].append(index(name))
    print(f"{machine()}; {args.vault}; {args.runs} runs; load {os.getloadavg()[0]:.1f}")
    for (name, row), times in rows.items():
        shown = ", ".join(f"{t:.3f}" for t in times)
        print(f"{row:10} {name:10} median {median(times):.3f} s  [{shown}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
