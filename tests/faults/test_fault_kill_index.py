"""Drill 1: kill -9 at random moments of a cold index; the restart converges, nothing re-embedded."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable

import pytest
from drill_vault import input_hash, stored_text_hashes, write_notes
from invariants import FaultWorld, check_invariants

from askvault.adapters.ollama import PROBE_TEXT
from e2e.daemon_helpers import DaemonProcess
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults

KILL_TRIALS = int(os.environ.get("ASKVAULT_DRILL_KILL_TRIALS", "10"))
NOTES = int(os.environ.get("ASKVAULT_DRILL_KILL_NOTES", "150"))
EMBED_DELAY_S = 0.03  # per embed call: a cold index lasts a few seconds, long enough to hit


def test_kill_9_during_a_cold_index_converges_and_never_reembeds_stored_vectors(
    world: FaultWorld, fake_ollama: FakeOllama, daemons: Callable[..., DaemonProcess],
) -> None:
    seed = int(os.environ.get("ASKVAULT_DRILL_SEED", str(int(time.time()))))
    rng = random.Random(seed)
    print(f"kill drill seed {seed} (ASKVAULT_DRILL_SEED replays it)")
    write_notes(world.vault, NOTES, paragraphs=4)
    world.freeze()
    fake_ollama.set_fault("slow", delay_s=EMBED_DELAY_S, paths=("/api/embed",))
    moments = []
    for _ in range(KILL_TRIALS):
        stored = stored_text_hashes(world.db_path)
        seen = len(fake_ollama.embedded_inputs)
        daemon = daemons(ready=False)
        moment = rng.uniform(0.2, 3.0)
        moments.append(round(moment, 2))
        time.sleep(moment)
        daemon.signal(signal.SIGKILL)
        daemon.wait(5)
        again = [t for t in fake_ollama.embedded_inputs[seen:] if input_hash(t) in stored]
        assert not again, f"seed {seed}, kills at {moments}: stored texts re-embedded: {again[:3]}"
    stored = stored_text_hashes(world.db_path)
    seen = len(fake_ollama.embedded_inputs)
    final = daemons()  # ready: its handlers are installed before the SIGTERM below
    check_invariants(world, alive=lambda: final.proc.poll() is None, fake=fake_ollama)
    again = [t for t in fake_ollama.embedded_inputs[seen:] if input_hash(t) in stored]
    assert not again, f"seed {seed}: the final run re-embedded stored texts"
    texts = {input_hash(t) for t in fake_ollama.embedded_inputs if PROBE_TEXT not in t}
    assert texts == stored_text_hashes(world.db_path)  # every text embedded is kept
    final.signal(signal.SIGTERM)
    assert final.wait(5) == 0
