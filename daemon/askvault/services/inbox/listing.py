"""Which question of the inbox is next: the listing of `queries/inbox/` and its settling.

A note is taken once it has settled: unchanged for `queries.settle_s`, by its file time
or, when that is ahead (another machine's clock, a sync tool), since this inbox first saw
its current bytes. Of the settled notes the oldest that `QuestionSchedule` lets through is
next (not put off, not skipped until its bytes change); a name SQLite cannot hold is said
once per version of the file and left alone.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from askvault.adapters.vault import TEMP_PREFIX, resolve_inside, undecodable_name
from askvault.errors import AskvaultError
from askvault.services.inbox.clock import Clock
from askvault.services.inbox.schedule import QuestionSchedule, Signature
from askvault.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QuestionFile:
    """A question note of the inbox as listed: vault-relative path, path, signature."""

    rel: str
    abs_path: Path
    sig: Signature


class InboxListing:
    """Lists one vault's inbox and picks the question to answer next."""

    def __init__(self, settings: Settings, schedule: QuestionSchedule, clock: Clock) -> None:
        self.root = settings.vault_path
        self.inbox_rel = f"{settings.queries.folder}/{settings.queries.inbox}"
        self.settle_s = settings.queries.settle_s
        self.schedule = schedule
        self.clock = clock
        # When this inbox first saw each question's current bytes (monotonic seconds).
        self._first_seen: dict[str, tuple[Signature, float]] = {}

    def next_question(self) -> QuestionFile | None:
        """The oldest settled question that is due, or None."""
        schedule = self.schedule
        try:
            folder = resolve_inside(self.root, self.inbox_rel)
            entries = list(os.scandir(folder))
        except (OSError, AskvaultError):
            return None
        now_mono, now_wall = self.clock.monotonic(), self.clock.time()
        due: list[tuple[int, str, QuestionFile]] = []
        present = set()
        for entry in entries:
            name = entry.name
            if not name.lower().endswith(".md") or name.startswith((".", TEMP_PREFIX)):
                continue
            rel = f"{self.inbox_rel}/{name}"
            present.add(rel)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            sig = (st.st_size, st.st_mtime_ns, st.st_ino)
            bad_name = undecodable_name(rel)
            if bad_name is not None:
                # Its rows could not be stored (SQLite holds UTF-8 text): said once per
                # version of the file, then left alone; the other questions go on.
                if not schedule.is_skipped(rel, sig):
                    schedule.skip(rel, sig)
                    log.warning(
                        "question %s is not answered: %s; rename it", bad_name.path, bad_name.reason
                    )
                continue
            seen = self._first_seen.get(rel)
            if seen is None or seen[0] != sig:
                self._first_seen[rel] = seen = (sig, now_mono)
            quiet_s = max(now_wall - st.st_mtime_ns / 1e9, now_mono - seen[1])
            if quiet_s < self.settle_s or schedule.is_skipped(rel, sig):
                continue
            if not schedule.is_due(rel):
                continue
            due.append((st.st_mtime_ns, name, QuestionFile(rel, Path(entry.path), sig)))
        for rel in [
            r for r in self._first_seen if r not in present and not schedule.is_finishing(r)
        ]:
            del self._first_seen[rel]
        schedule.forget_absent(present)
        return min(due)[2] if due else None
