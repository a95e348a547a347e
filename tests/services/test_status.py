"""`askvault status`'s questions: every note of the inbox shown as what it is."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from askvault.adapters import answer_store
from askvault.adapters.answer_store import QuestionRow
from askvault.adapters.db import connect, write_transaction
from askvault.core.schema import to_json
from askvault.services.status import collect_status
from support.fake_ollama import FakeOllama
from support.inbox_driver import inbox_settings, inbox_vault


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
