"""Which question of the inbox is next: the listing of `queries/inbox/` and its settling.

A note is taken once it has settled: unchanged for `queries.settle_s`, by its file time
or, when that is ahead (another machine's clock, a sync tool), since this inbox first saw
its current bytes. Of the settled notes the oldest that `QuestionSchedule` lets through is
next (not put off, not skipped until its bytes change).

A file name that is not valid UTF-8 (from another system, a sync tool) cannot be held by
SQLite as it is: such a question is known by its name with U+FFFD in place of the bad bytes
(`rel`: its rows, its answer note, its archived name) and read by its real name
(`file_rel`), so it is answered like any other.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from askvault.adapters.vault import TEMP_PREFIX, resolve_inside, undecodable_name
from askvault.errors import AskvaultError
from askvault.services.inbox.clock import Clock
from askvault.services.inbox.schedule import QuestionSchedule, Signature
from askvault.settings import Settings


@dataclass(frozen=True)
class QuestionFile:
    """A question note of the inbox as listed: its vault-relative path as the index holds
    it, its path, its signature; a name that is not valid UTF-8 has its own `file_rel` (the
    name on disk) and `name_problem` (what is wrong with it)."""

    rel: str
    abs_path: Path
    sig: Signature
    file_rel: str = ""
    name_problem: str | None = None

    @property
    def read_rel(self) -> str:
        """The vault-relative path to read the note by."""
        return self.file_rel or self.rel


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
            file_rel = f"{self.inbox_rel}/{name}"
            bad_name = undecodable_name(file_rel)
            rel = bad_name.path if bad_name else file_rel
            present.add(rel)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            sig = (st.st_size, st.st_mtime_ns, st.st_ino)
            seen = self._first_seen.get(rel)
            if seen is None or seen[0] != sig:
                self._first_seen[rel] = seen = (sig, now_mono)
            quiet_s = max(now_wall - st.st_mtime_ns / 1e9, now_mono - seen[1])
            if quiet_s < self.settle_s or schedule.is_skipped(rel, sig):
                continue
            if not schedule.is_due(rel):
                continue
            found = QuestionFile(rel, Path(entry.path), sig)
            if bad_name is not None:
                found = QuestionFile(rel, Path(entry.path), sig, file_rel, bad_name.reason)
            due.append((st.st_mtime_ns, name, found))
        for rel in [
            r for r in self._first_seen if r not in present and not schedule.is_finishing(r)
        ]:
            del self._first_seen[rel]
        schedule.forget_absent(present)
        return min(due)[2] if due else None
