"""Which question of the inbox is next: the listing of `queries/inbox/` and its settling.

A note is taken once it is finished, not while it is typed (core/settling.py): unchanged
for `queries.settle_s` when it looks finished (a question mark at its end; a full stop
while the user is not on it in Obsidian, `focus.ObsidianFocus`; `draft: true` just
removed), for `queries.unfinished_settle_s` otherwise. Unchanged is counted by its file
time or, when that is ahead (another machine's clock, a sync tool), since this inbox first
saw its current bytes; each new version is read once. Drafts and empty notes are left
alone until their bytes change. Of the finished notes the oldest that `QuestionSchedule`
lets through is next (not put off, not skipped until its bytes change).

A file name that is not valid UTF-8 (from another system, a sync tool) cannot be held by
SQLite as it is: such a question is known by its name with U+FFFD in place of the bad bytes
(`rel`: its rows, its answer note, its archived name) and read by its real name
(`file_rel`), so it is answered like any other.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from askvault.adapters.vault import TEMP_PREFIX, read_note, resolve_inside, undecodable_name
from askvault.core.notes import parse_note
from askvault.core.settling import NoteVersion, SettleTimes, settle_wait_s
from askvault.core.workspace import WorkspaceFocus
from askvault.errors import AskvaultError
from askvault.services.inbox.clock import Clock
from askvault.services.inbox.focus import ObsidianFocus, focus_on
from askvault.services.inbox.question_options import NoteState, question_note_state
from askvault.services.inbox.schedule import QuestionSchedule, Signature
from askvault.settings import Settings

# How long a version must stay unchanged before it is taken (<= 0: now), given the two
# settle times: `core/settling.settle_wait_s` unless another rule is handed in (the
# replayed typing sessions measure others).
SettleRule = Callable[[NoteVersion, SettleTimes], float]


@dataclass(frozen=True)
class _Read:
    """What one version of a note says: a draft, empty, a question (its text), or None
    when it could not be read (the question's steps say why in its answer note)."""

    sig: Signature
    question: str | None
    state: NoteState
    was_draft: bool


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

    def __init__(
        self,
        settings: Settings,
        schedule: QuestionSchedule,
        clock: Clock,
        rule: SettleRule = settle_wait_s,
    ) -> None:
        self.root = settings.vault_path
        self.inbox_rel = f"{settings.queries.folder}/{settings.queries.inbox}"
        self.max_note_bytes = settings.index.max_note_bytes
        q = settings.queries
        self.times = SettleTimes(q.settle_s, q.unfinished_settle_s)
        self.schedule = schedule
        self.clock = clock
        self.rule = rule
        self.focus = ObsidianFocus(settings)
        # When this inbox first saw each question's current bytes (monotonic seconds).
        self._first_seen: dict[str, tuple[Signature, float]] = {}
        self._versions: dict[str, _Read] = {}

    def next_question(self) -> QuestionFile | None:
        """The oldest settled question that is due, or None."""
        schedule = self.schedule
        try:
            folder = resolve_inside(self.root, self.inbox_rel)
            entries = list(os.scandir(folder))
        except (OSError, AskvaultError):
            return None
        now_mono, now_wall = self.clock.monotonic(), self.clock.time()
        workspaces = self.focus.current()
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
            if schedule.is_skipped(rel, sig) or not schedule.is_due(rel):
                continue
            found = QuestionFile(rel, Path(entry.path), sig)
            if bad_name is not None:
                found = QuestionFile(rel, Path(entry.path), sig, file_rel, bad_name.reason)
            if self._finished(found, quiet_s, workspaces):
                due.append((st.st_mtime_ns, name, found))
        for table in (self._first_seen, self._versions):
            for rel in [r for r in table if r not in present and not schedule.is_finishing(r)]:
                del table[rel]
        schedule.forget_absent(present)
        return min(due)[2] if due else None

    def _finished(
        self, cand: QuestionFile, quiet_s: float, workspaces: list[WorkspaceFocus]
    ) -> bool:
        """Is this version of the note finished (a draft or an empty note never is: it is
        left alone until its bytes change)?"""
        read = self._read(cand)
        if read.state != "question":
            self.schedule.skip(cand.rel, cand.sig)
            return False
        if read.question is None:  # unreadable: its steps fail it with the reason
            return quiet_s >= self.times.settle_s
        version = NoteVersion(
            read.question, quiet_s, focus_on(cand.rel, workspaces), read.was_draft
        )
        return self.rule(version, self.times) <= 0

    def _read(self, cand: QuestionFile) -> _Read:
        """The note's current version, read once; the version before it tells whether a
        draft was just released."""
        known = self._versions.get(cand.rel)
        if known is not None and known.sig == cand.sig:
            return known
        was_draft = known is not None and known.state == "draft"
        try:
            note = read_note(self.root, cand.read_rel, self.max_note_bytes)
        except AskvaultError:
            read = _Read(cand.sig, None, "question", was_draft)
        else:
            parsed = parse_note(cand.rel, note.text)
            read = _Read(cand.sig, parsed.body.strip(), question_note_state(parsed), was_draft)
        self._versions[cand.rel] = read
        return read
