"""The inbox protocol: an Inbox stepped with a clock moved by hand, a temp vault, the fake
Ollama."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from askvault.adapters import answer_store, meta
from askvault.adapters.db import connect, write_transaction
from askvault.core.answer_note import AnswerNote, render_answer_note
from askvault.services.inbox.files import AnswerFiles
from askvault.services.inbox.question_options import parse_question_options, question_summary
from askvault.settings import Settings
from support import inbox_fixtures
from support.fake_ollama import FakeOllama
from support.inbox_driver import InboxDriver
from support.inbox_fixtures import note_status

QUESTION = "What does an embed show?\n"
REPLY = "An embed shows another note inline [[Embeds]]."


vault, settings, start = inbox_fixtures.vault, inbox_fixtures.settings, inbox_fixtures.start


def test_question_is_answered_archived_byte_for_byte_and_logged(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    data = b"---\nunknown_key: kept\n---\r\nWhat does an embed show?\r\n"
    question = vault / "queries/inbox/How do embeds work.md"
    question.write_bytes(data)
    inbox = start()
    answer = vault / "queries/answers/How do embeds work.md"
    inbox.run_until(lambda: note_status(answer) == "answered")
    archived = vault / "queries/archive/How do embeds work.md"
    inbox.run_until(archived.exists)
    assert archived.read_bytes() == data
    assert not question.exists()
    text = answer.read_text(encoding="utf-8")
    assert "> [!question]\n> What does an embed show?" in text
    assert "[[Embeds]]" in text and "**resolved** → `Embeds.md`" in text
    log = inbox.run_until(
        lambda: (
            (vault / "queries/log.md").read_text(encoding="utf-8")
            if (vault / "queries/log.md").exists()
            else ""
        )
    )
    assert log == (
        f"## [{time.strftime('%Y-%m-%d')}] query | "
        "[[queries/answers/How do embeds work|What does an embed show?]]\n"
    )


def test_draft_is_left_alone_until_the_key_is_removed(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    question = vault / "queries/inbox/Q.md"
    question.write_text("---\ndraft: true\n---\nWhat does an embed show?\n", encoding="utf-8")
    inbox = start()
    inbox.run_for(5.0)
    assert not (vault / "queries/answers").exists() or not any(
        (vault / "queries/answers").iterdir()
    )
    question.write_text(QUESTION, encoding="utf-8")
    inbox.run_until(lambda: note_status(vault / "queries/answers/Q.md") == "answered")


def test_invalid_options_fail_with_a_clear_reason_and_a_fix_is_answered(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = ["The second section explains fermentation of rye [[Deep Note]]."]
    question = vault / "queries/inbox/Q.md"
    question.write_text(
        "---\nfolders: [../outside]\nmax_sources: 0\n---\nWhat?\n", encoding="utf-8"
    )
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "failed")
    text = answer.read_text(encoding="utf-8")
    assert "'../outside' is outside the vault" in text and "max_sources" in text
    assert question.exists(), "a failed question stays in the inbox to be fixed"
    question.write_text(
        "---\nfolders: [folder]\n---\nWhat does the second section explain?\n", encoding="utf-8"
    )
    inbox.run_until(lambda: note_status(answer) == "answered")
    assert not (vault / "queries/answers/Q (2).md").exists()


def test_an_empty_question_gets_no_note_until_it_has_text(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    # Issue 14 item 3: an empty new note is not a failed question, only an unwritten one.
    fake_ollama.chat_script = [REPLY]
    empty = vault / "queries/inbox/Empty.md"
    empty.write_text("---\ntags: [x]\n---\n\n", encoding="utf-8")
    inbox = start()
    inbox.run_for(5.0)
    assert not (vault / "queries/answers/Empty.md").exists()
    empty.write_text("---\ntags: [x]\n---\n" + QUESTION, encoding="utf-8")
    inbox.run_until(lambda: (vault / "queries/archive/Empty.md").exists())


def test_ollama_down_then_back_answers_by_itself(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    question = vault / "queries/inbox/Q.md"
    question.write_text("embed another note inline\n", encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "waiting")
    text = answer.read_text(encoding="utf-8")
    assert "Waiting for Ollama" in text and "extractive, not an answer" in text
    assert question.exists()
    fake_ollama.chat_script = [REPLY]
    fake_ollama.recover()
    inbox.run_until(lambda: note_status(answer) == "answered")
    assert not (vault / "queries/answers/Q (2).md").exists()
    inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())


def test_user_edited_answer_is_never_overwritten(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    (vault / "queries/inbox/Q.md").write_text("embed another note inline\n", encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "waiting")
    answer.write_text("my own notes here\n", encoding="utf-8")
    fake_ollama.chat_script = [REPLY]
    fake_ollama.recover()
    inbox.run_until(lambda: note_status(vault / "queries/answers/Q (2).md") == "answered")
    assert answer.read_text(encoding="utf-8") == "my own notes here\n"


def test_question_edited_mid_answer_is_answered_again_with_the_edit(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    question = vault / "queries/inbox/Q.md"
    calls: list[int] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        calls.append(1)
        if len(calls) == 1:
            question.write_text("What does an embed show, exactly?\n", encoding="utf-8")
        return REPLY

    fake_ollama.chat_script = reply
    question.write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "answered")
    assert "exactly?" in answer.read_text(encoding="utf-8")
    assert len(calls) == 2
    # The answer note lands before the question is archived: wait for the archive too.
    inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())
    assert (vault / "queries/archive/Q.md").read_text(encoding="utf-8").endswith("exactly?\n")
    assert not (vault / "queries/answers/Q (2).md").exists()


def test_question_deleted_mid_answer_is_handled(
    vault: Path,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    caplog: pytest.LogCaptureFixture,
) -> None:
    question = vault / "queries/inbox/Q.md"

    def reply(messages: list[dict[str, Any]]) -> str:
        question.unlink()
        return REPLY

    fake_ollama.chat_script = reply
    question.write_text(QUESTION, encoding="utf-8")
    inbox = start()
    inbox.run_until(lambda: fake_ollama.requests_to("/api/chat"))
    inbox.run_for(5.0)
    assert "failed unexpectedly" not in caplog.text
    assert not (vault / "queries/answers/Q.md").exists()
    assert not (vault / "queries/archive/Q.md").exists()


def test_re_asking_gives_a_new_answer_and_keeps_the_first(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY, REPLY]
    question = vault / "queries/inbox/Q.md"
    question.write_text(QUESTION, encoding="utf-8")
    inbox = start()
    inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())
    first = (vault / "queries/answers/Q.md").read_bytes()
    question.write_text(QUESTION, encoding="utf-8")
    inbox.run_until(lambda: (vault / "queries/archive/Q (2).md").exists())
    assert note_status(vault / "queries/answers/Q (2).md") == "answered"
    assert (vault / "queries/answers/Q.md").read_bytes() == first
    # The log line is appended after the archive: wait for it rather than read at once.
    inbox.run_until(
        lambda: (
            (vault / "queries/log.md")
            .read_text(encoding="utf-8")
            .count("|What does an embed show?]]")
            == 2
        )
    )


def test_questions_are_answered_oldest_first(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    import os

    asked: list[str] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        asked.append(messages[-1]["content"].rsplit("Question: ", 1)[1].strip())
        return REPLY

    fake_ollama.chat_script = reply
    for name, age in (("B", 30), ("A", 10), ("C", 20)):
        path = vault / f"queries/inbox/{name}.md"
        path.write_text(f"Question {name}?\n", encoding="utf-8")
        past = time.time() - age
        os.utime(path, (past, past))
    inbox = start()
    inbox.run_until(lambda: len(asked) == 3)
    assert asked == ["Question B?", "Question C?", "Question A?"]


def test_cited_note_change_marks_the_answer_stale(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "answered")
    _edit_and_index(settings, vault / "Embeds.md")
    inbox.on_notes_changed(["Embeds.md"], [])
    inbox.run_until(lambda: note_status(answer) == "stale")
    text = answer.read_text(encoding="utf-8")
    assert "> [!warning] Stale answer" in text and "[[Embeds]]" in text
    inbox.on_notes_changed(["Links.md"], [])  # not cited: nothing happens
    inbox.run_for(5.0)
    assert text == answer.read_text(encoding="utf-8")


def _edit_and_index(settings: Settings, path: Path) -> None:
    from askvault.services.index.indexer import index_paths

    path.write_text(path.read_text(encoding="utf-8") + "\nA later edit.\n", encoding="utf-8")
    conn = connect(settings.db_path)
    try:
        index_paths(conn, settings, [path.relative_to(settings.vault_path).as_posix()])
    finally:
        conn.close()


def test_a_change_report_of_a_note_the_answer_already_saw_does_not_mark_it_stale(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    # An indexing pass commits notes in groups and reports them at its end: an answer that
    # read a note committed early in the pass has seen its current content.
    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "answered")
    inbox.on_notes_changed(["Embeds.md"], [])
    inbox.run_for(5.0)
    assert note_status(answer) == "answered"
    _edit_and_index(settings, vault / "Embeds.md")
    inbox.on_notes_changed(["Embeds.md"], [])
    inbox.run_until(lambda: note_status(answer) == "stale")


def test_stale_answer_edited_by_the_user_is_listed_not_rewritten(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "answered")
    answer.write_text(answer.read_text(encoding="utf-8") + "\nmy note\n", encoding="utf-8")
    edited = answer.read_bytes()
    inbox.on_notes_changed([], ["Embeds.md"])

    def listed() -> list[str]:
        conn = connect(settings.db_path)
        try:
            return meta.stale_answers_edited(conn)
        finally:
            conn.close()

    assert inbox.run_until(listed) == ["queries/answers/Q.md"]
    assert answer.read_bytes() == edited


def test_a_waiting_question_survives_a_restart(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "waiting")
    fake_ollama.chat_script = [REPLY]
    fake_ollama.recover()
    inbox.restart()
    inbox.run_until(lambda: note_status(answer) == "answered")
    assert not (vault / "queries/answers/Q (2).md").exists()


def test_parse_question_options_validates_and_keeps_unknown_keys_out(vault: Path) -> None:
    options, errors = parse_question_options(
        {
            "folders": ["folder", "/etc", "nope"],
            "ask_tags": "#a, b",
            "max_sources": 3,
            "ask_model": "llama3.2",
            "ask_language": "fr",
            "whatever": 1,
        },
        vault,
    )
    assert options.folders == ("folder",) and options.tags == ("a", "b")
    assert (options.max_sources, options.model, options.language) == (3, "llama3.2", "fr")
    assert errors == [
        "folders: '/etc' is outside the vault",
        "folders: 'nope' is not a folder of the vault",
    ]
    _, errors = parse_question_options(
        {"max_sources": True, "ask_model": 3, "ask_tags": {"a": 1}}, vault
    )
    assert len(errors) == 3


def test_question_summary_is_one_truncated_line() -> None:
    assert question_summary("# How do\n embeds work?") == "How do"


def test_question_summary_has_no_control_characters() -> None:
    """It is the log note's line and the `Logged:` line on the terminal."""
    assert question_summary("What \x1b[2Jis\x07 this?") == "What is this?"
    long = question_summary("word " * 50)
    assert len(long) <= 80 and long.endswith("…")


def test_a_crash_right_after_the_answering_note_is_written_resumes_that_note(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    # The state a kill -9 leaves between writing the `answering` note and recording the
    # question: the note and its row exist, the question row does not.
    (vault / "queries/inbox").mkdir(parents=True, exist_ok=True)
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    conn = connect(settings.db_path)
    try:
        placeholder = render_answer_note(
            AnswerNote(question=QUESTION.strip(), status="answering", asked="2026-01-01")
        )
        written = AnswerFiles(settings).write_answer(
            conn, None, placeholder, "queries/inbox/Q.md", "answering", (), "Q"
        )
    finally:
        conn.close()
    assert written == "queries/answers/Q.md"
    fake_ollama.chat_script = [REPLY]
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "answered")
    assert not (vault / "queries/answers/Q (2).md").exists()


def test_write_answer_records_the_name_before_the_file_exists(
    vault: Path, settings: Settings
) -> None:
    folder = vault / "queries/answers"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Q.md").write_text("the user's own note", encoding="utf-8")
    conn = connect(settings.db_path)
    try:
        rel = AnswerFiles(settings).write_answer(
            conn, None, "text", "queries/inbox/Q.md", "answering", (), "Q"
        )
        row = answer_store.get_answer(conn, rel)
        stale = answer_store.get_answer(conn, "queries/answers/Q.md")
    finally:
        conn.close()
    assert rel == "queries/answers/Q (2).md"
    assert row is not None and row.status == "answering"
    assert stale is None  # the user's Q.md was never claimed
    assert (folder / "Q.md").read_text(encoding="utf-8") == "the user's own note"


@pytest.mark.parametrize("renamed", [False, True])
def test_a_crash_around_the_rename_of_a_rewrite_keeps_the_note_askvaults_own(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    renamed: bool,
) -> None:
    # The state a kill -9 leaves inside a rewrite of the `answering` note: the new hash is
    # recorded beside the old one, and the file holds the old bytes or (renamed) the new.
    (vault / "queries/inbox").mkdir(parents=True, exist_ok=True)
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    worker = AnswerFiles(settings)
    old = render_answer_note(
        AnswerNote(question=QUESTION.strip(), status="answering", asked="2026-01-01")
    ).encode("utf-8")
    new = old.replace(b"status: answering", b"status: waiting")
    conn = connect(settings.db_path)
    try:
        rel = worker.write_answer(
            conn, None, old.decode("utf-8"), "queries/inbox/Q.md", "answering", (), "Q"
        )
        old = (vault / rel).read_bytes()  # as written: with its ownership marker
        new = old.replace(b"status: answering", b"status: waiting")
        with write_transaction(conn):
            answer_store.put_answer(
                conn,
                answer_store.AnswerRow(
                    rel,
                    "queries/inbox/Q.md",
                    "waiting",
                    hashlib.sha256(new).hexdigest(),
                    (),
                    previous_sha256=hashlib.sha256(old).hexdigest(),
                ),
            )
            answer_store.put_question(
                conn,
                answer_store.QuestionRow(
                    "queries/inbox/Q.md",
                    rel,
                    "answering",
                    hashlib.sha256(QUESTION.encode("utf-8")).hexdigest(),
                    "2026-01-01",
                ),
            )
    finally:
        conn.close()
    if renamed:
        (vault / rel).write_bytes(new)
    fake_ollama.chat_script = [REPLY]
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "answered")
    assert not (vault / "queries/answers/Q (2).md").exists()


def test_notice_looks_again_only_for_questions_and_answer_notes(settings: Settings) -> None:
    from askvault.app.clients import OllamaClients
    from askvault.services.inbox.inbox import Inbox

    inbox = Inbox(settings, OllamaClients(settings))
    assert inbox.notice(["queries/inbox/Q.md"])
    assert inbox.notice(["Notes/A.md", "queries/answers/Q.md"])
    assert not inbox.notice(["queries/archive/Q.md", "queries/log.md", "Notes/A.md"])
