"""Typing sessions replayed into a vault the way Obsidian saves them, and the inbox driven
through them with a clock moved by hand: which versions of a question it answers, and
how long after the question was finished.

A session (tests/fixtures/typing/*.json) is what a user does, step by step:

- `{"create": NAME}`: a new empty note in the inbox, opened and focused;
- `{"rename": NAME}`: the note renamed (its title typed);
- `{"type": TEXT, "cps": N}`: keystrokes at N characters a second, at the end of the note;
- `{"paste": TEXT}`: TEXT at once, at the end of the note (also an input method's commit);
- `{"edit": [OLD, NEW]}`: one change anywhere in the note (a property removed);
- `{"pause": S}`: nothing for S seconds;
- `{"switch": NAME}`: another note of the vault opened in its place (`{"back": true}`
  returns to the question);
- `{"sync": TEXT, "name": NAME, "age": S}`: the note appears whole, as a sync tool
  delivers it from a phone: its file time S seconds before it appears, never opened here;
- `{"focus": NAME}`: (first) the note Obsidian shows when the session starts.

Obsidian is modelled as it behaves: a note is saved `AUTOSAVE_S` after the first change
not yet saved (so about every 2 s while typing), and at once when the user leaves it; its
workspace file (`.obsidian/workspace.json`: the notes shown, the focused one) is written
`WORKSPACE_SAVE_S` after the focus changes. The question is finished at its last change.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.app.inbox_loop import POLL_S
from askvault.core.notes import parse_note
from askvault.core.settling import NoteVersion, SettleTimes, ending_of, settle_wait_s
from askvault.services.inbox.inbox import Inbox
from askvault.services.inbox.listing import SettleRule
from askvault.settings import Settings
from support.inbox_driver import FakeClock

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "typing"
AUTOSAVE_S = 2.0
WORKSPACE_SAVE_S = 2.0
# How long after its last change a question may still be answered by the replay.
LONGEST_WAIT_S = 120.0
INBOX = "queries/inbox"


def quiet_only(version: NoteVersion, times: SettleTimes) -> float:
    """The rule before: `settle_s` of quiet, whatever the note says."""
    return times.settle_s - version.quiet_s


def long_quiet_only(version: NoteVersion, times: SettleTimes) -> float:
    """`unfinished_settle_s` of quiet, whatever the note says."""
    return times.unfinished_settle_s - version.quiet_s


def any_end_mark(version: NoteVersion, times: SettleTimes) -> float:
    """`settle_s` when the question ends with `?` or a full stop (`.`, `!`...)."""
    finished = ending_of(version.question) != "open"
    return (times.settle_s if finished else times.unfinished_settle_s) - version.quiet_s


def end_mark_or_left(version: NoteVersion, times: SettleTimes) -> float:
    """`settle_s` when the question ends with `?` or a full stop, or the user is not on the
    note in Obsidian."""
    finished = ending_of(version.question) != "open" or version.focus != "editing"
    return (times.settle_s if finished else times.unfinished_settle_s) - version.quiet_s


def question_mark_only(version: NoteVersion, times: SettleTimes) -> float:
    """`settle_s` when the question ends with a question mark."""
    finished = ending_of(version.question) == "question"
    return (times.settle_s if finished else times.unfinished_settle_s) - version.quiet_s


# The rules measured on the sessions (docs/decisions.md), the one in force last.
RULES: dict[str, SettleRule] = {
    "quiet only (before)": quiet_only,
    "long quiet only": long_quiet_only,
    "? or . at the end": any_end_mark,
    "? or . at the end, or left the note": end_mark_or_left,
    "? at the end": question_mark_only,
    "?; . once left; draft removed (in force)": settle_wait_s,
}


@dataclass(frozen=True)
class Session:
    """One user's typing session, and within how many seconds of being finished its
    question must be answered."""

    name: str
    about: str
    steps: list[dict[str, Any]]
    answered_within_s: float


def load_sessions(folder: Path = SESSIONS) -> list[Session]:
    """Every session of `folder`, by file name."""
    sessions = []
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        sessions.append(
            Session(path.stem, doc["about"], doc["steps"], float(doc["answered_within_s"]))
        )
    return sessions


@dataclass(frozen=True)
class Action:
    """One thing written into the vault, `at` seconds into the session."""

    at: float
    kind: str  # "save", "rename", "workspace"
    name: str = ""  # the note (its file name in the inbox)
    text: str = ""  # the note's whole text (save), the new name (rename)
    mtime_at: float | None = None  # the file time, when not `at` (a synced note)
    active: str | None = None  # workspace: the focused note's vault path
    shown: tuple[str, ...] = ()


@dataclass
class Timeline:
    """What Obsidian writes for a session, in order, and what the user finished with."""

    actions: list[Action]
    end: float
    finished_at: float
    final_question: str


@dataclass
class _Obsidian:
    """Keystrokes in, files out: Obsidian's autosave and workspace file, in session time."""

    now: float = 0.0
    name: str | None = None  # the question note, once created
    buffer: str = ""
    saved: str | None = None
    save_at: float | None = None
    active: str | None = None  # the focused note's vault path
    workspace_at: float | None = None
    last_change: float = 0.0
    actions: list[Action] = field(default_factory=list)

    def until(self, t: float) -> None:
        """Time moves on to `t`: the saves and workspace writes due meanwhile happen."""
        while True:
            due = [x for x in (self.save_at, self.workspace_at) if x is not None and x <= t]
            if not due:
                break
            at = min(due)
            if at == self.save_at:
                self.save(at)
            else:
                self.write_workspace(at)
        self.now = max(self.now, t)

    def save(self, at: float) -> None:
        self.save_at = None
        if self.name is not None and self.buffer != self.saved:
            self.actions.append(Action(at, "save", self.name, self.buffer))
            self.saved = self.buffer

    def write_workspace(self, at: float) -> None:
        self.workspace_at = None
        shown = (self.active,) if self.active else ()
        self.actions.append(Action(at, "workspace", active=self.active, shown=shown))

    def change(self, text: str) -> None:
        self.buffer = text
        self.last_change = self.now
        if self.save_at is None:
            self.save_at = self.now + AUTOSAVE_S

    def focus(self, vault_path: str | None) -> None:
        if self.save_at is not None:
            self.save(self.now)  # leaving a note saves it
        self.active = vault_path
        if self.workspace_at is None:
            self.workspace_at = self.now + WORKSPACE_SAVE_S

    def note_path(self) -> str | None:
        return f"{INBOX}/{self.name}" if self.name else None


def timeline_of(session: Session) -> Timeline:
    """What Obsidian writes while the user goes through `session`'s steps."""
    o = _Obsidian()
    for step in session.steps:
        take = next((take for kind, take in _STEPS if kind in step), None)
        if take is None:
            raise ValueError(f"{session.name}: unknown step {step}")
        take(o, step)
    o.until(o.now)
    final = parse_note("q.md", o.buffer).body.strip()
    return Timeline(sorted(o.actions, key=lambda a: a.at), o.now, o.last_change, final)


def _focus(o: _Obsidian, step: dict[str, Any]) -> None:
    """The note Obsidian shows when the session starts (its workspace file written at once)."""
    o.active = step["focus"]
    o.write_workspace(o.now)


def _create(o: _Obsidian, step: dict[str, Any]) -> None:
    """A new, empty question note, saved and focused."""
    o.name, o.buffer, o.saved = step["create"], "", ""
    o.actions.append(Action(o.now, "save", o.name, ""))
    o.last_change = o.now
    o.focus(o.note_path())


def _rename(o: _Obsidian, step: dict[str, Any]) -> None:
    o.actions.append(Action(o.now, "rename", o.name or "", step["rename"]))
    o.name = step["rename"]
    o.focus(o.note_path())


def _type(o: _Obsidian, step: dict[str, Any]) -> None:
    """`type` one character at a time, `cps` characters a second."""
    gap = 1.0 / float(step["cps"])
    for char in step["type"]:
        o.until(o.now + gap)
        o.change(o.buffer + char)


def _paste(o: _Obsidian, step: dict[str, Any]) -> None:
    o.until(o.now + 0.2)
    o.change(o.buffer + step["paste"])


def _edit(o: _Obsidian, step: dict[str, Any]) -> None:
    """The first `old` of the note replaced by `new`."""
    old, new = step["edit"]
    o.until(o.now + 0.5)
    o.change(o.buffer.replace(old, new, 1))


def _pause(o: _Obsidian, step: dict[str, Any]) -> None:
    o.until(o.now + float(step["pause"]))


def _switch(o: _Obsidian, step: dict[str, Any]) -> None:
    o.focus(step["switch"])


def _back(o: _Obsidian, step: dict[str, Any]) -> None:
    o.focus(o.note_path())


def _sync(o: _Obsidian, step: dict[str, Any]) -> None:
    """The note arrives whole from another device (its file time `age` seconds old)."""
    o.name, o.buffer = step["name"], step["sync"]
    o.saved = o.buffer
    mtime = o.now - float(step.get("age", 0.0))
    o.actions.append(Action(o.now, "save", o.name, o.buffer, mtime_at=mtime))
    o.last_change = o.now


# A step's kind is the first of these keys it holds (a `sync` step also holds a `name`).
_STEPS: tuple[tuple[str, Callable[[_Obsidian, dict[str, Any]], None]], ...] = (
    ("focus", _focus),
    ("create", _create),
    ("rename", _rename),
    ("type", _type),
    ("paste", _paste),
    ("edit", _edit),
    ("pause", _pause),
    ("switch", _switch),
    ("back", _back),
    ("sync", _sync),
)


@dataclass
class Replay:
    """What the inbox did with one session: the fragments it answered (session time,
    question) and how long after the question was finished it answered it (None: not)."""

    session: str
    fragments: list[tuple[float, str]] = field(default_factory=list)
    answered_after_s: float | None = None


def replay(session: Session, settings: Settings, rule: SettleRule | None = None) -> Replay:
    """Replay `session` into `settings`' vault (whose inbox holds no other note) while an
    inbox with a clock moved by hand answers what it takes for finished."""
    timeline = timeline_of(session)
    root = settings.vault_path
    (root / ".obsidian" / "workspace.json").unlink(missing_ok=True)  # a session's own
    clock = FakeClock()
    wall0 = clock.time()
    inbox = Inbox(settings, OllamaClients(settings), clock=clock, settle_rule=rule)
    archive = root / "queries" / "archive"
    archive.mkdir(parents=True, exist_ok=True)
    archived_before = set(os.listdir(archive))
    result = Replay(session.name)
    written: dict[str, float] = {}  # note name -> its file time, session seconds
    pending = list(timeline.actions)
    conn = connect(settings.db_path)
    try:
        inbox.prepare(conn)
        now = 0.0
        stop = max(timeline.end, timeline.finished_at + LONGEST_WAIT_S)
        while now <= stop:
            while pending and pending[0].at <= now:
                _apply(root, pending.pop(0), wall0, written)
            took = inbox.step(conn, lambda: False) == "question"
            for name in sorted(set(os.listdir(archive)) - archived_before):
                archived_before.add(name)
                body = parse_note(name, (archive / name).read_text("utf-8")).body.strip()
                if body == timeline.final_question and result.answered_after_s is None:
                    result.answered_after_s = now - timeline.finished_at
                else:
                    result.fragments.append((now, body))
            if took:
                continue
            if result.answered_after_s is not None and not pending:
                break
            later = min(stop + POLL_S, _next_change(now, pending, written, settings))
            clock.advance(later - now)
            now = later
    finally:
        conn.close()
        for left in (root / INBOX).iterdir():  # not answered: not the next session's
            left.unlink()
    return result


def replay_all(
    sessions: list[Session], settings: Settings, rule: SettleRule = settle_wait_s
) -> list[Replay]:
    """Every session replayed, one after the other, into `settings`' vault."""
    return [replay(session, settings, rule) for session in sessions]


def _apply(root: Path, action: Action, wall0: float, written: dict[str, float]) -> None:
    """Write `action` into the vault as Obsidian would (a note saved where it now is: a
    note the inbox archived is followed there, as Obsidian follows a moved file)."""
    if action.kind == "workspace":
        _write_workspace(root, action, wall0)
        return
    inbox = root / INBOX
    if action.kind == "rename":
        old, new = inbox / action.name, inbox / action.text
        if old.exists():
            old.rename(new)
            written[action.text] = written.pop(action.name, action.at)
        return
    path = inbox / action.name
    if not path.exists() and (root / "queries" / "archive" / action.name).exists():
        path = root / "queries" / "archive" / action.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(action.text, encoding="utf-8")
    mtime = action.at if action.mtime_at is None else action.mtime_at
    os.utime(path, ns=(int((wall0 + mtime) * 1e9),) * 2)
    if path.parent == inbox:
        written[action.name] = mtime


def _write_workspace(root: Path, action: Action, wall0: float) -> None:
    """`.obsidian/workspace.json` as Obsidian writes it: a tab per shown note."""
    leaves = [
        {
            "id": f"leaf{i}",
            "type": "leaf",
            "state": {"type": "markdown", "state": {"file": file, "mode": "source"}},
        }
        for i, file in enumerate(action.shown)
    ]
    doc = {
        "main": {
            "id": "main",
            "type": "split",
            "children": [{"id": "tabs", "type": "tabs", "children": leaves}],
            "direction": "vertical",
        },
        "active": f"leaf{action.shown.index(action.active)}" if action.active else None,
        "lastOpenFiles": list(action.shown),
    }
    path = root / ".obsidian" / "workspace.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    os.utime(path, ns=(int((wall0 + action.at) * 1e9),) * 2)


def _next_change(
    now: float, pending: list[Action], written: dict[str, float], settings: Settings
) -> float:
    """The next poll of the inbox thread at which what the inbox sees can have changed:
    the next write, or a note of the inbox reaching one of the two settle times (infinity:
    none is ahead). Between them every poll would see the same; the replay skips them."""
    q = settings.queries
    times = [a.at for a in pending[:1]]
    for mtime in written.values():
        times += [mtime + q.settle_s, mtime + q.unfinished_settle_s]
    later = min((t for t in times if t > now), default=math.inf)
    if later == math.inf:
        return later  # nothing will change any more
    return max(now + POLL_S, math.ceil(round(later / POLL_S, 6)) * POLL_S)
