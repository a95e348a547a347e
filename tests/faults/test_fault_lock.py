"""Issue 25 item 9: one daemon per vault whatever `$XDG_RUNTIME_DIR` each process has.

Two `askvault run` subprocesses on one vault and one state dir, each with its own runtime
dir (another user's session, `sudo -E`, a sandbox, none at all): before the fix each took
the lock of its own runtime dir and both indexed the vault and answered its questions. The
second must exit 1 naming the first; once the first is killed (kill -9: its locks are left
to the kernel), a new one takes the vault over.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest

from invariants import FaultWorld, answer_notes, check_invariants, wait_until
from support.daemon_process import DaemonProcess
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults

QUESTION = b"What do ferns like?\n"


@pytest.mark.parametrize("second_runtime", ["another folder", "none"])
def test_a_second_daemon_with_another_runtime_dir_is_refused_and_a_dead_owner_taken_over(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
    second_runtime: str,
) -> None:
    world.write("Fern.md", "# Fern\n\nFerns like deep shade and moist soil.\n")
    first_run, second_run = world.root / "run-first", world.root / "run-second"
    first_run.mkdir(mode=0o700)
    second_run.mkdir(mode=0o700)
    first = daemons(XDG_RUNTIME_DIR=str(first_run))
    second = daemons(
        ready=False,
        XDG_RUNTIME_DIR=str(second_run) if second_runtime == "another folder" else "",
    )
    assert second.wait(20) == 1, second.log()
    refusal = second.log()
    assert f"another askvault process (pid {first.pid}, `askvault run`)" in refusal
    assert "already running on this vault" in refusal
    world.write("queries/inbox/Ferns.md", QUESTION)
    wait_until(lambda: (world.vault / "queries/archive/Ferns.md").exists(), 30, "answered")

    first.signal(signal.SIGKILL)
    first.wait(10)
    third = daemons(XDG_RUNTIME_DIR=str(second_run))  # the dead owner's locks: taken over
    world.write("Moss.md", "# Moss\n\nMoss grows on north faces of stones.\n")
    world.freeze()
    check_invariants(
        world,
        alive=lambda: third.proc.poll() is None,
        questions={"Ferns": QUESTION},
        fake=fake_ollama,
    )
    assert len(answer_notes(world, "Ferns")) == 1
    assert len(fake_ollama.requests_to("/api/chat")) == 1, "one daemon answered, once"
