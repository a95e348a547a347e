"""`askvault ask`: the inbox pipeline for one question typed in the terminal."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from askvault.adapters.db import connect
from askvault.core.answer_note import render_answer_note
from askvault.errors import OllamaError
from askvault.services.answering import AnswerResult, QuestionOptions, answer_question
from askvault.services.inbox import InboxWorker
from askvault.services.index_pass import make_embedder, make_generator
from askvault.services.question_options import question_summary
from askvault.settings import Settings


@dataclass
class AskOutcome:
    """What `askvault ask` shows: the result, the note written (with --save), the log line."""

    result: AnswerResult
    saved: str | None
    logged: str | None


def ask_question(
    settings: Settings, question: str, *, on_token: Callable[[str], None] | None = None,
    save: bool = False,
) -> AskOutcome:
    """The inbox pipeline for one question from the terminal (`askvault ask`)."""
    worker = InboxWorker(settings)
    conn = connect(settings.db_path)
    try:
        generator = make_generator(settings)
        embedder: Any = None
        with contextlib.suppress(OllamaError):
            embedder = make_embedder(settings)
        try:
            result = answer_question(conn, settings, question, QuestionOptions(),
                                     embedder=embedder, generator=generator, on_token=on_token)
        finally:
            generator.close()
            if embedder is not None:
                embedder.close()
        saved = None
        if save:
            stem = _safe_stem(question)
            saved = worker.write_answer(conn, None, render_answer_note(result.note), "",
                                        result.status, tuple(result.cited_paths), stem)
        logged = None
        if result.status in ("answered", "no-answer") and worker.append_log(question, saved):
            logged = f"query | {question_summary(question)}"
        return AskOutcome(result, saved, logged)
    finally:
        conn.close()


def _safe_stem(question: str) -> str:
    """A file name for a question asked on the command line."""
    name = re.sub(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+', " ", question_summary(question, 60))
    return " ".join(name.split()).strip(" .") or "question"
