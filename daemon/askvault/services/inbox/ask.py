"""`askvault ask`: the inbox pipeline for one question typed in the terminal."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from askvault.adapters import answer_store
from askvault.adapters.vault import resolve_inside
from askvault.core.answer_note import render_answer_note
from askvault.core.followup import FINISHED, next_follow_up, thread_of
from askvault.errors import AnswerCancelled, AskvaultError
from askvault.records import QuestionOptions
from askvault.services.answer import (
    AnswerResult,
    ThreadNote,
    answer_follow_up,
    answer_question,
    read_thread,
)
from askvault.services.answer.resources import AnswerResources
from askvault.services.inbox.files import AnswerFiles
from askvault.services.inbox.follow_up_turns import (
    answer_turn,
    with_follow_up,
    with_turn,
    write_turn,
)
from askvault.services.inbox.question_options import follow_up_options, question_summary
from askvault.settings import Settings


@dataclass
class AskOutcome:
    """What `askvault ask` shows: the result, the note written (with --save), the log line."""

    result: AnswerResult
    saved: str | None
    logged: str | None
    turn: int | None = None  # the turn written into a follow-up's answer note


def ask_question(
    settings: Settings,
    resources: AnswerResources,
    question: str,
    *,
    on_token: Callable[[str], None] | None = None,
    save: bool = False,
    options: QuestionOptions | None = None,
    log: bool = True,
    should_stop: Callable[[], bool] = lambda: False,
    thread: ThreadNote | None = None,
) -> AskOutcome:
    """The inbox pipeline for one question from the terminal (`askvault ask`) or an agent.

    `resources` are the caller's (`answer.resources.opened` for one command, the warm
    session's for many) and are left open. `save` writes the answer note under
    queries/answers/ with the inbox's never-overwrite rule; `log` appends the question to
    the log note. Raises AnswerCancelled when `should_stop()` turns true before anything
    was written. With `thread` (an answer note read by `read_thread`: `askvault ask
    --follow-up`), `question` is answered as a follow-up to its questions, with the options
    the note keeps (`options` overriding them); the note is not changed. Raises
    AskvaultError when the note's options are invalid."""
    files = AnswerFiles(settings)
    conn = resources.conn
    if thread is not None:
        result = answer_follow_up(
            conn,
            settings,
            question,
            thread.questions,
            embedder=resources.embedder,
            generator=resources.generator,
            options=_thread_options(settings, thread, question, options),
            on_token=on_token,
            should_stop=should_stop,
        ).result
    else:
        result = answer_question(
            conn,
            settings,
            question,
            options or QuestionOptions(),
            embedder=resources.embedder,
            generator=resources.generator,
            on_token=on_token,
            should_stop=should_stop,
        )
    if should_stop():
        raise AnswerCancelled()
    saved = None
    if save:
        stem = _safe_stem(question)
        saved = files.write_answer(
            conn,
            None,
            render_answer_note(result.note),
            "",
            result.status,
            tuple(result.cited_paths),
            stem,
        )
    logged = None
    if log and result.status in ("answered", "no-answer") and files.append_log(question, saved):
        logged = f"query | {question_summary(question)}"
    return AskOutcome(result, saved, logged)


def _thread_options(
    settings: Settings, thread: ThreadNote, question: str, given: QuestionOptions | None
) -> QuestionOptions:
    """The options a follow-up to `thread` is answered with (`follow_up_options`), or
    AskvaultError naming the note whose `ask_*` properties are invalid."""
    reading = follow_up_options(thread.properties, question, settings.vault_path, given=given)
    if reading.errors:
        raise AskvaultError(
            f"invalid question options in {thread.rel}: " + "; ".join(reading.errors),
            "fix the answer note's `ask_*` properties",
        )
    return reading.options


def ask_follow_up(
    settings: Settings,
    note: str,
    question: str,
    *,
    resources: AnswerResources,
    options: QuestionOptions | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> AskOutcome:
    """Ask `question` as a follow-up in the answer note `note` and write its turn there,
    exactly as the inbox answers a `## Follow-up` the user typed (the heading and the
    question appended at the end, then the turn after them, one atomic rename of the
    bytes read; services/inbox/follow_up_turns.py). The turn is not written when the answer
    waits for Ollama, and not when the note changed while it was answered (the user's
    save wins; a warning says so). Raises AskvaultError before anything is asked when
    `note` is no answer note askvault wrote, its answer is not finished, a follow-up in
    it waits for the daemon, or its options are invalid; AnswerCancelled when
    `should_stop()` turns true before the write."""
    conn = resources.conn
    thread_note = read_thread(settings, note)
    rel = thread_note.rel
    if answer_store.get_answer(conn, rel) is None:
        raise AskvaultError(
            f"{rel} is no answer note askvault wrote: a follow-up is written only into one",
            "give a note of the answers folder that askvault wrote (queries/answers/)",
        )
    status = thread_note.properties.get("status")
    if status not in FINISHED:
        raise AskvaultError(
            f"{rel} is not answered yet (status: {status}): its follow-ups wait for it",
            "ask the follow-up once the note's status is answered or no-answer",
        )
    if next_follow_up(thread_note.text) is not None:
        raise AskvaultError(
            f"{rel} has a follow-up the daemon has not answered yet",
            "ask again once its turn is in the note",
        )
    path = resolve_inside(settings.vault_path, rel)
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != thread_note.content_hash:
        raise AskvaultError(f"{rel} changed while it was read", "ask again")
    typed = with_follow_up(data, question)
    try:
        thread = thread_of(rel, typed.decode("utf-8"))
    except UnicodeDecodeError:
        raise AskvaultError(
            f"{rel} is not valid UTF-8: a turn cannot be added to it without changing its bytes",
            "save the note as UTF-8 in Obsidian, then ask again",
        ) from None
    if thread is None:  # the question was only spaces or control characters
        raise AskvaultError("the follow-up question is empty", "give the question's text")
    _thread_options(settings, thread_note, thread.follow_up.question, options)
    turn = answer_turn(
        conn,
        settings,
        thread,
        embedder=resources.embedder,
        generator=resources.generator,
        given=options,
        should_stop=should_stop,
    )
    if should_stop():
        raise AnswerCancelled()
    if turn.status == "waiting":
        return AskOutcome(turn.result, None, None)
    new = with_turn(typed, thread.follow_up, turn.text)
    if write_turn(conn, path, rel, data, new, turn.result.cited_paths) is None:
        turn.result.warnings.append(
            f"the turn was not written: {rel} changed while the follow-up was answered "
            "(the edit wins); ask again to add it"
        )
        return AskOutcome(turn.result, None, None)
    return AskOutcome(turn.result, rel, None, thread.number)


def _safe_stem(question: str) -> str:
    """A file name for a question asked on the command line."""
    name = re.sub(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+', " ", question_summary(question, 60))
    return " ".join(name.split()).strip(" .") or "question"
