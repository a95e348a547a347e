"""Issue 15 drill 13: the vault moves away (or is unmounted) while a question is answered.

The answer's stream is under way when the vault folder is renamed away; it is put back
a few seconds later. The daemon logs once that the vault is gone, writes nothing at the
old place meanwhile, and once the vault is back finishes the same answer note in place:
no `answering` placeholder left behind, no `(2)`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from in_process import InProcessDaemon
from invariants import FaultWorld, answer_notes, check_invariants, wait_converged, wait_until
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults


def test_the_vault_moved_away_mid_answer_is_logged_once_and_the_answer_finished_in_place(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="askvault")
    world.write("Fern.md", "# Fern\n\nFerns like deep shade and moist soil.\n")
    daemon = inproc()
    wait_converged(world)
    aside = world.root / "aside"
    moved = threading.Event()

    def reply(messages: list[dict[str, Any]]) -> str:
        if not moved.is_set():
            world.vault.rename(aside)  # mid-answer: the request is in, the stream not yet
            moved.set()
        return "Ferns like deep shade and moist soil [[Fern]]."

    fake_ollama.chat_script = reply
    fake_ollama.token_delay_s = 0.05
    question = b"What do ferns like?\n"
    world.write("queries/inbox/Ferns.md", question)
    wait_until(moved.is_set, 30, "the answer started")
    wait_until(lambda: "is gone" in caplog.text, 10, "the gone vault is logged")
    time.sleep(2.0)
    assert not world.vault.exists(), "nothing is created at the vault's old place"
    assert daemon.alive()
    aside.rename(world.vault)  # back
    wait_until(
        lambda: (world.vault / "queries/archive/Ferns.md").exists(),
        30,
        "answered once the vault is back",
    )
    answers = answer_notes(world, "Ferns")
    assert [p.name for p in answers] == ["Ferns.md"]
    assert "status: answered" in answers[0].read_text(encoding="utf-8")
    assert caplog.text.count("is gone (moved away or unmounted?)") == 1
    fake_ollama.token_delay_s = 0.0
    wait_converged(world)
    world.freeze()
    check_invariants(world, alive=daemon.alive, questions={"Ferns": question}, fake=fake_ollama)
    assert daemon.stop() == 0
