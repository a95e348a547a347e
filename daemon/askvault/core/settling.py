"""When a question note is finished, not still being typed (DESIGN §2; pure).

Obsidian saves a note about every 2 s while it is typed, and people stop mid-sentence to
think, for half a minute at times: quiet time alone takes fragments ("How do I"). A note
is finished when it has been quiet for `settle_s` and it also looks finished, or when it
has been quiet for the longer `unfinished_settle_s` whatever it looks like. It looks
finished when:

- its question ends with a question mark (`?`, `？`, `؟`, the Greek `;`), after any
  closing quote, bracket or emphasis;
- it ends with another sentence end (`.`, `!`, `…`, `。`, `！`) and the note is not the
  one being edited in Obsidian (not the focused note of `.obsidian/workspace.json`): a
  full stop while the user is still on the note is as often the end of a first sentence;
- or `draft: true` was just removed: that is the user saying "go".

docs/decisions.md ("A question is taken when it is finished") has the replayed typing
sessions these rules were chosen on, with the figures of the rules not chosen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Where the user is, as Obsidian's workspace files tell: on this note, on another one, or
# unknown (no workspace file: Obsidian not used here, or the note arrived by sync).
Focus = Literal["editing", "elsewhere", "unknown"]
# How a question's text ends.
Ending = Literal["question", "sentence", "open"]

QUESTION_MARKS = frozenset("?？؟;⸮")  # ; is the Greek question mark (U+037E)
SENTENCE_ENDS = frozenset(".!…。！｡")
# Closing marks that may follow the end of a sentence: quotes, brackets, emphasis.
CLOSERS = frozenset(")]}\"'»”’」』*_~`")


@dataclass(frozen=True)
class SettleTimes:
    """The two quiet times (seconds) of the rule."""

    settle_s: float
    unfinished_settle_s: float


@dataclass(frozen=True)
class NoteVersion:
    """What the inbox knows of one version of a question note: its question text, how
    long it has been unchanged, where the user is, and whether the version before it was
    a draft."""

    question: str
    quiet_s: float
    focus: Focus = "unknown"
    was_draft: bool = False


def ending_of(question: str) -> Ending:
    """How `question` ends: with a question mark, another sentence end, or neither."""
    text = question.rstrip()
    while text and text[-1] in CLOSERS:
        text = text[:-1].rstrip()
    if not text:
        return "open"
    if text[-1] in QUESTION_MARKS:
        return "question"
    return "sentence" if text[-1] in SENTENCE_ENDS else "open"


def looks_finished(version: NoteVersion) -> bool:
    """A question mark at the end, another sentence end while the user is not on the note,
    or a draft just released."""
    ending = ending_of(version.question)
    return (
        version.was_draft
        or ending == "question"
        or (ending == "sentence" and version.focus != "editing")
    )


def settle_wait_s(version: NoteVersion, times: SettleTimes) -> float:
    """Seconds until `version` is finished if nothing changes (0 or less: finished now)."""
    needed = times.settle_s
    if not looks_finished(version):
        needed = max(times.settle_s, times.unfinished_settle_s)
    return needed - version.quiet_s
