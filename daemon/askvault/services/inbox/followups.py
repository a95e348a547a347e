"""Follow-ups written in answer notes, answered below them (core/followup.py for the form).

`InboxFollowUps` lists the answer notes askvault wrote (a row in `answers`) that hold an
unanswered `## Follow-up` whose question has settled by the same rule as a question
note's (core/settling.py: a `?` at the end and 3 s of quiet, else a minute), answers it
with the options the note keeps and writes the turn into the note
(services/inbox/follow_up_turns.py, the path the MCP `ask` with `follow_up` takes too).

A follow-up is the user's edit of the note, so the note is never rewritten as askvault's:
the new text is the bytes read, unchanged, with the turn inserted right after the
follow-up (before whatever the user wrote below it); it replaces the note by one atomic
rename, and only if the note still holds exactly the bytes read (re-read right before
the rename: a save of the user's meanwhile wins, the follow-up settles and is answered
then). The file is its own journal: the turn mark and the answer land in the same
rename, so a kill at any step leaves the note as it was (the follow-up asked again on
the next start) or with its one turn (answered: never asked again). A follow-up that
waits for Ollama writes nothing and is retried with backoff. Each turn's cited pages join
the note's, so a change to one lists the note as stale in `askvault status`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from askvault.adapters import answer_store
from askvault.adapters.db import Connection
from askvault.adapters.vault import TEMP_PREFIX, resolve_inside
from askvault.core.followup import FollowUpThread, thread_of
from askvault.core.settling import NoteVersion, SettleTimes, settle_wait_s
from askvault.errors import AnswerCancelled, AskvaultError, OllamaError
from askvault.records import Embedder, Generator, ModelClients
from askvault.services.inbox.clock import SYSTEM_CLOCK, Clock
from askvault.services.inbox.focus import ObsidianFocus, focus_on
from askvault.services.inbox.follow_up_turns import answer_turn, with_turn, write_turn
from askvault.services.inbox.listing import SettleRule
from askvault.services.inbox.schedule import QuestionSchedule, Signature
from askvault.services.inbox.stale import StaleMarks
from askvault.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FollowUpFile:
    """An answer note with a settled follow-up to answer: its bytes as listed."""

    rel: str
    path: Path
    sig: Signature


class InboxFollowUps:
    """Answers the follow-ups of one vault's answer notes, one at a time."""

    def __init__(
        self,
        settings: Settings,
        clients: ModelClients,
        *,
        clock: Clock = SYSTEM_CLOCK,
        settle_rule: SettleRule = settle_wait_s,
        schedule: QuestionSchedule | None = None,
        stale: StaleMarks | None = None,
    ) -> None:
        self.settings = settings
        self.root = settings.vault_path
        self.clients = clients
        self.clock = clock
        self.rule = settle_rule
        q = settings.queries
        self.answers_rel = f"{q.folder}/{q.answers}"
        self.times = SettleTimes(q.settle_s, q.unfinished_settle_s)
        # Its own schedule: the question listing forgets rels that are not in the inbox.
        self.schedule = schedule or QuestionSchedule(clock=clock)
        self.focus = ObsidianFocus(settings)
        self.stale = stale
        self._first_seen: dict[str, tuple[Signature, float]] = {}

    def next_follow_up(self, conn: Connection) -> FollowUpFile | None:
        """The answer note whose follow-up settled first and is due, or None."""
        try:
            folder = resolve_inside(self.root, self.answers_rel)
            entries = list(os.scandir(folder))
        except (OSError, AskvaultError):
            return None
        now_mono, now_wall = self.clock.monotonic(), self.clock.time()
        workspaces = self.focus.current()
        due: list[tuple[int, str, FollowUpFile]] = []
        for entry in entries:
            name = entry.name
            if not name.lower().endswith(".md") or name.startswith((".", TEMP_PREFIX)):
                continue
            rel = f"{self.answers_rel}/{name}"
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            sig = (st.st_size, st.st_mtime_ns, st.st_ino)
            if self.schedule.is_skipped(rel, sig) or not self.schedule.is_due(rel):
                continue
            seen = self._first_seen.get(rel)
            if seen is None or seen[0] != sig:
                self._first_seen[rel] = seen = (sig, now_mono)
            quiet_s = max(now_wall - st.st_mtime_ns / 1e9, now_mono - seen[1])
            thread = self._thread(conn, rel, Path(entry.path), st.st_size)
            if thread is None:
                self.schedule.skip(rel, sig)  # nothing to answer until its bytes change
                continue
            version = NoteVersion(thread.follow_up.question, quiet_s, focus_on(rel, workspaces))
            if self.rule(version, self.times) <= 0:
                due.append((st.st_mtime_ns, name, FollowUpFile(rel, Path(entry.path), sig)))
        return min(due)[2] if due else None

    def _thread(self, conn: Connection, rel: str, path: Path, size: int) -> FollowUpThread | None:
        """The note's next follow-up if the note is one askvault wrote, else None."""
        if size > self.settings.index.max_note_bytes or answer_store.get_answer(conn, rel) is None:
            return None
        try:
            return thread_of(rel, path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError):
            return None

    def process(
        self, conn: Connection, item: FollowUpFile, should_stop: Callable[[], bool]
    ) -> bool:
        """Answer the note's next follow-up and write its turn; True once written. Any
        failure (Ollama away, a write refused) puts the note off with backoff."""
        try:
            return self._process(conn, item, should_stop)
        except AnswerCancelled:
            return False
        except Exception as exc:  # noqa: BLE001 - one note never stops the inbox
            delay = self.schedule.put_off(item.rel)
            log.warning("follow-up in %s waits %.0f s: %s", item.rel, delay, exc)
            return False

    def _process(
        self, conn: Connection, item: FollowUpFile, should_stop: Callable[[], bool]
    ) -> bool:
        data = item.path.read_bytes()
        thread = thread_of(item.rel, data.decode("utf-8"))
        if thread is None:
            return False
        generator: Generator = self.clients.generator()
        embedder: Embedder | None = None
        with contextlib.suppress(OllamaError):
            embedder = self.clients.embedder()
        try:
            turn = answer_turn(
                conn,
                self.settings,
                thread,
                embedder=embedder,
                generator=generator,
                should_stop=should_stop,
            )
        finally:
            generator.close()
            if embedder is not None:
                embedder.close()
        if turn.status == "waiting":
            delay = self.schedule.put_off(item.rel)
            log.warning("follow-up in %s waits %.0f s: %s", item.rel, delay, turn.reason)
            return False
        new = with_turn(data, thread.follow_up, turn.text)
        seen = write_turn(conn, item.path, item.rel, data, new, turn.result.cited_paths)
        if seen is None:
            log.info("%s changed while its follow-up was answered; asked again", item.rel)
            return False
        if self.stale is not None:
            self.stale.remember_more(item.rel, seen)
        self.schedule.answered(item.rel)
        log.info("answered the follow-up in %s (turn %d, %s)", item.rel, thread.number, turn.status)
        return True
