"""The inbox end to end: a real `askvault run`, a question note dropped in, SIGTERM at the end."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from support.daemon_process import DaemonProcess, IndexProbe, wait_until
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.e2e

ANSWER_DEADLINE_S = 15.0


def test_dropped_question_is_answered_archived_and_logged(
    vault: Path,
    probe: IndexProbe,
    fake_ollama: FakeOllama,
    daemon_factory: Callable[..., DaemonProcess],
) -> None:
    (vault / "Embeds.md").write_text(
        "# Embeds\n\nAn embed shows another note inline inside the current note.\n",
        encoding="utf-8",
    )
    daemon = daemon_factory(ASKVAULT_QUERIES__SETTLE_S="0.3")
    wait_until(
        lambda: probe.note_paths() == ["Embeds.md"] and probe.pending_embeddings() == 0,
        ANSWER_DEADLINE_S,
        "the vault is indexed",
    )
    fake_ollama.chat_script = [
        "An embed shows another note inline inside the current note [[Embeds]]."
    ]
    inbox = vault / "queries" / "inbox"
    inbox.mkdir(parents=True)
    data = b"What does an embed show?\n"
    (inbox / "How do embeds work.md").write_bytes(data)

    answer = vault / "queries" / "answers" / "How do embeds work.md"
    archived = vault / "queries" / "archive" / "How do embeds work.md"
    log = vault / "queries" / "log.md"
    wait_until(
        lambda: archived.exists() and log.exists(),
        ANSWER_DEADLINE_S,
        "the question is answered and archived",
    )
    text = answer.read_text(encoding="utf-8")
    assert "status: answered" in text
    assert "**resolved** → `Embeds.md`" in text and "supported" in text
    assert archived.read_bytes() == data
    assert not (inbox / "How do embeds work.md").exists()
    assert log.read_text(encoding="utf-8") == (
        f"## [{time.strftime('%Y-%m-%d')}] query | "
        "[[queries/answers/How do embeds work|What does an embed show?]]\n"
    )
    assert probe.note_paths() == ["Embeds.md"], "queries/ is not indexed as knowledge"

    daemon.signal(signal.SIGTERM)
    assert daemon.wait(5.0) == 0
