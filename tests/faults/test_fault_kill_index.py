"""Drill 1: kill -9 at random moments of a cold index; the restart converges, nothing re-embedded."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from askvault.adapters.ollama import PROBE_TEXT
from askvault.services.index import embedding
from drill_vault import input_hash, stored_text_hashes, write_notes
from invariants import FaultWorld, check_invariants
from support.daemon_process import DaemonProcess
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env

pytestmark = pytest.mark.faults

KILL_TRIALS = int(os.environ.get("ASKVAULT_DRILL_KILL_TRIALS", "10"))
NOTES = int(os.environ.get("ASKVAULT_DRILL_KILL_NOTES", "150"))
EMBED_DELAY_S = 0.03  # per embed call: a cold index lasts a few seconds, long enough to hit


def test_kill_9_during_a_cold_index_converges_and_never_reembeds_stored_vectors(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
) -> None:
    seed = int(os.environ.get("ASKVAULT_DRILL_SEED", str(int(time.time()))))
    rng = random.Random(seed)
    print(f"kill drill seed {seed} (ASKVAULT_DRILL_SEED replays it)")
    titles = {Path(path).stem for path in write_notes(world.vault, NOTES, paragraphs=4)}
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
    # The probes (the adapter's dimension probe, doctor's real embedding) and the titles the
    # distance cut-off is calibrated from (queries: services/index/calibration.py) are never stored.
    probes = (PROBE_TEXT, embedding.PROBE_TEXT)
    texts = {
        input_hash(t)
        for t in fake_ollama.embedded_inputs
        if not any(p in t for p in probes) and t not in titles
    }
    assert texts == stored_text_hashes(world.db_path)  # every text embedded is kept
    final.signal(signal.SIGTERM)
    assert final.wait(5) == 0


def _children(pid: int) -> dict[int, str]:
    """Live (not zombie) direct children of `pid` with their command lines (Linux /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != b"Z":
            found[int(entry)] = cmdline
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_kill_9_of_askvault_index_leaves_no_parsing_pool_behind(
    world: FaultWorld,
    fake_ollama: FakeOllama,
) -> None:
    """Issue 15 item 15: the spawn workers and the resource tracker outlived the parent."""
    write_notes(world.vault, 1200, paragraphs=6)  # over POOL_MIN_NOTES: the pool is used
    env = cli_env(world.vault, world.state, fake_ollama.url)
    proc = subprocess.Popen(
        [sys.executable, "-m", "askvault", "index"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            workers = {
                pid: cmd for pid, cmd in _children(proc.pid).items() if "multiprocessing" in cmd
            }
            if sum("spawn_main" in cmd for cmd in workers.values()) >= 2:
                break
            time.sleep(0.02)
        assert sum("spawn_main" in cmd for cmd in workers.values()) >= 2, (
            "the pool never started (index finished first?)"
        )
        workers = {
            pid: cmd for pid, cmd in _children(proc.pid).items() if "multiprocessing" in cmd
        }  # the resource tracker too, once it runs
        proc.send_signal(signal.SIGKILL)
        proc.wait(5)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.05)
        left = {pid: cmd for pid, cmd in workers.items() if _alive(pid)}
        assert not left, f"still running after the parent's kill -9: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        for pid in workers:  # on failure: leave no orphan behind the test either
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
