"""Issue 15: questions that cannot be archived, crash points of the archive step, a hostile
log, and waiting notes that are not rewritten for nothing (an Inbox stepped with a clock
moved by hand, a temp vault, the fake Ollama)."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from askvault.adapters import answer_store
from askvault.adapters.db import connect, write_transaction
from askvault.core.answer_note import AnswerNote, render_answer_note
from askvault.services.inbox.files import AnswerFiles, log_line_for
from askvault.settings import Settings
from support import inbox_fixtures
from support.fake_ollama import FakeOllama
from support.inbox_driver import InboxDriver, driver_starter
from support.inbox_fixtures import note_status

QUESTION = "What does an embed show?\n"
REPLY = "An embed shows another note inline [[Embeds]]."
Q_REL = "queries/inbox/Q.md"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


vault, settings = inbox_fixtures.vault, inbox_fixtures.settings


@pytest.fixture
def start(settings: Settings) -> Iterator[Callable[..., InboxDriver]]:
    """A short backoff cap: the tests below count retries."""
    with driver_starter(settings, backoff_max_s=0.8) as start:
        yield start


# The tests below count this many logged retries (the inbox's clock moves by itself).
RETRIES = 4


def logged(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records)


def read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def chats(fake: FakeOllama) -> int:
    return len(fake.requests_to("/api/chat"))


def log_lines(vault: Path) -> list[str]:
    return read(vault / "queries/log.md").splitlines()


# ---- defect 1: a question that cannot be archived is answered once, then waits


def _block_archive(how: str, vault: Path, tmp_path: Path, undo: list[Callable[[], None]]) -> None:
    archive = vault / "queries/archive"
    if how == "archive is a file":
        archive.write_text("a user's file named archive")
        undo.append(archive.unlink)
    elif how == "archive symlinked out of the vault":
        outside = tmp_path / "outside"
        outside.mkdir()
        archive.symlink_to(outside)
        undo.append(archive.unlink)
    else:
        if not IS_ROOT or shutil.which("chattr") is None:
            pytest.skip("needs root and chattr")
        folder = archive if how == "archive immutable" else vault / "queries/inbox"
        folder.mkdir(exist_ok=True)
        if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
            pytest.skip("chattr +i refused on this file system")
        undo.append(lambda: subprocess.run(["chattr", "-i", str(folder)], check=True))


@pytest.mark.parametrize(
    "how",
    [
        "archive is a file",
        "archive symlinked out of the vault",
        "archive immutable",
        "inbox unlink fails",
    ],
)
def test_question_that_cannot_be_archived_is_answered_once_then_waits_with_a_reason(
    vault: Path,
    tmp_path: Path,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    how: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_ollama.chat_script = lambda messages: REPLY
    question = vault / Q_REL
    question.write_text(QUESTION, encoding="utf-8")
    undo: list[Callable[[], None]] = []
    _block_archive(how, vault, tmp_path, undo)
    try:
        inbox = start()
        answer = vault / "queries/answers/Q.md"
        inbox.run_until(lambda: "could not archive the question" in read(answer))
        inbox.run_until(lambda: logged(caplog, "is answered but cannot be archived") >= RETRIES)
        assert chats(fake_ollama) == 1, "answered more than once"
        assert names(vault / "queries/answers") == ["Q.md"]
        assert note_status(answer) == "answered"
        assert log_lines(vault) == [], "logged before it was archived"
        assert question.read_text(encoding="utf-8") == QUESTION
        if how == "inbox unlink fails":
            assert names(vault / "queries/archive") == ["Q.md"], "one link, never one per try"
        if how == "archive symlinked out of the vault":
            assert names(tmp_path / "outside") == []
    finally:
        for step in reversed(undo):
            step()
    inbox.run_until(lambda: not question.exists())
    assert (vault / "queries/archive/Q.md").read_text(encoding="utf-8") == QUESTION
    assert names(vault / "queries/archive") == ["Q.md"]
    inbox.run_until(lambda: log_lines(vault))
    inbox.run_until(lambda: "Question not archived" not in read(answer))
    inbox.run_for(5.0)
    assert log_lines(vault) == [log_line_for(QUESTION, "queries/answers/Q.md").rstrip("\n")]
    assert chats(fake_ollama) == 1
    assert names(vault / "queries/answers") == ["Q.md"] and note_status(answer) == "answered"


# ---- defect 12: crash points of the archive step


def _answered_state(settings: Settings, status: str = "archiving") -> str:
    """The rows and notes a crash leaves once the final answer is written and recorded."""
    worker = AnswerFiles(settings)
    conn = connect(settings.db_path)
    try:
        text = render_answer_note(
            AnswerNote(
                question=QUESTION.strip(), status="answered", asked="2026-01-01", answer=REPLY
            )
        )
        rel = worker.write_answer(conn, None, text, Q_REL, "answered", (), "Q")
        with write_transaction(conn):
            answer_store.put_question(
                conn,
                answer_store.QuestionRow(
                    Q_REL,
                    rel,
                    status,
                    hashlib.sha256(QUESTION.encode()).hexdigest(),
                    "2026-01-01",
                    log_line_for(QUESTION, rel),
                ),
            )
    finally:
        conn.close()
    return rel


def _question_rows(settings: Settings) -> int:
    conn = connect(settings.db_path)
    try:
        return conn.execute("SELECT count(*) FROM inbox_questions").fetchone()[0]
    finally:
        conn.close()


def test_crash_between_archive_link_and_inbox_unlink_archives_once_and_logs_once(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
) -> None:
    question = vault / Q_REL
    question.write_text(QUESTION, encoding="utf-8")
    _answered_state(settings)
    (vault / "queries/archive").mkdir()
    os.link(question, vault / "queries/archive/Q.md")
    inbox = start()
    inbox.run_until(lambda: not question.exists())
    inbox.run_until(lambda: log_lines(vault))
    inbox.run_until(lambda: _question_rows(settings) == 0)
    assert names(vault / "queries/archive") == ["Q.md"]
    assert names(vault / "queries/answers") == ["Q.md"]
    assert chats(fake_ollama) == 0 and len(log_lines(vault)) == 1


def test_crash_between_inbox_unlink_and_the_transaction_still_logs_the_line(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
) -> None:
    _answered_state(settings)
    (vault / "queries/archive").mkdir()
    (vault / "queries/archive/Q.md").write_text(QUESTION, encoding="utf-8")  # moved, then kill
    inbox = start()
    inbox.run_until(lambda: _question_rows(settings) == 0)
    assert log_lines(vault) == [log_line_for(QUESTION, "queries/answers/Q.md").rstrip("\n")]
    assert chats(fake_ollama) == 0


def test_crash_between_the_log_append_and_the_delete_does_not_log_twice(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
) -> None:
    _answered_state(settings, status="logging")
    (vault / "queries/log.md").write_text(
        log_line_for(QUESTION, "queries/answers/Q.md"), encoding="utf-8"
    )
    inbox = start()
    inbox.run_until(lambda: _question_rows(settings) == 0)
    assert log_lines(vault) == [log_line_for(QUESTION, "queries/answers/Q.md").rstrip("\n")]


def test_an_answered_question_edited_before_its_archive_is_logged_and_asked_anew(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.chat_script = lambda messages: REPLY
    question = vault / Q_REL
    question.write_text("How do embeds show notes?\n", encoding="utf-8")  # not the answered text
    _answered_state(settings)
    inbox = start()
    inbox.run_until(lambda: note_status(vault / "queries/answers/Q (2).md") == "answered")
    inbox.run_until(lambda: len(log_lines(vault)) == 2)
    assert chats(fake_ollama) == 1


def test_crash_without_hard_links_leaves_no_empty_note_in_answers_or_archive(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
) -> None:
    # Where hard links are refused, a name is reserved as an empty file, then the finished
    # temp file is renamed onto it; a kill -9 between the two leaves the empty file.
    fake_ollama.chat_script = lambda messages: REPLY
    (vault / "queries/answers").mkdir(parents=True)
    (vault / "queries/archive").mkdir()
    (vault / "queries/answers/Q.md").write_bytes(b"")
    (vault / "queries/archive/R.md").write_bytes(b"")
    (vault / "queries/answers/Users own empty note.md").write_bytes(b"")
    (vault / Q_REL).write_text(QUESTION, encoding="utf-8")
    (vault / "queries/inbox/R.md").write_text(QUESTION, encoding="utf-8")
    conn = connect(settings.db_path)
    try:
        with write_transaction(conn):
            placeholder = render_answer_note(
                AnswerNote(question=QUESTION.strip(), status="answering", asked="2026-01-01")
            )
            answer_store.put_answer(
                conn,
                answer_store.AnswerRow(
                    "queries/answers/Q.md",
                    Q_REL,
                    "answering",
                    hashlib.sha256(placeholder.encode()).hexdigest(),
                    (),
                ),
            )
            answer_store.record_placeholder(conn, "queries/answers/Q.md")
            answer_store.record_placeholder(conn, "queries/archive/R.md")
    finally:
        conn.close()
    inbox = start()
    inbox.run_until(
        lambda: not (vault / Q_REL).exists() and not (vault / "queries/inbox/R.md").exists()
    )
    assert names(vault / "queries/answers") == ["Q.md", "R.md", "Users own empty note.md"]
    assert names(vault / "queries/archive") == ["Q.md", "R.md"]
    assert (vault / "queries/archive/R.md").read_text(encoding="utf-8") == QUESTION
    assert note_status(vault / "queries/answers/Q.md") == "answered"
    assert (vault / "queries/answers/Users own empty note.md").read_bytes() == b""


# ---- defect 14: a log that is a user's note


def test_a_log_symlinked_to_a_user_note_is_never_appended_to(
    vault: Path,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.chat_script = lambda messages: REPLY
    journal = vault / "Journal.md"
    journal.write_text("# Journal\n", encoding="utf-8")
    (vault / "queries/log.md").symlink_to("../Journal.md")
    (vault / Q_REL).write_text(QUESTION, encoding="utf-8")
    inbox = start()
    inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())
    inbox.run_for(5.0)
    assert journal.read_text(encoding="utf-8") == "# Journal\n"
    assert (vault / "queries/log.md").is_symlink()
    assert chats(fake_ollama) == 1


def test_start_up_keeps_a_user_file_named_like_a_temp_file(
    vault: Path,
    start: Callable[..., InboxDriver],
) -> None:
    kept = vault / "queries/answers/.askvault-tmp-my notes.md"
    kept.parent.mkdir(parents=True)
    kept.write_text("mine")
    os.utime(kept, (1, 1))
    start().run_for(5.0)
    assert kept.read_text() == "mine"


# ---- defect 16a: a waiting note is rewritten only when what it says changes


def test_waiting_note_is_not_rewritten_by_retries_that_say_the_same(
    vault: Path,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="askvault")  # the retries log at debug
    fake_ollama.set_fault("down")
    (vault / Q_REL).write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "waiting")
    first = answer.stat()
    waits = logged(caplog, "question queries/inbox/Q.md waits")
    seen = set()

    def retried() -> bool:
        with_stat = answer.stat()
        seen.add((with_stat.st_ino, with_stat.st_mtime_ns))
        return logged(caplog, "question queries/inbox/Q.md waits") >= waits + RETRIES

    inbox.run_until(retried)
    assert seen == {(first.st_ino, first.st_mtime_ns)}, "the waiting note was rewritten"
    fake_ollama.chat_script = [REPLY]
    fake_ollama.recover()
    inbox.run_until(lambda: note_status(answer) == "answered")
    assert names(vault / "queries/answers") == ["Q.md"]


def test_questions_waiting_for_one_reason_log_one_warning_not_one_per_retry(
    vault: Path,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="askvault")
    fake_ollama.set_fault("down")
    (vault / Q_REL).write_text(QUESTION, encoding="utf-8")
    (vault / "queries/inbox/Other.md").write_text("Why do ferns like shade?\n", encoding="utf-8")
    inbox = start()
    inbox.run_until(lambda: logged(caplog, " waits ") >= 2 + RETRIES)
    warnings = [
        r for r in caplog.records if r.levelno == logging.WARNING and " waits " in r.getMessage()
    ]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    fake_ollama.chat_script = [REPLY, REPLY]
    fake_ollama.recover()
    inbox.run_until(lambda: note_status(vault / "queries/answers/Q.md") == "answered")
    # a later outage is a new one: warned about again
    fake_ollama.set_fault("down")
    (vault / "queries/inbox/Third.md").write_text("What is moss?\n", encoding="utf-8")
    inbox.run_until(
        lambda: (
            sum(
                r.levelno == logging.WARNING and " waits " in r.getMessage() for r in caplog.records
            )
            == 2
        )
    )


def test_waiting_note_is_rewritten_when_its_reason_changes(
    vault: Path,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.set_fault("down")
    (vault / Q_REL).write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "waiting")
    before = read(answer)
    fake_ollama.set_fault("500")
    inbox.run_until(lambda: read(answer) != before)
    assert note_status(answer) == "waiting"


# ---- defect 7: a user's save landing during askvault's rewrite is kept


def test_a_save_landing_during_the_rewrite_of_our_note_is_kept_and_a_2_is_written(
    vault: Path,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = AnswerFiles(settings)
    conn = connect(settings.db_path)
    try:
        rel = worker.write_answer(
            conn, None, "---\nstatus: answering\n---\n", Q_REL, "answering", (), "Q"
        )
        target = vault / rel
        real_fsync = os.fsync
        landed: list[bool] = []

        def fsync_then_user_saves(fd: int) -> None:
            real_fsync(fd)
            if not landed:
                landed.append(True)
                target.write_text("the user's own text")

        monkeypatch.setattr(os, "fsync", fsync_then_user_saves)
        final = worker.write_answer(
            conn, rel, "---\nstatus: answered\n---\n", Q_REL, "answered", (), "Q"
        )
        monkeypatch.undo()
        row = answer_store.get_answer(conn, rel)
    finally:
        conn.close()
    assert final == "queries/answers/Q (2).md"
    assert target.read_text() == "the user's own text"
    assert (vault / final).read_text().startswith("---\nstatus: answered\naskvault: ")
    assert row is not None and not row.holds(b"the user's own text")
