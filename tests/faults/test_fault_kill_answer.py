"""Drill 2: kill -9 while an answer is written (before and after the rename); SIGTERM mid-chat."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

import pytest

from askvault.adapters.vault import temp_name
from invariants import FaultWorld, answer_notes, check_invariants, wait_converged, wait_until
from support.daemon_process import DaemonProcess
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults

LONG_REPLY = " ".join(["Rhubarb is forced in the dark to grow pink stalks [[Rhubarb]]."] * 8)
DEADLINE_S = 20.0


def _seed(world: FaultWorld) -> None:
    world.write("Rhubarb.md", "# Rhubarb\n\nRhubarb is forced in the dark to grow pink stalks.\n")
    world.write("Compost.md", "# Compost\n\nCompost needs air, water and brown leaves.\n")


def _status(world: FaultWorld, stem: str) -> str:
    answers = answer_notes(world, stem)
    if not answers:
        return ""
    text = answers[0].read_text(encoding="utf-8", errors="replace")
    for line in text.splitlines():
        if line.startswith("status: "):
            return line.removeprefix("status: ")
    return ""


def _ask(world: FaultWorld, stem: str) -> bytes:
    data = f"How is rhubarb forced? ({stem})\n".encode()
    world.write(f"queries/inbox/{stem}.md", data)
    return data


def _archived(world: FaultWorld, stem: str) -> bool:
    return (world.vault / "queries" / "archive" / f"{stem}.md").exists()


def test_kill_9_before_and_after_the_answer_rename_leaves_one_whole_answer(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
) -> None:
    _seed(world)
    daemon = daemons()
    wait_converged(world)
    world.freeze()
    fake_ollama.chat_script = lambda messages: LONG_REPLY
    questions: dict[str, bytes] = {}

    # Before the rename: killed while the reply streams (the note says `answering`).
    fake_ollama.token_delay_s = 0.1
    questions["Q before"] = _ask(world, "Q before")
    wait_until(lambda: _status(world, "Q before") == "answering", DEADLINE_S, "answering")
    wait_until(lambda: len(fake_ollama.requests_to("/api/chat")) >= 1, DEADLINE_S, "chat began")
    time.sleep(0.3)
    daemon.signal(signal.SIGKILL)
    daemon.wait(5)
    # A crash in the middle of write_atomic leaves a temp file named for the dead
    # process: start-up removes it (and keeps a user's file that merely looks alike).
    leftover = world.vault / "queries" / "answers" / temp_name(daemon.pid)
    leftover.write_bytes(b"half an answer")
    fake_ollama.token_delay_s = 0.0
    daemon = daemons()
    wait_until(lambda: _archived(world, "Q before"), DEADLINE_S, "answered after restart")
    assert not leftover.exists(), "a leftover temp file survived the start-up"
    assert _status(world, "Q before") == "answered"

    # After the rename: killed as soon as the final note is in place (archive may lag).
    for n in range(3):
        stem = f"Q after {n}"
        questions[stem] = _ask(world, stem)
        wait_until(lambda s=stem: _status(world, s) == "answered", DEADLINE_S, "answered")
        daemon.signal(signal.SIGKILL)
        daemon.wait(5)
        daemon = daemons()
        wait_until(lambda s=stem: _archived(world, s), DEADLINE_S, "archived after restart")
        assert _status(world, stem) == "answered"
    check_invariants(
        world, alive=lambda: daemon.proc.poll() is None, questions=questions, fake=fake_ollama
    )


def test_sigterm_exits_0_within_5_s_while_a_chat_request_hangs_before_its_first_token(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
) -> None:
    _seed(world)
    daemon = daemons(ASKVAULT_OLLAMA__TIMEOUT_S="30")
    wait_converged(world)
    world.freeze()
    fake_ollama.set_fault("slow", delay_s=60.0, paths=("/api/chat",))
    question = _ask(world, "Hanging")
    wait_until(lambda: len(fake_ollama.requests_to("/api/chat")) >= 1, DEADLINE_S, "chat sent")
    started = time.monotonic()
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(5.0) == 0
    assert time.monotonic() - started < 5.0
    fake_ollama.recover()
    daemon = daemons()
    wait_until(lambda: _archived(world, "Hanging"), DEADLINE_S, "answered after the restart")
    check_invariants(
        world,
        alive=lambda: daemon.proc.poll() is None,
        questions={"Hanging": question},
        fake=fake_ollama,
    )
