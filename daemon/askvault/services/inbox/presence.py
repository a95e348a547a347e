"""Is the vault there, and is a question still in its inbox? (issue 15, 13)

A vault moved away or unmounted is logged once, and nothing is written, removed or
forgotten until it is back: every pass of the inbox asks `VaultPresence` first, and the
passes that forget questions whose note left the inbox ask it whether the inbox folder
itself is there.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from askvault.adapters.vault import resolve_inside, undecodable_name
from askvault.errors import AskvaultError
from askvault.services.inbox.clock import SYSTEM_CLOCK, Clock
from askvault.settings import Settings

log = logging.getLogger(__name__)


class VaultPresence:
    """Whether one vault and its inbox folder are there; the change either way is logged
    once."""

    def __init__(self, settings: Settings, clock: Clock = SYSTEM_CLOCK) -> None:
        self.settings = settings
        self.clock = clock
        self.root = settings.vault_path
        self.inbox_rel = f"{settings.queries.folder}/{settings.queries.inbox}"
        self._root_id = _identity(self.root)
        self._gone_since: float | None = None

    def vault_present(self) -> bool:
        """Is the vault there? Its root must be a folder and be the one the worker started
        on, or (moved and put back, copied) hold the `queries/` folder. The change either
        way is logged once; while it is gone nothing is written, removed or forgotten."""
        root_id = _identity(self.root)
        present = root_id is not None and (
            root_id == self._root_id
            or os.path.isdir(os.path.join(self.root, self.settings.queries.folder))
        )
        if present and self._root_id is None:
            self._root_id = root_id
        if not present and self._gone_since is None:
            self._gone_since = self.clock.monotonic()
            log.warning(
                "the vault %s is gone (moved away or unmounted?): questions and answer"
                " notes wait until it is back",
                self.root,
            )
        elif present and self._gone_since is not None:
            log.info(
                "the vault %s is back after %.0f s; unfinished answers are finished",
                self.root,
                self.clock.monotonic() - self._gone_since,
            )
            self._gone_since = None
            self._root_id = root_id
        return present

    def present_inbox(self) -> Path | None:
        """The inbox folder, or None when it is not there (a vault moved away, an
        unmounted drive): passes that forget questions do nothing then."""
        try:
            inbox = resolve_inside(self.root, self.inbox_rel)
        except AskvaultError:
            return None
        return inbox if inbox.is_dir() else None


def question_present(inbox: Path, question_rel: str) -> bool:
    """Is the question `question_rel` (as the index holds it) still a file of `inbox`? A
    name that is not valid UTF-8 is held with U+FFFD in place of its bad bytes: such a
    question is there while a file of the inbox shows as that name."""
    name = question_rel.rsplit("/", 1)[-1]
    if os.path.lexists(inbox / name):
        return True
    if "\ufffd" not in name:
        return False
    try:
        with os.scandir(inbox) as entries:
            for entry in entries:
                bad = undecodable_name(entry.name)
                if bad is not None and bad.path == name:
                    return True
    except OSError:
        return False
    return False


def _identity(root: Path) -> tuple[int, int] | None:
    """(device, inode) of the vault root if it is a folder, else None."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None
