"""Start-up of the commands that print a JSON document, this tree against a git revision.

    .venv/bin/python bench/startup_bench.py --base main [--runs 31] [--vault PATH]

Three figures, each a median over fresh interpreters (both trees compiled to bytecode
first, as an installed package is):

1. imports: the CPU time of importing what `status` and a words-only `search` import
   (their services and, in this tree, their typed documents), the two trees alternating;
2. the document layer alone: this tree's document modules against `import pydantic`, the
   floor of any design that would build the documents as pydantic models;
3. whole processes: `--help`, `status --json` and `search WORD --json` on a words-only
   index of the vault (built once under a temporary state folder), the two trees in
   pairs (each first in every other pair), with the median of the per-pair ratios.

Ollama is pointed at a closed loopback port, so `status` probes it and fails fast, and the
search answers from words without importing the Ollama client.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, REPO, free_port, machine, median, require_shared  # noqa: E402

# What each command imports to build its document (a tree without a documents package
# built them in its services).
IMPORTS = {
    "status": ["askvault.services.admin.status"],
    "search": ["askvault.services.retrieval.search", "askvault.services.documents.search"],
}
# What both trees load before the measured import: the CLI and what every command uses.
PRELUDE = "import askvault.cli.main, askvault.app.clients"
# Each document module, after what it builds on (the search document on the search service).
DOCUMENTS = {
    "askvault.services.documents.status": "askvault.records, askvault.adapters.lockfile",
    "askvault.services.documents.search": "askvault.services.retrieval.search",
}


def cpu_ms_of_import(tree: Path, prelude: str, module: str) -> float:
    """CPU ms of `import module` in a fresh interpreter on `tree`, after `prelude`."""
    code = (
        f"{prelude}\nimport time\nt = time.process_time()\nimport {module}\n"
        "print((time.process_time() - t) * 1000)"
    )
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr)
    return float(out.stdout)


def wall_s(tree: Path, args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "askvault", *args],
        env=dict(env, PYTHONPATH=str(tree)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - started


def _pair(
    here: Path, base: Path, command: list[str], env: dict[str, str], *, flip: bool
) -> tuple[float, float]:
    """(this tree's wall s, base's), run in turn; `flip` runs the base first (every other
    pair, so that neither tree always runs on the cache the other warmed)."""
    if flip:
        b = wall_s(base, command, env)
        return wall_s(here, command, env), b
    a = wall_s(here, command, env)
    return a, wall_s(base, command, env)


def _exists(tree: Path, module: str) -> bool:
    return (tree / (module.replace(".", "/") + ".py")).exists()


def base_tree(rev: str, into: Path) -> Path:
    """The `daemon/` folder of `rev`, extracted under `into`."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "daemon"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "daemon"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="git revision to compare against")
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--vault", type=Path, default=DATA / "vaults" / "obsidian-hub")
    parser.add_argument("--query", default="plugin")
    args = parser.parse_args()
    require_shared(args.vault)
    here = REPO / "daemon"
    print(f"# {machine()}, load {os.getloadavg()[0]:.1f}, {args.runs} runs, base {args.base}")
    with tempfile.TemporaryDirectory(prefix="askvault-startup-") as tmp:
        base = base_tree(args.base, Path(tmp))
        for tree in (here, base):
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True)
        trees = {"this tree": here, "base": base}

        print("\n## imports (CPU ms, median)\n")
        for name, modules in IMPORTS.items():
            found: dict[str, list[float]] = {k: [] for k in trees}
            for _ in range(args.runs):
                for label, tree in trees.items():
                    present = [m for m in modules if _exists(tree, m)]
                    found[label].append(cpu_ms_of_import(tree, PRELUDE, ", ".join(present)))
            here_ms, base_ms = median(found["this tree"]), median(found["base"])
            print(
                f"- {name}: base {base_ms:.2f}, this tree {here_ms:.2f} ({here_ms - base_ms:+.2f})"
            )

        print("\n## the document layer alone (CPU ms, median)\n")
        for module, needs in DOCUMENTS.items():
            prelude = f"{PRELUDE}, {needs}, askvault.core.schema"
            runs = [cpu_ms_of_import(here, prelude, module) for _ in range(args.runs)]
            print(f"- {module}: {median(runs):.2f}")
        runs = [cpu_ms_of_import(here, PRELUDE, "askvault.core.schema") for _ in range(args.runs)]
        print(f"- askvault.core.schema: {median(runs):.2f}")
        runs = [cpu_ms_of_import(here, PRELUDE, "pydantic") for _ in range(args.runs)]
        print(f"- pydantic (import alone, no model yet): {median(runs):.2f}")

        env = dict(
            os.environ,
            ASKVAULT_VAULT=str(args.vault),
            ASKVAULT_STATE_DIR=str(Path(tmp) / "state"),
            OLLAMA_HOST=f"http://127.0.0.1:{free_port()}",  # closed: words only
        )
        subprocess.run(
            [sys.executable, "-m", "askvault", "index"],
            env=dict(env, PYTHONPATH=str(here)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        print("\n## whole processes (wall s, median; ratio: median of per-pair ratios)\n")
        for command in (["--help"], ["status", "--json"], ["search", args.query, "--json"]):
            pairs = [_pair(here, base, command, env, flip=i % 2 == 1) for i in range(args.runs)]
            a, b = median([p[0] for p in pairs]), median([p[1] for p in pairs])
            ratio = statistics.median(p[0] / p[1] for p in pairs)
            print(
                f"- `askvault {' '.join(command)}`: base {b:.3f}, this tree {a:.3f}, ratio {ratio:.3f}"
            )


if __name__ == "__main__":
    main()
