"""Configured-glob matching on the Obsidian hub vault's paths (6,571 files, read-only):
askvault's matcher (adapters/ignore.py) against pathspec's gitignore matcher.

    .venv/bin/python bench/ignore_bench.py [--runs 15]

Two measures, medians of `--runs`, the rules compiled inside each run:
- the reconcile's walk: each folder checked once (and pruned when ignored), each file of a
  kept folder checked (os.walk included; its time alone is printed too);
- every path checked on its own with all its folders (as the watcher's batches are).
Both matchers must reach the same decisions; the script says so. pathspec is not a
dependency of askvault (it comes with mypy, in the dev tools).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pathspec  # noqa: E402

from _common import DATA, machine, median, require_shared  # noqa: E402

# The glob step alone, without the name patterns and hidden files that both would share.
from askvault.adapters.ignore import _glob_reason, build_ignore_rules  # noqa: E402

VAULT = DATA / "vaults" / "obsidian-hub"
# Rules a user of that vault might set: templates, an inbox, drawings, drafts, attachments.
GLOBS = [
    "*.excalidraw.md",
    "Templates/",
    "**/drafts/**",
    "/06 - Inbox/*.md",
    "**/Unlisted/",
    "*[Cc]onflict*.md",
    "00 - Contribute to the Obsidian Hub/02 Attachments/",
    "node_modules/",
    "*.canvas",
    "Untitled?.md",
    "**/Attachments/*.png",
    "*.bak",
]


def walk_only(root: Path) -> list[str]:
    return [name for _dirpath, _dirs, files in os.walk(root) for name in files]


def walk_askvault(root: Path) -> list[str]:
    rules = build_ignore_rules(None, extra_globs=GLOBS, internal_folders=())
    ignored = []
    for dirpath, dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root).as_posix()
        parts = [] if rel == "." else rel.split("/")
        for name in list(dirs):
            if _glob_reason([*parts, name], rules, is_folder=True):
                dirs.remove(name)
                ignored.append("/".join([*parts, name]) + "/")
        ignored += [
            "/".join([*parts, name])
            for name in files
            if _glob_reason([*parts, name], rules, is_folder=False)
        ]
    return sorted(ignored)


def walk_pathspec(root: Path) -> list[str]:
    spec = pathspec.GitIgnoreSpec.from_lines(GLOBS)
    ignored = []
    for dirpath, dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        for name in list(dirs):
            if spec.check_file(prefix + name + "/").include:
                dirs.remove(name)
                ignored.append(prefix + name + "/")
        ignored += [prefix + name for name in files if spec.check_file(prefix + name).include]
    return sorted(ignored)


def each_askvault(paths: list[str]) -> list[bool]:
    rules = build_ignore_rules(None, extra_globs=GLOBS, internal_folders=())
    out = []
    for path in paths:
        parts = path.split("/")
        out.append(
            any(_glob_reason(parts[: i + 1], rules, is_folder=True) for i in range(len(parts) - 1))
            or _glob_reason(parts, rules, is_folder=False) is not None
        )
    return out


def each_pathspec(paths: list[str]) -> list[bool]:
    spec = pathspec.GitIgnoreSpec.from_lines(GLOBS)
    return [spec.check_file(path).include is True for path in paths]


def timed(fn: Callable[[], object], runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        began = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - began)
    return median(times) * 1000, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    require_shared(VAULT)
    paths = sorted(str(p.relative_to(VAULT).as_posix()) for p in VAULT.rglob("*") if p.is_file())
    print(
        f"{machine()}; pathspec {pathspec.__version__}; {len(paths)} files, "
        f"{len(GLOBS)} globs; medians of {runs} runs"
    )
    base, _ = timed(lambda: walk_only(VAULT), runs)
    ours, ours_found = timed(lambda: walk_askvault(VAULT), runs)
    theirs, theirs_found = timed(lambda: walk_pathspec(VAULT), runs)
    print(
        f"reconcile walk: os.walk alone {base:.1f} ms; askvault {ours:.1f} ms, "
        f"pathspec {theirs:.1f} ms; same decisions: {ours_found == theirs_found}"
    )
    ours, ours_each = timed(lambda: each_askvault(paths), runs)
    theirs, theirs_each = timed(lambda: each_pathspec(paths), runs)
    print(
        f"every path on its own: askvault {ours:.1f} ms, pathspec {theirs:.1f} ms; "
        f"same decisions: {ours_each == theirs_each}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
