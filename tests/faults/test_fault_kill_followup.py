"""Drill: kill -9 while a follow-up in an answer note is answered (mid-reply, and right
after its turn is written): the note stays whole, the user's bytes kept, one turn."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

import pytest

from invariants import FaultWorld, answer_notes, wait_converged, wait_until
from support.daemon_process import DaemonProcess
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults

REPLY = "Rhubarb is forced in the dark to grow pink stalks [[Rhubarb]]."
DEADLINE_S = 30.0
MARK = b"%% askvault: turn 2 %%"


def _archived(world: FaultWorld, stem: str) -> bool:
    return (world.vault / "queries" / "archive" / f"{stem}.md").exists()


def test_kill_9_during_and_after_a_follow_up_leaves_the_note_whole_and_answered_once(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
) -> None:
    world.write("Rhubarb.md", "# Rhubarb\n\nRhubarb is forced in the dark to grow pink stalks.\n")
    daemon = daemons()
    wait_converged(world)
    world.freeze()
    fake_ollama.chat_script = lambda messages: REPLY
    world.write("queries/inbox/Rhubarb.md", b"How is rhubarb forced?\n")
    wait_until(lambda: _archived(world, "Rhubarb"), DEADLINE_S, "first answer")
    (answer,) = answer_notes(world, "Rhubarb")

    # Killed while the follow-up's reply streams: nothing is written.
    typed = answer.read_bytes() + b"\n## Follow-up\nand why in the dark?\n"
    answer.write_bytes(typed)
    chats = len(fake_ollama.requests_to("/api/chat"))
    fake_ollama.token_delay_s = 0.2
    wait_until(
        lambda: len(fake_ollama.requests_to("/api/chat")) > chats, DEADLINE_S, "follow-up asked"
    )
    time.sleep(0.3)
    daemon.signal(signal.SIGKILL)
    daemon.wait(5)
    assert answer.read_bytes() == typed, "a kill mid-answer changed the note"
    fake_ollama.token_delay_s = 0.0

    # Restarted: answered; killed as soon as the turn is in place; restarted: not again.
    daemon = daemons()
    wait_until(lambda: MARK in answer.read_bytes(), DEADLINE_S, "follow-up answered")
    daemon.signal(signal.SIGKILL)
    daemon.wait(5)
    after = answer.read_bytes()
    assert after.startswith(typed.rstrip(b"\n"))
    assert after.count(MARK) == 1
    asked = len(fake_ollama.requests_to("/api/chat"))
    daemon = daemons()
    time.sleep(5.0)
    assert answer.read_bytes() == after
    assert len(fake_ollama.requests_to("/api/chat")) == asked
    assert daemon.proc.poll() is None
