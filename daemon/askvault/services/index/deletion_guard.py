"""Is the vault really there? A guard before the indexer deletes notes (issue 15 item 8).

An unmounted drive or share leaves its mount point behind: an empty folder (or a
few stray files) on another device. A reconcile of it would delete every note row
and, with them, askvault's ownership of every answer note. So deletions are refused
— logged, nothing deleted, retried until the vault is back — when:

- the vault root is missing or not a folder;
- the vault holds no note at all while the index holds some;
- the root's device changed since the last reconcile and more than half of the
  indexed notes would go (a different file system sits at the vault's place).

Deleting every note on purpose is rare; `askvault index --allow-empty` makes that
reconcile go through (docs/decisions.md). The refusal is kept in the `meta` table
(`vault_unavailable`), so `askvault status` and `doctor` show it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from askvault.adapters import meta
from askvault.adapters.db import Connection, write_transaction
from askvault.errors import IndexBusy, VaultUnavailable

# With the root on another device, a reconcile that would keep fewer than this share of the
# indexed notes is refused: a copy of the vault onto a new disk keeps them all.
DEVICE_CHANGE_MIN_KEPT = 0.5
ALLOW_HINT = (
    "mount the drive or share again (the daemon retries by itself); if you really "
    "deleted every note, stop the daemon and run `askvault index --allow-empty`"
)


def root_device(root: Path) -> int:
    """The device of the vault root; VaultUnavailable if it is missing or not a folder."""
    try:
        st = os.stat(root)
    except OSError as exc:
        raise VaultUnavailable(
            f"the vault folder {root} is missing ({exc.strerror}): an unmounted drive or "
            "share? nothing is deleted from the index",
            ALLOW_HINT,
        ) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise VaultUnavailable(
            f"the vault {root} is not a folder any more; nothing is deleted", ALLOW_HINT
        )
    return st.st_dev


def check_reconcile(
    conn: Connection,
    root: Path,
    *,
    indexed: int,
    found: int,
    kept: int,
    allow_empty: bool = False,
) -> int:
    """Refuse (VaultUnavailable) a reconcile that would delete notes of a vault that looks
    unmounted: `indexed` notes in the index, `found` on disk, `kept` of the indexed ones
    still there. Returns the root's device, to record once the reconcile is done."""
    device = root_device(root)
    if allow_empty or indexed == 0 or kept == indexed:
        return device
    if found == 0:
        _refuse(
            conn,
            f"the vault {root} holds no notes while the index holds {indexed}: an "
            "unmounted drive or share? nothing is deleted",
        )
    recorded = meta.vault_device(conn)
    if recorded is not None and recorded != device and kept < indexed * DEVICE_CHANGE_MIN_KEPT:
        _refuse(
            conn,
            f"the vault {root} is on another device than at the last reconcile and "
            f"only {kept} of its {indexed} notes are there: another drive mounted (or "
            "none)? nothing is deleted",
        )
    return device


def check_deletions(conn: Connection, root: Path) -> None:
    """Before the watcher's deletions: refuse when the root is missing, empty, or on
    another device than at the last reconcile (every file of an unmounted vault
    looks deleted)."""
    device = root_device(root)
    recorded = meta.vault_device(conn)
    if recorded is not None and recorded != device:
        _refuse(
            conn,
            f"the vault {root} is on another device than at the last reconcile; "
            "its deletions wait for the next reconcile",
        )
    with os.scandir(root) as entries:
        if next(entries, None) is None:
            _refuse(
                conn, f"the vault {root} is empty: an unmounted drive or share? nothing is deleted"
            )


def record_present(conn: Connection, device: int) -> None:
    """Inside the reconcile's last transaction: the vault was there, on `device`."""
    meta.set_vault_device(conn, device)
    if meta.vault_refusal(conn):
        meta.set_vault_refusal(conn, None)


def refusal_of(conn: Connection) -> str | None:
    """Why the last reconcile was refused, or None once the vault is back."""
    return meta.vault_refusal(conn)


def _refuse(conn: Connection, reason: str) -> None:
    try:
        with write_transaction(conn):
            meta.set_vault_refusal(conn, reason)
    except IndexBusy:
        pass  # the refusal stands; status learns of it at the next try
    raise VaultUnavailable(reason, ALLOW_HINT)
