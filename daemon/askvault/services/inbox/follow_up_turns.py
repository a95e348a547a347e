"""A follow-up's turn in its answer note: answered, rendered, and written in place.

One path for every writer of turns: the inbox (a `## Follow-up` the user typed:
services/inbox/followups.py) and the MCP `ask` tool with `follow_up` and `save` (the
agent's question typed in as the user would). The follow-up is answered with its thread
(`answer_follow_up`) and the options its answer note keeps (`follow_up_options`: the
first question's `ask_*` properties, overridden by the follow-up's own); invalid options
give a failed turn that says why. The note is the user's from the first follow-up on, so
it is never rewritten as askvault's: the turn is inserted after the follow-up's last
line into the bytes read, and replaces the note by one atomic rename only if the note
still holds exactly the bytes read (a save of the user's meanwhile wins).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from askvault.adapters import answer_store, store
from askvault.adapters.db import Connection, write_transaction
from askvault.adapters.vault import write_atomic
from askvault.core.answer_note import AnswerNote, render_answer_body
from askvault.core.controls import strip_controls
from askvault.core.followup import FollowUp, FollowUpThread, render_turn
from askvault.records import AnswerOutcome, Embedder, Generator, QuestionOptions
from askvault.services.answer import AnswerResult, answer_follow_up
from askvault.services.answer.generation import TokenSink
from askvault.services.answer.pipeline import iso_now
from askvault.services.inbox.question_options import describe_options, follow_up_options
from askvault.settings import Settings

FOLLOW_UP_HEADING = "## Follow-up"
# A line that starts like these would not be read as the follow-up's question.
_NOT_A_QUESTION_LINE = re.compile(r"^(#|%%|```|~~~)")


@dataclass(frozen=True)
class Turn:
    """A follow-up answered: its status and why, the answer (a failed one, the model not
    asked, when its options were invalid) and the turn's text as it goes below the
    follow-up."""

    status: AnswerOutcome
    reason: str
    result: AnswerResult
    text: str


def answer_turn(
    conn: Connection,
    settings: Settings,
    thread: FollowUpThread,
    *,
    embedder: Embedder | None,
    generator: Generator,
    given: QuestionOptions | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    on_token: TokenSink | None = None,
) -> Turn:
    """Answer the thread's follow-up with the options its note keeps (`given` overrides
    them, as `follow_up_options` says) and render its turn. A `waiting` turn is not to
    be written (the follow-up is asked again); any other is."""
    question = thread.follow_up.question
    reading = follow_up_options(thread.properties, question, settings.vault_path, given=given)
    notices = tuple(reading.notices)
    if reading.errors:
        reason = "invalid question options (the answer note's `ask_*` properties): " + "; ".join(
            reading.errors
        )
        failed = AnswerNote(
            question=question,
            status="failed",
            asked=iso_now(),
            reason=reason,
            model=settings.ollama.chat_model,
            embed_model=settings.ollama.embed_model,
            options=notices,
        )
        result = AnswerResult(question, "failed", failed, reason=reason)
        return Turn(
            "failed", reason, result, render_turn(thread.number, render_answer_body(failed))
        )
    answered = answer_follow_up(
        conn,
        settings,
        question,
        thread.earlier,
        embedder=embedder,
        generator=generator,
        options=reading.options,
        should_stop=should_stop,
        on_token=on_token,
    )
    result = answered.result
    described = describe_options(reading.options)
    note = replace(
        result.note,
        options=notices,
        trace=(
            f"follow-up searched as: {answered.searched}",
            *(
                [f"the earlier turn's pages, candidates: {', '.join(answered.carried)}"]
                if answered.carried
                else []
            ),
            *(
                [f"the thread's pages, one to be cited: {', '.join(answered.thread_pages)}"]
                if answered.thread_pages
                else []
            ),
            *([f"options: {described}"] if described else []),
            *result.note.trace,
        ),
    )
    text = render_turn(thread.number, render_answer_body(note))
    return Turn(result.status, result.reason, result, text)


def with_turn(data: bytes, follow_up: FollowUp, turn: str) -> bytes:
    """`data` with `turn` inserted after the follow-up's last line: every byte of `data`
    kept, in its order."""
    lines = data.decode("utf-8").splitlines(keepends=True)
    # splitlines() and str.splitlines(keepends) agree on where lines break.
    head, tail = "".join(lines[: follow_up.end_line]), "".join(lines[follow_up.end_line :])
    if head and not head.endswith(("\n", "\r")):
        head += "\n"
    return (head + "\n" + turn + ("\n" + tail if tail else "")).encode("utf-8")


def with_follow_up(data: bytes, question: str) -> bytes:
    """`data` with a `## Follow-up` heading and `question` under it at the end, as the
    user would type them: every byte of `data` kept. The question is one line, without
    control characters (a line of its own could read as a heading and end it), and a
    start that would read as a heading, a fence or an Obsidian comment (a turn mark) is
    escaped with a backslash, as Obsidian shows it: the question stays the question."""
    line = " ".join(strip_controls(question).split())
    if _NOT_A_QUESTION_LINE.match(line):
        line = "\\" + line
    sep = b"" if not data or data.endswith((b"\n", b"\r")) else b"\n"
    return data + sep + f"\n{FOLLOW_UP_HEADING}\n{line}\n".encode()


def write_turn(
    conn: Connection, path: Path, rel: str, read: bytes, new: bytes, cited: list[str]
) -> dict[str, str] | None:
    """Replace the note at `path` (`rel`) by `new` if it still holds exactly `read`
    (re-read right before the rename), and add the turn's `cited` pages to the note's
    (its `answers` row), so a change to one lists the note as stale in `askvault status`.
    Returns the cited pages' content hashes as the turn saw them, or None when the note
    changed meanwhile and nothing was written."""
    seen = store.content_hashes(conn, cited)
    if not write_atomic(path, new, still_ours=lambda now: now == read):
        return None
    row = answer_store.get_answer(conn, rel)
    if row is not None and cited:
        more = tuple(dict.fromkeys((*row.cited, *cited)))
        with write_transaction(conn):
            answer_store.put_answer(conn, replace(row, cited=more))
    return seen
