"""Drill 3: Ollama down, model not pulled, too slow, dying mid-stream, answering 500.

Each fault holds for a few seconds while a question waits and the vault waits for its
vectors: the answer note says `waiting` and why, requests are spaced by backoff (no
busy loop: counted at the fake), and everything completes once Ollama recovers.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

import pytest

from askvault.adapters import meta
from askvault.adapters.db import connect
from invariants import FaultWorld, answer_notes, check_invariants, wait_until
from support.daemon_process import DaemonProcess
from support.fake_ollama import DEFAULT_MODELS, FakeOllama, full_name

pytestmark = pytest.mark.faults

FAULT_HOLD_S = 3.0
# Backoff starts at 1 s and doubles: over 3 s the embedder and the inbox retry ~3 times
# each, a handful of requests per try. A busy loop would make hundreds.
MAX_REQUESTS_PER_S = 6.0
DEADLINE_S = 30.0


def _start_fault(fake: FakeOllama, kind: str) -> None:
    if kind == "model not pulled":
        fake.models = [full_name("some-other-model")]
    elif kind == "slower than the timeout":
        fake.set_fault("slow", delay_s=2.0)
    elif kind == "dying mid-stream":
        fake.set_fault("die_midstream", paths=("/api/chat", "/api/embed"))
    elif kind == "500":
        fake.set_fault("500")
    else:
        fake.set_fault("down")


def _end_fault(fake: FakeOllama) -> None:
    fake.models = [full_name(m) for m in DEFAULT_MODELS]
    fake.recover()


def _embed_waiting_reason(world: FaultWorld) -> str:
    conn = connect(world.db_path, readonly=True)
    try:
        return meta.embed_waiting(conn)[0] or ""
    finally:
        conn.close()


@pytest.mark.parametrize(
    "kind", ["down", "model not pulled", "slower than the timeout", "dying mid-stream", "500"]
)
def test_ollama_fault_gives_clear_states_backs_off_and_completes_after_recovery(
    kind: str,
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
) -> None:
    for i in range(6):
        world.write(f"Plant {i}.md", f"# Plant {i}\n\nPlant {i} needs shade and clay soil.\n")
    question = b"Which plant needs shade?\n"
    world.write("queries/inbox/Shade.md", question)
    world.freeze()
    _start_fault(fake_ollama, kind)
    daemon = daemons(ASKVAULT_OLLAMA__TIMEOUT_S="1")
    began, requests_before = time.monotonic(), len(fake_ollama.requests)
    wait_until(
        lambda: "status: waiting" in _answer_text(world),
        DEADLINE_S,
        "the answer note says `waiting`",
        lambda: _answer_text(world),
    )
    text = _answer_text(world)
    assert "Ollama" in text or "ollama" in text, "the waiting note says why"
    assert "Waiting for Ollama" in text and "## Citation report" not in text, "no partial answer"
    if kind != "dying mid-stream":
        wait_until(
            lambda: bool(_embed_waiting_reason(world)),
            DEADLINE_S,
            "status says why embedding waits",
        )
    time.sleep(max(0.0, FAULT_HOLD_S - (time.monotonic() - began)))
    rate = (len(fake_ollama.requests) - requests_before) / (time.monotonic() - began)
    _end_fault(fake_ollama)
    assert rate <= MAX_REQUESTS_PER_S, f"{rate:.1f} requests/s during the fault: a busy loop"
    wait_until(
        lambda: (world.vault / "queries/archive/Shade.md").exists(),
        DEADLINE_S,
        "the question is answered after recovery",
        lambda: daemon.log()[-2000:],
    )
    assert "status: answered" in _answer_text(world)
    wait_until(lambda: not _embed_waiting_reason(world), DEADLINE_S, "reason cleared")
    check_invariants(
        world,
        alive=lambda: daemon.proc.poll() is None,
        questions={"Shade": question},
        fake=fake_ollama,
    )
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(5) == 0


def _answer_text(world: FaultWorld) -> str:
    notes = answer_notes(world, "Shade")
    return notes[0].read_text(encoding="utf-8") if notes else ""
