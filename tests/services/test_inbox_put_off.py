"""A question put off (answer notes cannot be written) says so once per reason, not once per
retry: before issue 25 item 11 each retry logged a whole traceback."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from support.fake_ollama import FakeOllama
from support.inbox_driver import driver_starter, inbox_settings, inbox_vault

QUESTION = "What does an embed show?\n"
REPLY = "An embed shows another note inline [[Embeds]]."


def test_a_question_put_off_logs_one_line_per_reason_and_no_traceback(
    tmp_path: Path, fake_ollama: FakeOllama, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="askvault")
    vault = inbox_vault(tmp_path / "vault")
    settings = inbox_settings(vault, tmp_path / "state", fake_ollama.url)
    answers = vault / "queries/answers"
    answers.write_text("not a folder", encoding="utf-8")
    (vault / "queries/inbox/Q.md").write_text(QUESTION, encoding="utf-8")
    fake_ollama.chat_script = lambda messages: REPLY
    with driver_starter(settings, backoff_max_s=0.4) as start:
        inbox = start()
        inbox.run_until(lambda: sum("still waits" in r.getMessage() for r in caplog.records) >= 4)
        put_off = [r for r in caplog.records if "stays in the inbox" in r.getMessage()]
        assert len(put_off) == 1 and put_off[0].levelno == logging.WARNING
        assert "is not a folder" in put_off[0].getMessage()
        assert not [r for r in caplog.records if r.exc_info], "no traceback for a known problem"
        answers.unlink()
        inbox.run_until(lambda: (vault / "queries/archive/Q.md").exists())
