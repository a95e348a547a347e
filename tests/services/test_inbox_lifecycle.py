"""The life of question and answer notes (issues 14 and 15): ownership that survives an
index rebuild, a vault that goes away mid-answer, answers that cannot be written, the
new-note flow. An Inbox stepped with a clock moved by hand, a temp vault, the fake Ollama."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from askvault.adapters import answer_store
from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.core.ownership import sign_note
from askvault.services.inbox.files import AnswerFiles
from askvault.services.inbox.presence import VaultPresence
from askvault.services.index.index_pass import index_vault
from askvault.settings import Settings
from support import inbox_fixtures
from support.fake_ollama import FakeOllama
from support.inbox_driver import InboxDriver
from support.inbox_fixtures import note_status

QUESTION = "What does an embed show?\n"
REPLY = "An embed shows another note inline [[Embeds]]."


vault, settings, start = inbox_fixtures.vault, inbox_fixtures.settings, inbox_fixtures.start


def _delete_index(settings: Settings, *, rebuild: bool) -> None:
    """What a user told by doctor to delete the index does (then `askvault index`)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{settings.db_path}{suffix}").unlink(missing_ok=True)
    if rebuild:
        index_vault(settings, OllamaClients(settings))


def _answer_rows(settings: Settings) -> list[str]:
    conn = connect(settings.db_path)
    try:
        return [r[0] for r in conn.execute("SELECT path FROM answers ORDER BY path")]
    finally:
        conn.close()


# -- 16e: ownership that survives an index rebuild -------------------------------------


@pytest.mark.parametrize("rebuild", [False, True], ids=["empty_index", "index_rebuilt"])
def test_a_waiting_question_is_finished_in_place_after_the_index_is_deleted(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    rebuild: bool,
) -> None:
    fake_ollama.set_fault("down")
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "waiting")
    inbox.close()
    assert 'askvault: "v1:' in answer.read_text(encoding="utf-8")
    _delete_index(settings, rebuild=rebuild)
    fake_ollama.chat_script = [REPLY]
    fake_ollama.recover()
    inbox = start()
    inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())
    assert note_status(answer) in ("answered", "no-answer")
    assert sorted(p.name for p in (vault / "queries/answers").iterdir()) == ["Q.md"]


def test_an_edited_answer_stays_the_users_after_the_index_is_deleted(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(answer) == "waiting")
    inbox.close()
    # An edit that keeps the marker line: the marker no longer matches the text.
    edited = answer.read_text(encoding="utf-8").replace("Waiting for Ollama", "My own words")
    answer.write_text(edited, encoding="utf-8")
    _delete_index(settings, rebuild=True)
    fake_ollama.chat_script = [REPLY]
    fake_ollama.recover()
    inbox = start()
    inbox.run_until(lambda: note_status(vault / "queries/answers/Q (2).md") == "answered")
    assert answer.read_text(encoding="utf-8") == edited
    assert "queries/answers/Q.md" not in _answer_rows(settings)


@pytest.mark.parametrize(
    "forgery", ["made_up_value", "marker_of_another_note", "copied_to_another_name"]
)
def test_a_forged_or_copied_marker_is_not_trusted_after_the_index_is_deleted(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    forgery: str,
) -> None:
    answers = vault / "queries/answers"
    answers.mkdir(parents=True)
    mine = "---\nstatus: waiting\n---\n> [!question]\n> What does an embed show?\n\nMine.\n"
    if forgery == "made_up_value":
        text = mine.replace("---\n>", 'askvault: "v1:' + "0" * 64 + '"\n---\n>', 1)
        target = answers / "Q.md"
    elif forgery == "marker_of_another_note":
        marker = next(
            line for line in sign_note(mine, "Other").splitlines() if line.startswith("askvault:")
        )
        text = mine.replace("---\n>", marker + "\n---\n>", 1)
        target = answers / "Q.md"
    else:
        text = sign_note(mine, "Other")  # a genuine note of question `Other`, copied as Q.md
        target = answers / "Q.md"
    target.write_text(text, encoding="utf-8")
    _delete_index(settings, rebuild=True)
    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    inbox.run_until(lambda: note_status(answers / "Q (2).md") == "answered")
    assert target.read_text(encoding="utf-8") == text


def test_an_adopted_answer_is_not_stale_for_the_rebuild_but_is_for_a_later_edit(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    from askvault.services.index.indexer import index_paths

    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())
    inbox.close()
    before = answer.read_bytes()
    _delete_index(settings, rebuild=False)
    inbox = start()
    inbox.run_until(lambda: "queries/answers/Q.md" in _answer_rows(settings))
    # The rebuilt index reads every note: a report, not a change.
    index_vault(settings, OllamaClients(settings))
    inbox.on_notes_changed(["Embeds.md", "Links.md"], [])
    inbox.run_for(5.0)
    assert answer.read_bytes() == before
    embeds = vault / "Embeds.md"
    embeds.write_text(embeds.read_text(encoding="utf-8") + "\nA later edit.\n", encoding="utf-8")
    conn = connect(settings.db_path)
    try:
        index_paths(conn, settings, ["Embeds.md"])
    finally:
        conn.close()
    inbox.on_notes_changed(["Embeds.md"], [])
    inbox.run_until(lambda: note_status(answer) == "stale")
    conn = connect(settings.db_path)
    try:
        row = answer_store.get_answer(conn, "queries/answers/Q.md")
    finally:
        conn.close()
    assert row is not None and row.cited == ("Embeds.md",)


# -- 13: the vault moved away mid-answer (the drill is tests/faults/test_fault_vault_moved.py)


def test_no_answer_note_or_folder_is_created_where_the_vault_was(
    vault: Path, settings: Settings, tmp_path: Path
) -> None:
    from askvault.errors import VaultUnavailable

    worker, presence = AnswerFiles(settings), VaultPresence(settings)
    conn = connect(settings.db_path)
    try:
        vault.rename(tmp_path / "aside")
        with pytest.raises(VaultUnavailable):
            worker.write_answer(
                conn,
                None,
                "---\nstatus: answering\n---\n",
                "queries/inbox/Q.md",
                "answering",
                (),
                "Q",
            )
        with pytest.raises(OSError):
            worker.append_log_line("## [2026-12-01] query | Q\n")
        assert not vault.exists()
        assert presence.vault_present() is False
        vault.mkdir()  # an empty mount point in its place
        assert presence.vault_present() is False
        with pytest.raises(VaultUnavailable):
            worker.write_answer(
                conn,
                None,
                "---\nstatus: answering\n---\n",
                "queries/inbox/Q.md",
                "answering",
                (),
                "Q",
            )
        assert list(vault.iterdir()) == []
        vault.rmdir()
        (tmp_path / "aside").rename(vault)
        assert presence.vault_present() is True
    finally:
        conn.close()


@pytest.mark.parametrize("status", ["answering", "waiting"])
def test_an_unfinished_note_whose_rows_were_lost_is_finished_in_place(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    status: str,
) -> None:
    from askvault.adapters.db import write_transaction
    from askvault.core.answer_note import AnswerNote, render_answer_note

    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    conn = connect(settings.db_path)
    try:
        rel = AnswerFiles(settings).write_answer(
            conn,
            None,
            render_answer_note(
                AnswerNote(
                    question=QUESTION.strip(), status=status, asked="2026-12-01T10:00:00+01:00"
                )
            ),
            "queries/inbox/Q.md",
            status,
            (),
            "Q",
        )
        with write_transaction(conn):  # the rows lost, the note (with its marker) kept
            answer_store.delete_answer(conn, rel)
            answer_store.delete_question(conn, "queries/inbox/Q.md")
    finally:
        conn.close()
    fake_ollama.chat_script = [REPLY]
    inbox = start()
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())
    assert note_status(answer) == "answered"
    assert sorted(p.name for p in (vault / "queries/answers").iterdir()) == ["Q.md"]


# -- 16b: answer notes that cannot be written show it inside the vault ------------------

PROBLEM = "queries/Answers cannot be written.md"


@pytest.mark.parametrize("fault", ["answers_is_a_file", "answers_links_out_of_the_vault"])
def test_answers_that_cannot_be_written_show_a_problem_note_removed_once_they_can(
    vault: Path,
    tmp_path: Path,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    fault: str,
) -> None:
    answers = vault / "queries/answers"
    if fault == "answers_is_a_file":
        answers.write_text("not a folder", encoding="utf-8")
    else:
        (tmp_path / "elsewhere").mkdir()
        answers.symlink_to(tmp_path / "elsewhere")
    question = vault / "queries/inbox/Q.md"
    question.write_bytes(QUESTION.encode("utf-8"))
    fake_ollama.chat_script = [REPLY]
    inbox = start()
    problem = vault / PROBLEM
    inbox.run_until(problem.exists)
    text = problem.read_text(encoding="utf-8")
    assert "askvault cannot write answer notes" in text and "queries/answers/" in text
    assert ("not a folder" in text) if fault == "answers_is_a_file" else ("outside" in text)
    first = problem.stat()
    inbox.run_for(5.0)  # several retries with the same reason: the note is not rewritten
    again = problem.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    assert question.read_bytes() == QUESTION.encode("utf-8"), "the question is never touched"
    assert list((tmp_path / "elsewhere").iterdir() if fault != "answers_is_a_file" else []) == []
    answers.unlink()
    inbox.run_until(lambda: note_status(vault / "queries/answers/Q.md") == "answered")
    inbox.run_until(lambda: not problem.exists())


def test_the_problem_note_is_rate_limited_and_never_written_over_a_users_note(
    vault: Path, settings: Settings
) -> None:
    worker = AnswerFiles(settings)
    worker.show_write_problem(OSError(28, "No space left on device"), now=1000.0)
    problem = vault / PROBLEM
    assert "No space left on device" in problem.read_text(encoding="utf-8")
    worker.show_write_problem(OSError(13, "Permission denied"), now=1010.0)  # within a minute
    assert "No space left on device" in problem.read_text(encoding="utf-8")
    worker.show_write_problem(OSError(13, "Permission denied"), now=1061.0)
    assert "Permission denied" in problem.read_text(encoding="utf-8")
    problem.write_text(problem.read_text(encoding="utf-8") + "my remark\n", encoding="utf-8")
    mine = problem.read_bytes()
    worker.show_write_problem(OSError(28, "No space left on device"), now=2000.0)
    worker.clear_write_problem()
    assert problem.read_bytes() == mine, "an edited note is the user's"
    problem.unlink()
    worker.show_write_problem(OSError(28, "No space left on device"), now=3000.0)
    assert problem.exists()
    AnswerFiles(settings).clear_write_problem(at_start=True)
    assert not problem.exists()


# -- issue 14 item 3: the new-note flow --------------------------------------------------


@pytest.mark.parametrize(
    "content",
    ["", " \n\t\n", "---\ntags: [question]\n---\n\n"],
    ids=["zero_bytes", "whitespace_only", "template_frontmatter_only"],
)
def test_obsidians_untitled_note_is_not_answered_until_it_is_renamed_and_typed(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama, content: str
) -> None:
    fake_ollama.chat_script = [REPLY]
    untitled = vault / "queries/inbox/Untitled.md"
    untitled.write_text(content, encoding="utf-8")
    inbox = start()
    inbox.run_for(5.0)
    assert not (vault / "queries/answers").exists() or not any(
        (vault / "queries/answers").iterdir()
    ), "no failed note for an empty new note"
    named = vault / "queries/inbox/How do embeds work.md"
    untitled.rename(named)
    named.write_text(QUESTION, encoding="utf-8")
    inbox.run_until(lambda: (vault / "queries/archive/How do embeds work.md").exists())
    assert [p.name for p in (vault / "queries/answers").iterdir()] == ["How do embeds work.md"]
    assert not fake_ollama.requests_to("/api/chat")[1:], "asked once"


BAD = "---\nmax_sources: 0\n---\nWhat does an embed show?\n"


@pytest.mark.parametrize("how", ["renamed_and_fixed", "deleted", "moved_out_of_the_inbox"])
def test_a_failed_note_is_removed_when_its_question_leaves_the_inbox(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama, how: str
) -> None:
    fake_ollama.chat_script = [REPLY]
    question = vault / "queries/inbox/Q.md"
    question.write_text(BAD, encoding="utf-8")
    inbox = start()
    failed = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(failed) == "failed")
    if how == "renamed_and_fixed":
        renamed = vault / "queries/inbox/R.md"
        question.rename(renamed)
        renamed.write_text(QUESTION, encoding="utf-8")
        inbox.run_until(lambda: (vault / "queries/archive/R.md").exists())
        assert note_status(vault / "queries/answers/R.md") == "answered"
    elif how == "deleted":
        question.unlink()
    else:
        question.rename(vault / "Q.md")
    inbox.run_until(lambda: not failed.exists())


def test_a_failed_note_edited_by_the_user_is_kept_when_its_question_goes(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver]
) -> None:
    question = vault / "queries/inbox/Q.md"
    question.write_text(BAD, encoding="utf-8")
    inbox = start()
    failed = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(failed) == "failed")
    failed.write_text(failed.read_text(encoding="utf-8") + "\nmy remark\n", encoding="utf-8")
    mine = failed.read_bytes()
    question.unlink()
    inbox.run_until(lambda: "queries/answers/Q.md" not in _answer_rows(settings))
    assert failed.read_bytes() == mine


@pytest.mark.parametrize("index_lost", [False, True])
def test_a_waiting_note_whose_question_was_deleted_while_stopped_is_removed_at_start(
    vault: Path,
    settings: Settings,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    index_lost: bool,
) -> None:
    fake_ollama.set_fault("down")
    question = vault / "queries/inbox/Q.md"
    question.write_text(QUESTION, encoding="utf-8")
    inbox = start()
    waiting = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: note_status(waiting) == "waiting")
    inbox.close()
    question.unlink()
    if index_lost:
        _delete_index(settings, rebuild=True)
    inbox = start()
    # The file goes first, its row in the transaction after: wait for both (a loaded
    # machine showed the gap).
    inbox.run_until(lambda: not waiting.exists() and _answer_rows(settings) == [])


# -- issue 14 item 4: log lines that link to their answer -------------------------------


def test_log_lines_keep_their_shape_and_link_to_the_answer_golden() -> None:
    from askvault.services.inbox.files import log_line_for

    day = time.strftime("%Y-%m-%d")
    lines = "".join(
        [
            log_line_for("How do embeds work?", "queries/answers/How do embeds work.md"),
            log_line_for(
                "# A [bracketed] | barred question\nsecond line", "queries/answers/Q (2).md"
            ),
            log_line_for("A name no link can hold", "queries/answers/C# notes.md"),
            log_line_for("Asked on the command line, not saved"),
        ]
    ).replace(day, "2026-12-01")
    golden = Path(__file__).resolve().parent.parent / "golden" / "log_lines.md"
    if __import__("os").environ.get("UPDATE_GOLDEN"):
        golden.write_text(lines, encoding="utf-8")
    assert golden.read_text(encoding="utf-8") == lines
    import re

    assert all(
        re.fullmatch(r"## \[\d{4}-\d\d-\d\d\] query \| .+", line) for line in lines.splitlines()
    )


def test_a_waiting_or_failed_question_gets_its_log_line_only_once_answered(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    log = vault / "queries/log.md"
    (vault / "queries/inbox/Bad.md").write_text(BAD, encoding="utf-8")
    fake_ollama.set_fault("down")
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    inbox.run_until(lambda: note_status(vault / "queries/answers/Q.md") == "waiting")
    inbox.run_until(lambda: note_status(vault / "queries/answers/Bad.md") == "failed")
    inbox.run_for(5.0)
    assert not log.exists()
    fake_ollama.chat_script = [REPLY]
    fake_ollama.recover()
    inbox.run_until(lambda: log.exists() and log.read_text(encoding="utf-8").strip())
    assert log.read_text(encoding="utf-8") == (
        f"## [{time.strftime('%Y-%m-%d')}] query | [[queries/answers/Q|What does an embed show?]]\n"
    )


def test_every_time_in_an_answer_note_is_iso_8601_with_the_local_offset(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    import re

    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    inbox = start()
    inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())
    text = (vault / "queries/answers/Q.md").read_text(encoding="utf-8")
    times = dict(re.findall(r'^(asked|answered|index_as_of): "([^"]*)"$', text, re.MULTILINE))
    assert set(times) == {"asked", "answered", "index_as_of"}
    for key, value in times.items():
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", value), (key, value)


# -- issue 14 item 5: `refresh: true` on a stale answer ----------------------------------


def _stale_answer(vault: Path, settings: Settings, inbox: InboxDriver, question: bytes) -> Path:
    from askvault.services.index.indexer import index_paths

    (vault / "queries/inbox/Q.md").write_bytes(question)
    answer = vault / "queries/answers/Q.md"
    inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())
    embeds = vault / "Embeds.md"
    embeds.write_text(embeds.read_text(encoding="utf-8") + "\nA later edit.\n", encoding="utf-8")
    conn = connect(settings.db_path)
    try:
        index_paths(conn, settings, ["Embeds.md"])
    finally:
        conn.close()
    inbox.on_notes_changed(["Embeds.md"], [])
    inbox.run_until(lambda: note_status(answer) == "stale")
    return answer


def _set_refresh(answer: Path) -> None:
    """What Obsidian's properties panel does: a `refresh: true` line in the frontmatter."""
    text = answer.read_text(encoding="utf-8")
    answer.write_text(
        text.replace("status: stale\n", "status: stale\nrefresh: true\n", 1), encoding="utf-8"
    )


def test_refresh_on_a_stale_answer_asks_again_beside_it_and_keeps_the_old(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY, REPLY]
    question = b"---\nask_folders: []\nkept: yes\n---\nWhat does an embed show?\n"
    inbox = start()
    answer = _stale_answer(vault, settings, inbox, question)
    _set_refresh(answer)
    inbox.notice(["queries/answers/Q.md"])
    fresh = vault / "queries/answers/Q (2).md"
    inbox.run_until(lambda: (vault / "queries/archive/Q (2).md").exists())
    assert note_status(fresh) == "answered"
    old = answer.read_text(encoding="utf-8")
    assert note_status(answer) == "stale" and "refresh:" not in old
    assert (vault / "queries/archive/Q (2).md").read_bytes() == question, "asked as it was"
    assert len(fake_ollama.requests_to("/api/chat")) == 2
    inbox.run_for(5.0)
    assert not (vault / "queries/answers/Q (3).md").exists(), "asked once"
    inbox.on_notes_changed(["Embeds.md"], [])  # still ours: still marked
    assert "queries/answers/Q.md" in _answer_rows(settings)


def test_refresh_on_an_answer_edited_by_the_user_is_not_acted_on(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY, REPLY]
    inbox = start()
    answer = _stale_answer(vault, settings, inbox, QUESTION.encode("utf-8"))
    _set_refresh(answer)
    answer.write_text(answer.read_text(encoding="utf-8") + "\nmy remark\n", encoding="utf-8")
    mine = answer.read_bytes()
    inbox.notice(["queries/answers/Q.md"])
    inbox.run_for(5.0)
    assert answer.read_bytes() == mine
    assert not (vault / "queries/answers/Q (2).md").exists()
    assert list((vault / "queries/inbox").iterdir()) == []


def test_refresh_set_while_the_daemon_was_stopped_is_acted_on_at_start(
    vault: Path, settings: Settings, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY, REPLY]
    inbox = start()
    answer = _stale_answer(vault, settings, inbox, QUESTION.encode("utf-8"))
    _set_refresh(answer)
    inbox.restart()
    inbox.run_until(lambda: note_status(vault / "queries/answers/Q (2).md") == "answered")
    assert "refresh:" not in answer.read_text(encoding="utf-8")


# -- issue 25 item 11: a file name that is not valid UTF-8 -------------------------------


def test_a_question_whose_file_name_is_not_utf8_is_answered_and_archived_under_a_safe_name(
    vault: Path,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import os

    fake_ollama.chat_script = [REPLY]
    inbox_dir = os.fsencode(vault / "queries/inbox")
    data = b"---\nkept: yes\n---\nWhat does an embed show?\n"
    with open(os.path.join(inbox_dir, b"Ferry \xfe.md"), "wb") as fh:
        fh.write(data)
    inbox = start()
    archived = vault / "queries/archive/Ferry \ufffd.md"
    inbox.run_until(archived.exists)
    assert archived.read_bytes() == data, "archived byte for byte"
    assert os.listdir(inbox_dir) == []
    answer = vault / "queries/answers/Ferry \ufffd.md"
    assert note_status(answer) == "answered"
    assert "> What does an embed show?" in answer.read_text(encoding="utf-8")
    log = (vault / "queries/log.md").read_text(encoding="utf-8")
    assert "[[queries/answers/Ferry \ufffd|What does an embed show?]]" in log
    assert "not valid UTF-8" in caplog.text and "Traceback" not in caplog.text


def test_a_waiting_question_whose_file_name_is_not_utf8_keeps_its_note_until_answered(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    import os

    fake_ollama.set_fault("down")
    with open(os.path.join(os.fsencode(vault / "queries/inbox"), b"Ferry \xfe.md"), "wb") as fh:
        fh.write(QUESTION.encode("utf-8"))
    inbox = start()
    waiting = vault / "queries/answers/Ferry \ufffd.md"
    inbox.run_until(lambda: note_status(waiting) == "waiting")
    first = waiting.stat()
    inbox.run_for(5.0)
    inbox.restart()
    inbox.run_for(5.0)
    again = waiting.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns), "kept"
    fake_ollama.chat_script = [REPLY]
    fake_ollama.recover()
    inbox.run_until(lambda: (vault / "queries/archive/Ferry \ufffd.md").exists())
    assert note_status(waiting) == "answered"
    assert sorted(p.name for p in (vault / "queries/answers").iterdir()) == ["Ferry \ufffd.md"]
