"""The daemon's activity file: what `askvault run` is doing right now (a reconcile's
progress, the embedding rate), for `askvault status` in another process.

A small JSON file beside the index (`<state>/activity.json`), replaced atomically on each
update, so a reader sees one whole version. Not in the index: a reconcile writes inside
one batch transaction, and a progress write of its own would have to wait for it. The
file names the daemon's pid; a reader trusts it only while that pid holds the vault's
lock, so a file left by a killed daemon says nothing.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from askvault.adapters.vault_writes import write_atomic

ACTIVITY_FILE = "activity.json"


@dataclass(frozen=True)
class ScanActivity:
    """A reconcile under way: why, how many notes of the vault it has been through."""

    reason: str
    done: int
    total: int
    started_at: float  # unix time


@dataclass(frozen=True)
class EmbedActivity:
    """The drain under way: texts embedded since it began, in how long."""

    model: str
    texts: int
    seconds: float
    updated_at: float  # unix time


@dataclass(frozen=True)
class Activity:
    pid: int
    scan: ScanActivity | None = None
    embedding: EmbedActivity | None = None


def activity_path(state_path: Path) -> Path:
    return state_path / ACTIVITY_FILE


def write_activity(path: Path, activity: Activity) -> None:
    """Replace the file with `activity` (a failure to write is no reason to stop work)."""
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps(asdict(activity), sort_keys=True).encode("utf-8"))


def remove_activity(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def read_activity(path: Path) -> Activity | None:
    """The activity file, or None when it is missing or not one (a reader never fails)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        scan, embedding = data.get("scan"), data.get("embedding")
        return Activity(
            pid=int(data["pid"]),
            scan=ScanActivity(
                str(scan["reason"]), int(scan["done"]), int(scan["total"]),
                float(scan["started_at"]),
            ) if scan else None,
            embedding=EmbedActivity(
                str(embedding["model"]), int(embedding["texts"]), float(embedding["seconds"]),
                float(embedding["updated_at"]),
            ) if embedding else None,
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
