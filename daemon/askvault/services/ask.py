"""`askvault ask`: the inbox pipeline for one question typed in the terminal."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from askvault.adapters.db import Connection, connect
from askvault.core.answer_note import render_answer_note
from askvault.errors import AnswerCancelled, AskvaultError, OllamaError
from askvault.records import Embedder, Generator, ModelClients, QuestionOptions
from askvault.services.answer import (
    AnswerResult,
    ThreadNote,
    answer_follow_up,
    answer_question,
)
from askvault.services.inbox.files import AnswerFiles
from askvault.services.question_options import follow_up_options, question_summary
from askvault.settings import Settings


@dataclass
class AskOutcome:
    """What `askvault ask` shows: the result, the note written (with --save), the log line."""

    result: AnswerResult
    saved: str | None
    logged: str | None


def ask_question(
    settings: Settings,
    clients: ModelClients,
    question: str,
    *,
    on_token: Callable[[str], None] | None = None,
    save: bool = False,
    options: QuestionOptions | None = None,
    log: bool = True,
    conn: Connection | None = None,
    embedder: Embedder | None = None,
    generator: Generator | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    thread: ThreadNote | None = None,
) -> AskOutcome:
    """The inbox pipeline for one question from the terminal (`askvault ask`) or an agent.

    A warm caller (the MCP server) hands in its open connection and Ollama clients, which
    are then left open; otherwise they are made here from `clients` and closed. `save`
    writes the answer note under queries/answers/ with the inbox's never-overwrite rule; `log` appends the
    question to the log note. Raises AnswerCancelled when `should_stop()` turns true before
    anything was written. With `thread` (an answer note read by `read_thread`: `askvault
    ask --follow-up`), `question` is answered as a follow-up to its questions, with the
    options the note keeps (`options` overriding them); the note is not changed.
    Raises AskvaultError when the note's options are invalid."""
    files = AnswerFiles(settings)
    own_conn = conn is None
    conn = conn if conn is not None else connect(settings.db_path)
    made: list[Embedder | Generator] = []  # the clients made here, closed here
    try:
        if generator is None:
            generator = clients.generator()
            made.append(generator)
            with contextlib.suppress(OllamaError):
                embedder = clients.embedder()
                made.append(embedder)
        try:
            if thread is not None:
                result = answer_follow_up(
                    conn,
                    settings,
                    question,
                    thread.questions,
                    embedder=embedder,
                    generator=generator,
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
                    embedder=embedder,
                    generator=generator,
                    on_token=on_token,
                    should_stop=should_stop,
                )
        finally:
            for client in made:
                client.close()
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
    finally:
        if own_conn:
            conn.close()


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


def _safe_stem(question: str) -> str:
    """A file name for a question asked on the command line."""
    name = re.sub(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+', " ", question_summary(question, 60))
    return " ".join(name.split()).strip(" .") or "question"
