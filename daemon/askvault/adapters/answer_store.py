"""The answer tables: notes askvault wrote (with their hash) and inbox questions in progress.

Callers wrap writes in `db.write_transaction`.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import cast

from askvault.adapters.db import Connection
from askvault.records import AnswerStatus, QuestionStatus


@dataclass(frozen=True)
class AnswerRow:
    """An answer note askvault wrote: where, for which question, its bytes' hash, what it cites."""

    path: str
    question_path: str
    status: AnswerStatus
    written_sha256: str
    cited: tuple[str, ...]
    # Set only while a rewrite is in flight: the bytes before it are still askvault's.
    previous_sha256: str = ""

    def holds(self, data: bytes) -> bool:
        """True if `data` is what askvault wrote here (before or after a pending rewrite)."""
        digest = hashlib.sha256(data).hexdigest()
        return digest == self.written_sha256 or digest == self.previous_sha256 != ""


@dataclass(frozen=True)
class QuestionRow:
    """A question still in the inbox and its answer note.

    `status`: answering | waiting | failed, or, once answered, `archiving` (still to be
    moved to the archive) then `logging` (moved; `log_line` still to be appended).
    """

    path: str
    answer_path: str
    status: QuestionStatus
    content_sha256: str
    asked: str
    log_line: str = ""


def get_answer(conn: Connection, path: str) -> AnswerRow | None:
    """The row of the answer note at `path`, if askvault wrote it."""
    row = conn.execute(
        "SELECT path, question_path, status, written_sha256, cited, previous_sha256 FROM answers WHERE path = ?",
        (path,),
    ).fetchone()
    return _answer(row) if row else None


def put_answer(conn: Connection, row: AnswerRow) -> None:
    """Record (or replace) what askvault wrote at `row.path`."""
    conn.execute(
        "INSERT OR REPLACE INTO answers(path, question_path, status, written_sha256, cited,"
        " updated_at, previous_sha256) VALUES (?,?,?,?,?,?,?)",
        (
            row.path,
            row.question_path,
            row.status,
            row.written_sha256,
            json.dumps(list(row.cited), ensure_ascii=False),
            time.time(),
            row.previous_sha256,
        ),
    )


def delete_answer(conn: Connection, path: str) -> None:
    conn.execute("DELETE FROM answers WHERE path = ?", (path,))


def answers_citing(conn: Connection, paths: set[str]) -> list[AnswerRow]:
    """Answers (answered, no-answer or stale) that cite any of `paths`."""
    rows = conn.execute(
        "SELECT path, question_path, status, written_sha256, cited, previous_sha256 FROM answers "
        "WHERE status IN ('answered', 'no-answer', 'stale') ORDER BY path"
    ).fetchall()
    return [a for a in map(_answer, rows) if paths.intersection(a.cited)]


_QUESTION_COLUMNS = "path, answer_path, status, content_sha256, asked, log_line"


def get_question(conn: Connection, path: str) -> QuestionRow | None:
    row = conn.execute(
        f"SELECT {_QUESTION_COLUMNS} FROM inbox_questions WHERE path = ?",
        (path,),
    ).fetchone()
    return QuestionRow(*row) if row else None


def questions_answered(conn: Connection) -> list[QuestionRow]:
    """Questions answered but not yet archived and logged (`archiving`, `logging`)."""
    return _questions_with_status(conn, ("archiving", "logging"))


def questions_unfinished(conn: Connection) -> list[QuestionRow]:
    """Questions not answered yet (`answering`, `waiting`, `failed`)."""
    return _questions_with_status(conn, ("answering", "waiting", "failed"))


def _questions_with_status(
    conn: Connection,
    statuses: tuple[QuestionStatus, ...],
) -> list[QuestionRow]:
    marks = ",".join("?" * len(statuses))
    rows = conn.execute(
        f"SELECT {_QUESTION_COLUMNS} FROM inbox_questions WHERE status IN ({marks}) ORDER BY path",
        statuses,
    ).fetchall()
    return [QuestionRow(*row) for row in rows]


def answers_with_status(
    conn: Connection,
    statuses: AnswerStatus | tuple[AnswerStatus, ...],
) -> list[AnswerRow]:
    """Answer notes whose recorded status is `statuses` (one, or one of several), by path."""
    statuses = (statuses,) if isinstance(statuses, str) else statuses
    marks = ",".join("?" * len(statuses))
    rows = conn.execute(
        "SELECT path, question_path, status, written_sha256, cited, previous_sha256 FROM answers "
        f"WHERE status IN ({marks}) ORDER BY path",
        statuses,
    ).fetchall()
    return [_answer(r) for r in rows]


def answers_unfinished(conn: Connection) -> list[AnswerRow]:
    """Answer notes still `answering`, `waiting` or `failed`."""
    rows = conn.execute(
        "SELECT path, question_path, status, written_sha256, cited, previous_sha256 FROM answers "
        "WHERE status IN ('answering', 'waiting', 'failed') ORDER BY path"
    ).fetchall()
    return [_answer(r) for r in rows]


def put_question(conn: Connection, row: QuestionRow) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO inbox_questions(path, answer_path, status, content_sha256, asked,"
        " updated_at, log_line) VALUES (?,?,?,?,?,?,?)",
        (
            row.path,
            row.answer_path,
            row.status,
            row.content_sha256,
            row.asked,
            time.time(),
            row.log_line,
        ),
    )


def delete_question(conn: Connection, path: str) -> None:
    conn.execute("DELETE FROM inbox_questions WHERE path = ?", (path,))


def _answer(row: tuple[str, str, str, str, str, str]) -> AnswerRow:
    status = cast(AnswerStatus, row[2])  # written from an AnswerRow
    return AnswerRow(row[0], row[1], status, row[3], tuple(json.loads(row[4] or "[]")), row[5])


def unfinished_answer_of(conn: Connection, question_path: str) -> AnswerRow | None:
    """The `answering`, `waiting` or `failed` note written for a question that has no row
    of its own (a crash between writing the note and recording the question, or an index
    rebuilt since): it is finished or replaced, not duplicated."""
    row = conn.execute(
        "SELECT path FROM answers WHERE question_path = ?"
        " AND status IN ('answering', 'waiting', 'failed') ORDER BY path LIMIT 1",
        (question_path,),
    ).fetchone()
    return get_answer(conn, row[0]) if row else None


def record_placeholder(conn: Connection, path: str) -> None:
    """`path` (vault-relative) may become an empty file askvault reserved (see m032)."""
    conn.execute(
        "INSERT OR REPLACE INTO vault_placeholders(path, created_at) VALUES (?, ?)",
        (path, time.time()),
    )


def forget_placeholders(conn: Connection, paths: list[str]) -> None:
    conn.executemany("DELETE FROM vault_placeholders WHERE path = ?", [(p,) for p in paths])


def placeholders(conn: Connection) -> list[str]:
    """Every recorded placeholder path (a crash may have left some behind)."""
    return [r[0] for r in conn.execute("SELECT path FROM vault_placeholders ORDER BY path")]


def all_questions(conn: Connection) -> dict[str, QuestionRow]:
    """Every inbox question askvault has a row for, by vault-relative path."""
    rows = conn.execute(f"SELECT {_QUESTION_COLUMNS} FROM inbox_questions").fetchall()
    return {row[0]: QuestionRow(*row) for row in rows}
