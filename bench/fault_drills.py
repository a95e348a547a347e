"""The fault drills (tests/faults, issue 6) at full size: `python bench/fault_drills.py`.

CI runs them small (`pytest -m faults`, in .ci/run); this runs the heavy ones at the
sizes of the issue (5,000 files at once, 30 kill -9 trials on a bigger vault) by
setting the drills' size variables and calling pytest on tests/faults.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FULL_SIZES = {
    "ASKVAULT_DRILL_BURST_FILES": "5000",
    "ASKVAULT_DRILL_KILL_TRIALS": "30",
    "ASKVAULT_DRILL_KILL_NOTES": "600",
}


def main(argv: list[str]) -> int:
    """Run `pytest -m faults tests/faults` with the full sizes; extra args go to pytest."""
    env = {**os.environ, **{k: os.environ.get(k, v) for k, v in FULL_SIZES.items()}}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "faults",
        "-q",
        "-o",
        "timeout=900",
        str(ROOT / "tests" / "faults"),
        *argv,
    ]
    print("sizes:", ", ".join(f"{k}={env[k]}" for k in FULL_SIZES), flush=True)
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
