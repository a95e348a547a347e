"""`askvault run` end to end: a real subprocess on a temp vault against the fake Ollama."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from support.daemon_process import DaemonProcess, IndexProbe, wait_until
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.e2e

DEADLINE_S = 15.0  # a correctness bound, not a speed target (bench/freshness_bench.py)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_daemon_indexes_created_and_edited_notes(
    vault: Path, probe: IndexProbe, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    daemon_factory()
    write(vault / "Ideas.md", "# Ideas\n\nThe word zanzibarite lives here.\n")
    wait_until(
        lambda: probe.search_files("zanzibarite") == {"Ideas.md"},
        DEADLINE_S,
        "a created note is searchable",
    )
    write(vault / "Ideas.md", "# Ideas\n\nNow it says quokkaberry instead.\n")
    wait_until(
        lambda: probe.search_files("quokkaberry") == {"Ideas.md"},
        DEADLINE_S,
        "an edited note's new text is searchable",
    )
    assert probe.search_files("zanzibarite") == set()


def test_daemon_indexes_an_atomic_save_once_and_never_its_temp_file(
    vault: Path, probe: IndexProbe, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    write(vault / "Plan.md", "# Plan\n\nfirst draft\n")
    daemon = daemon_factory()
    tmp = vault / ".Plan.md.tmp"
    tmp.write_text("# Plan\n\nfinal wombatrix text\n", encoding="utf-8")
    os.replace(tmp, vault / "Plan.md")
    wait_until(
        lambda: probe.search_files("wombatrix") == {"Plan.md"},
        DEADLINE_S,
        "the atomically saved note has its final content",
    )
    time.sleep(0.3)
    assert probe.note_paths() == ["Plan.md"]
    batches = re.findall(r"indexed: (\d+) added, (\d+) changed", daemon.log())
    assert sum(int(a) + int(c) for a, c in batches) == 1


def test_daemon_repaths_renamed_and_moved_notes_without_reembedding(
    vault: Path,
    probe: IndexProbe,
    fake_ollama: FakeOllama,
    daemon_factory: Callable[..., DaemonProcess],
) -> None:
    write(vault / "Old name.md", "# Topic\n\nPaginated hummingbird migration facts.\n")
    daemon_factory()
    wait_until(
        lambda: probe.pending_embeddings() == 0 and probe.note_paths() != [],
        DEADLINE_S,
        "the note is embedded",
    )
    embedded = len(fake_ollama.embedded_inputs)
    (vault / "Old name.md").rename(vault / "New name.md")
    wait_until(lambda: probe.note_paths() == ["New name.md"], DEADLINE_S, "the rename")
    (vault / "archive").mkdir()
    (vault / "New name.md").rename(vault / "archive" / "New name.md")
    wait_until(lambda: probe.note_paths() == ["archive/New name.md"], DEADLINE_S, "the move")
    (vault / "archive").rename(vault / "kept")
    wait_until(lambda: probe.note_paths() == ["kept/New name.md"], DEADLINE_S, "the folder move")
    assert probe.search_files("hummingbird") == {"kept/New name.md"}
    assert probe.pending_embeddings() == 0
    time.sleep(0.3)
    assert len(fake_ollama.embedded_inputs) == embedded


def test_daemon_drops_every_note_of_a_deleted_or_moved_out_folder(
    vault: Path, tmp_path: Path, probe: IndexProbe, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    for i in range(5):
        write(vault / "gone" / "deep" / f"n{i}.md", f"note {i}\n")
        write(vault / "away" / f"m{i}.md", f"note {i}\n")
    write(vault / "stay.md", "stays\n")
    daemon_factory()
    assert len(probe.note_paths()) == 11
    shutil.rmtree(vault / "gone")
    (vault / "away").rename(tmp_path / "outside")
    wait_until(
        lambda: probe.note_paths() == ["stay.md"],
        DEADLINE_S,
        "notes of the deleted and moved-out folders are gone",
    )


def test_daemon_indexes_a_burst_of_2000_files_in_few_batches(
    vault: Path, probe: IndexProbe, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    daemon = daemon_factory()
    for i in range(2000):
        write(vault / f"f{i % 20}" / f"note {i}.md", f"# Note {i}\n\nburst text number{i}\n")
    wait_until(lambda: len(probe.note_paths()) == 2000, 30.0, "2,000 notes indexed")
    assert probe.search_files("number1999") == {"f19/note 1999.md"}
    time.sleep(0.3)
    batches = re.findall(r"indexed: (\d+) added, (\d+) changed", daemon.log())
    processed = sum(int(a) + int(c) for a, c in batches)
    assert 2000 <= processed <= 4000  # each note processed at most twice
    assert len(batches) < 100  # batches, not a line per file


def test_second_daemon_on_the_same_vault_is_refused(
    daemon_factory: Callable[..., DaemonProcess],
) -> None:
    first = daemon_factory()
    second = daemon_factory(ready=False)
    assert second.wait(10) == 1
    assert "already running on this vault" in second.log()
    assert str(first.pid) in second.log()
    assert first.proc.poll() is None


def test_sigterm_exits_0_within_5_s_even_during_a_slow_embed_call(
    vault: Path, fake_ollama: FakeOllama, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    write(vault / "a.md", "# A\n\nsome text\n")
    fake_ollama.set_fault("slow", delay_s=8.0, paths=("/api/embed",))
    daemon = daemon_factory()
    wait_until(
        lambda: bool(fake_ollama.requests_to("/api/embed")), DEADLINE_S, "an embed call in flight"
    )
    started = time.monotonic()
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(5.0) == 0
    assert time.monotonic() - started < 5.0
    assert "daemon stopped" in daemon.log()


def test_sigint_exits_0(daemon_factory: Callable[..., DaemonProcess]) -> None:
    daemon = daemon_factory()
    daemon.signal(signal.SIGINT)
    assert daemon.wait(5.0) == 0


def test_kill_9_then_restart_converges_without_duplicates_or_reembedding(
    vault: Path,
    probe: IndexProbe,
    fake_ollama: FakeOllama,
    daemon_factory: Callable[..., DaemonProcess],
) -> None:
    for i in range(30):
        write(vault / f"n{i}.md", f"# N{i}\n\nfirst version of note {i} rhubarbium\n")
    first = daemon_factory()
    wait_until(lambda: probe.pending_embeddings() == 0, DEADLINE_S, "all embedded")
    first.signal(signal.SIGKILL)
    first.wait(5)
    before = len(fake_ollama.embedded_inputs)
    write(vault / "n0.md", "# N0\n\nsecond version while down xylocarp\n")
    (vault / "n1.md").unlink()
    write(vault / "new.md", "# New\n\nborn while down xylocarp\n")
    daemon_factory()
    wait_until(
        lambda: (
            probe.search_files("xylocarp") == {"n0.md", "new.md"}
            and probe.pending_embeddings() == 0
        ),
        DEADLINE_S,
        "the restart converges",
    )
    assert len(probe.note_paths()) == 30
    assert probe.duplicate_paths() == []
    after_restart = fake_ollama.embedded_inputs[before:]
    assert not [t for t in after_restart if "first version" in t]  # stored vectors are kept
    assert len([t for t in after_restart if "xylocarp" in t]) == 2


def test_embeddings_wait_while_ollama_is_down_and_resume_by_themselves(
    vault: Path,
    probe: IndexProbe,
    fake_ollama: FakeOllama,
    daemon_factory: Callable[..., DaemonProcess],
) -> None:
    fake_ollama.set_fault("down")
    write(vault / "a.md", "# A\n\noutage-proof marmalade\n")
    daemon = daemon_factory()
    wait_until(
        lambda: bool(probe.meta("embed_waiting_reason")),
        DEADLINE_S,
        "status says why embedding waits",
    )
    assert probe.search_files("marmalade") == {"a.md"}
    assert probe.pending_embeddings() > 0
    fake_ollama.recover()
    wait_until(lambda: probe.pending_embeddings() == 0, 10.0, "embedding resumed by itself")
    wait_until(lambda: not probe.meta("embed_waiting_reason"), DEADLINE_S, "the reason cleared")
    assert "embedding resumed" in daemon.log()


def test_sighup_triggers_a_reconcile(
    vault: Path, probe: IndexProbe, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    daemon = daemon_factory()
    daemon.signal(signal.SIGHUP)
    daemon.wait_for_log(r"reconciled \(SIGHUP\)", DEADLINE_S)
    assert daemon.proc.poll() is None


def test_questions_folder_is_not_indexed_as_knowledge(
    vault: Path, probe: IndexProbe, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    daemon_factory()
    write(vault / "queries" / "inbox" / "What is up.md", "What is pelicanology?\n")
    write(vault / "note.md", "pelicanology is the study of pelicans\n")
    wait_until(lambda: probe.note_paths() == ["note.md"], DEADLINE_S, "the note is indexed")
    time.sleep(0.3)
    assert probe.note_paths() == ["note.md"]


def test_log_format_json_writes_one_object_per_line(
    daemon_factory: Callable[..., DaemonProcess],
) -> None:
    daemon = daemon_factory(ASKVAULT_DAEMON__LOG_FORMAT="json")
    lines = daemon.log().splitlines()
    docs = [json.loads(line) for line in lines]
    assert any(d["msg"].startswith("reconciled (start-up)") and d["level"] == "info" for d in docs)


def test_under_journald_lines_carry_priorities_and_no_timestamps(
    tmp_path: Path, daemon_factory: Callable[..., DaemonProcess]
) -> None:
    log_path = tmp_path / "daemon-0.log"  # the factory's name for its first daemon's log
    log_path.touch()
    st = log_path.stat()
    daemon = daemon_factory(JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    lines = daemon.log().splitlines()
    assert lines and all(re.match(r"<[0-7]>", line) for line in lines)
    assert any(line.startswith("<6>reconciled (start-up)") for line in lines)
