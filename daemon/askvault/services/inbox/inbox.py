"""`Inbox`: the question inbox of one vault, made of its parts, held by name.

Each part owns one job and the others call its public methods:

- `files` (`AnswerFiles`): askvault's own files under `queries/`: answer notes, the
  archive, the log, the problem note;
- `presence` (`VaultPresence`): is the vault there (nothing is written while it is not);
- `schedule` (`QuestionSchedule`): when each question may be tried again;
- `stale` (`StaleMarks`): answers whose cited notes changed;
- `upkeep` (`AnswerUpkeep`): unfinished notes of questions that left, `refresh: true`;
- `listing` (`InboxListing`): which question is next, once it is finished, not still
  being typed (core/settling.py; its `focus` tells which note Obsidian shows);
- `questions` (`InboxQuestions`): one question's steps, from its note to its archive;
- `follow_ups` (`InboxFollowUps`): follow-ups written in answer notes, answered below them.

The inbox is driven from outside in two steps, `tick()` (the upkeep, in its order) and
`process()` (one question); `step()` is one pass of both, what the daemon's inbox thread
(app/inbox_loop.py) runs between its waits, and what the tests run with a clock they move
by hand. A follow-up written in an answer note is one more part with its own listing and
steps, asked in `step()` when no question note is ready (a question note goes first).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from askvault.adapters.db import Connection
from askvault.core.backoff import BACKOFF_FIRST_S, BACKOFF_MAX_S
from askvault.core.settling import settle_wait_s
from askvault.errors import DiskFull, IndexBusy
from askvault.records import ModelClients
from askvault.services.inbox.clock import SYSTEM_CLOCK, Clock
from askvault.services.inbox.files import AnswerFiles
from askvault.services.inbox.followups import InboxFollowUps
from askvault.services.inbox.listing import InboxListing, QuestionFile, SettleRule
from askvault.services.inbox.presence import VaultPresence
from askvault.services.inbox.questions import InboxQuestions
from askvault.services.inbox.schedule import QuestionSchedule
from askvault.services.inbox.stale import StaleMarks
from askvault.services.inbox.upkeep import AnswerUpkeep
from askvault.services.index.foreground import ForegroundWork
from askvault.settings import Settings

log = logging.getLogger(__name__)

# What one `step()` did: answered (or tried) a question, found none ready, or found the
# vault gone (nothing done).
Step = Literal["question", "follow-up", "idle", "vault gone"]


class Inbox:
    """The question inbox of one vault: answers its question notes one at a time and
    keeps their answer notes true (DESIGN §2). `settle_rule` replaces the rule that tells
    a finished question from one being typed (core/settling.py), to measure others."""

    def __init__(
        self,
        settings: Settings,
        clients: ModelClients,
        *,
        clock: Clock = SYSTEM_CLOCK,
        backoff_first_s: float = BACKOFF_FIRST_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        settle_rule: SettleRule = settle_wait_s,
        foreground: ForegroundWork | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.files = AnswerFiles(settings, clock)
        self.presence = VaultPresence(settings, clock)
        self.schedule = QuestionSchedule(backoff_first_s, backoff_max_s, clock)
        self.stale = StaleMarks(self.files)
        self.upkeep = AnswerUpkeep(self.files, self.presence)
        self.listing = InboxListing(settings, self.schedule, clock, settle_rule)
        self.questions = InboxQuestions(
            settings,
            clients,
            files=self.files,
            upkeep=self.upkeep,
            presence=self.presence,
            schedule=self.schedule,
            stale=self.stale,
            clock=clock,
            foreground=foreground,
        )
        self.follow_ups = InboxFollowUps(
            settings, clients, clock=clock, settle_rule=settle_rule, stale=self.stale
        )

    # -- what other threads report -------------------------------------------------------

    def notice(self, paths: list[str]) -> bool:
        """Vault-relative paths under `queries/` changed (any thread): changed answer notes
        are looked at for a `refresh: true`. True when the inbox has something to look at
        (a question or an answer note changed)."""
        touched = {p for p in paths if p.startswith(self.files.answers_rel + "/")}
        if touched:
            self.upkeep.note_answers_touched(touched)
        return bool(touched) or any(p.startswith(self.files.inbox_rel + "/") for p in paths)

    def queue_changes(self, changed: list[str], deleted: list[str]) -> None:
        """Indexed notes changed or vanished (any thread): answers citing them are marked
        stale by the next `tick()`."""
        self.stale.queue_changes(changed, deleted)

    # -- the steps -----------------------------------------------------------------------

    def prepare(self, conn: Connection) -> None:
        """What a start does before the first question: temp files of dead writers and
        placeholders removed, our own notes recognised again, the write problem note
        cleared, unfinished notes of vanished questions removed, refreshes looked for."""
        self.files.remove_leftovers(conn)
        try:
            adopted = self.files.adopt_own_notes(conn)
        except (IndexBusy, DiskFull) as exc:
            log.warning("answer notes not recognised yet: %s", exc.message)
        else:
            self.stale.adopt(conn, adopted)
        self.files.clear_write_problem(at_start=True)
        self.upkeep.forget_vanished(conn, orphans=True)
        self.upkeep.note_refreshable(conn)

    def tick(self, conn: Connection) -> bool:
        """The upkeep between questions, in its order: stale marks, answered questions
        whose note vanished finished, unfinished notes of questions that left removed,
        refreshes asked. False (nothing done) while the vault is gone. A busy index or a
        full disk is raised (IndexBusy, DiskFull): the stale marks wait, kept."""
        if not self.presence.vault_present():
            return False
        self.stale.apply(conn)
        self.questions.finish_vanished(conn)
        self.upkeep.forget_vanished(conn)
        self.upkeep.refresh_asked(conn)
        return True

    def next_question(self) -> QuestionFile | None:
        """The question to answer now: the oldest that has settled and is due."""
        return self.listing.next_question()

    def process(
        self, conn: Connection, question: QuestionFile, should_stop: Callable[[], bool]
    ) -> None:
        """One question's steps (`InboxQuestions.process`); whatever goes wrong puts the
        question off with backoff: one question never stops the inbox."""
        try:
            self.questions.process(conn, question, should_stop)
        except Exception as exc:  # noqa: BLE001 - one question never stops the inbox
            self.questions.put_off(question.rel, exc)

    def step(self, conn: Connection, should_stop: Callable[[], bool]) -> Step:
        """One pass: `tick()`, then `process()` of the next question if one is ready, else
        the next settled follow-up of an answer note. Raises IndexBusy / DiskFull from
        `tick()` (the caller waits and tries again)."""
        if not self.tick(conn):
            return "vault gone"
        question = self.next_question()
        if question is not None:
            self.process(conn, question, should_stop)
            return "question"
        follow_up = self.follow_ups.next_follow_up(conn)
        if follow_up is None:
            return "idle"
        self.follow_ups.process(conn, follow_up, should_stop)
        return "follow-up"
