"""`askvault status`'s questions: every note of the inbox shown as what it is."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from askvault.adapters import answer_store
from askvault.adapters.answer_store import QuestionRow
from askvault.adapters.db import connect, write_transaction
from askvault.cli.render import status_lines
from askvault.core.schema import to_json
from askvault.services.admin.status import collect_status
from support.fake_ollama import FakeOllama
from support.inbox_driver import inbox_settings, inbox_vault


def test_a_note_with_properties_and_no_question_is_shown_empty_not_waiting_to_be_answered(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    vault = inbox_vault(tmp_path / "vault")
    settings = inbox_settings(vault, tmp_path / "state", fake_ollama.url)
    inbox = vault / "queries/inbox"
    (inbox / "Untitled.md").write_text("", encoding="utf-8")
    (inbox / "Template.md").write_text("---\ntags: [question]\n---\n\n", encoding="utf-8")
    (inbox / "Q.md").write_text("What does an embed show?\n", encoding="utf-8")
    doc = to_json(collect_status(settings, probe=False))
    questions = doc["questions"]
    assert questions["empty"] == ["queries/inbox/Template.md", "queries/inbox/Untitled.md"]
    assert questions["new"] == ["queries/inbox/Q.md"]
    assert doc["queue"] == 1, "only the question is waiting to be answered"
    line = next(x for x in status_lines(doc) if x.startswith("questions"))
    assert line.endswith("1 to answer (1 new), 0 drafts, 0 failed, 2 with no question text yet")


def test_a_question_whose_file_name_is_not_utf8_is_shown_by_its_safe_name_in_its_state(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    vault = inbox_vault(tmp_path / "vault")
    settings = inbox_settings(vault, tmp_path / "state", fake_ollama.url)
    with open(os.path.join(os.fsencode(vault / "queries/inbox"), b"Ferry \xfe.md"), "wb") as fh:
        fh.write(b"When does the ferry leave?\n")
    rel = "queries/inbox/Ferry \ufffd.md"  # as the inbox holds it
    conn = connect(settings.db_path)
    try:
        with write_transaction(conn):
            answer_store.put_question(
                conn,
                QuestionRow(
                    rel,
                    "queries/answers/Ferry \ufffd.md",
                    "waiting",
                    hashlib.sha256(b"When does the ferry leave?\n").hexdigest(),
                    "2026-12-01T12:00:00+00:00",
                ),
            )
    finally:
        conn.close()
    doc = to_json(collect_status(settings, probe=False))
    assert doc["questions"]["waiting"] == [rel]
    assert rel in json.dumps(doc, ensure_ascii=False).encode("utf-8").decode("utf-8")


def test_an_answer_note_with_a_follow_up_to_answer_is_listed(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    from askvault.adapters.answer_store import AnswerRow

    vault = inbox_vault(tmp_path / "vault")
    settings = inbox_settings(vault, tmp_path / "state", fake_ollama.url)
    answers = vault / "queries/answers"
    answers.mkdir(parents=True)
    head = '---\nquestion: "q?"\nstatus: answered\n---\nA.\n'
    (answers / "Ours.md").write_text(head + "## Follow-up\nand?\n", encoding="utf-8")
    (answers / "Done.md").write_text(
        head + "## Follow-up\nand?\n%% askvault: turn 2 %%\nB.\n", encoding="utf-8"
    )
    (answers / "Not ours.md").write_text(head + "## Follow-up\nand?\n", encoding="utf-8")
    conn = connect(settings.db_path)
    with write_transaction(conn):
        for name in ("Ours", "Done"):
            row = AnswerRow(f"queries/answers/{name}.md", "", "answered", "x", ())
            answer_store.put_answer(conn, row)
    conn.close()
    doc = to_json(collect_status(settings, probe=False))
    assert doc["follow_ups"] == ["queries/answers/Ours.md"]
    assert "follow-ups   1 to answer: queries/answers/Ours.md" in status_lines(doc)
