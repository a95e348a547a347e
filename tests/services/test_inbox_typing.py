"""A question is answered once it is finished, never while it is typed (issue 26 item 1):
the replayed typing sessions of tests/fixtures/typing through the inbox, its clock moved
by hand (tests/support/typing_replay.py; the rules compared: bench/typing_bench.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from askvault.settings import QueriesSettings, Settings
from support.fake_ollama import FakeOllama
from support.inbox_driver import driver_starter, inbox_settings, inbox_vault
from support.typing_replay import load_sessions, quiet_only, replay_all


def _settings(tmp_path: Path, url: str) -> Settings:
    """The settle times a user gets (the defaults), over an indexed fixture vault."""
    defaults = QueriesSettings()
    return inbox_settings(
        inbox_vault(tmp_path / "vault"),
        tmp_path / "state",
        url,
        **{
            "queries.settle_s": defaults.settle_s,
            "queries.unfinished_settle_s": defaults.unfinished_settle_s,
        },
    )


def test_no_replayed_session_gets_a_fragment_answered_and_each_question_is_answered_in_time(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    sessions = load_sessions()
    assert len(sessions) >= 8
    replays = replay_all(sessions, _settings(tmp_path, fake_ollama.url))
    fragments = {r.session: r.fragments for r in replays if r.fragments}
    assert fragments == {}, "fragments answered"
    late = {
        s.name: r.answered_after_s
        for s, r in zip(sessions, replays, strict=True)
        if r.answered_after_s is None or r.answered_after_s > s.answered_within_s
    }
    assert late == {}, "answered late (seconds from the last keystroke), or never"


def test_quiet_time_alone_answers_fragments_of_the_replayed_sessions(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    """The rule before (3 s of quiet) on the sessions that pause mid-sentence."""
    wanted = {"02-slow-typist-long-pauses", "08-leaves-mid-sentence", "10-french"}
    sessions = [s for s in load_sessions() if s.name in wanted]
    replays = replay_all(sessions, _settings(tmp_path, fake_ollama.url), quiet_only)
    assert [r.session for r in replays if r.fragments] == sorted(wanted)
    assert replays[0].fragments[0][1] == "What is the difference"


def _workspace(vault: Path, active: str) -> None:
    """What Obsidian writes when it focuses `active`."""
    leaf = {"id": "l1", "type": "leaf", "state": {"type": "markdown", "state": {"file": active}}}
    doc = {"main": {"id": "m", "type": "split", "children": [leaf]}, "active": "l1"}
    (vault / ".obsidian" / "workspace.json").write_text(json.dumps(doc), encoding="utf-8")


def test_a_question_ending_in_a_full_stop_is_taken_once_obsidian_shows_another_note(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = _settings(tmp_path, fake_ollama.url)
    vault = settings.vault_path
    _workspace(vault, "queries/inbox/Canvas.md")
    (vault / "queries/inbox/Canvas.md").write_text(
        "Explain how embeds work inside a canvas.\n", encoding="utf-8"
    )
    with driver_starter(settings) as start:
        inbox = start()
        inbox.run_for(30.0)
        assert not (vault / "queries/archive/Canvas.md").exists(), "the user is still on it"
        _workspace(vault, "Embeds.md")
        inbox.run_until(lambda: (vault / "queries/archive/Canvas.md").exists(), within_s=1.0)


@pytest.mark.parametrize("how", ["fifo", "symlink out of the vault", "not json", "too large"])
def test_a_workspace_file_that_cannot_be_read_tells_nothing_and_never_blocks(
    tmp_path: Path, fake_ollama: FakeOllama, how: str
) -> None:
    settings = _settings(tmp_path, fake_ollama.url)
    vault = settings.vault_path
    workspace = vault / ".obsidian" / "workspace.json"
    if how == "fifo":
        os.mkfifo(workspace)
    elif how == "symlink out of the vault":
        outside = tmp_path / "workspace.json"
        _workspace(tmp_path / "vault", "queries/inbox/Canvas.md")
        (vault / ".obsidian" / "workspace.json").rename(outside)
        workspace.symlink_to(outside)
    elif how == "not json":
        workspace.write_text('{"active": "l1", "main": ', encoding="utf-8")
    else:
        _workspace(vault, "queries/inbox/Canvas.md")
        with open(workspace, "a", encoding="utf-8") as fh:
            fh.write(" " * (2 << 20))
    (vault / "queries/inbox/Canvas.md").write_text(
        "Explain how embeds work inside a canvas.\n", encoding="utf-8"
    )
    with driver_starter(settings) as start:
        inbox = start()
        # Taken as where no Obsidian runs: a full stop and 3 s of quiet.
        inbox.run_until(lambda: (vault / "queries/archive/Canvas.md").exists(), within_s=4.0)
