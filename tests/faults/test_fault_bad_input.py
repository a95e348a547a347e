"""Drill 5: bad input is handled or skipped with a recorded reason; never a crash, never a
read outside the vault, never code execution."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable

import pytest

from askvault.adapters.db import connect
from in_process import InProcessDaemon
from invariants import (
    CANARY_TEXT,
    FaultWorld,
    answer_notes,
    check_invariants,
    index_state,
    wait_until,
)
from support.daemon_process import DaemonProcess
from support.fake_ollama import FakeOllama

pytestmark = pytest.mark.faults

BIG_NOTE_BYTES = 50 * 1024 * 1024
FRONTMATTER_BYTES = 4_900_000  # just under the 5 MB note cap, so it is parsed


def _write_bad_vault(world: FaultWorld) -> None:
    w = world.write
    w("latin1.md", "# Caf\xe9\n\nNot UTF-8 at all: cr\xe8me br\xfbl\xe9e.\n".encode("latin-1"))
    w(
        "utf16.md",
        "\ufeff# UTF-16\n\nA note saved as UTF-16 with rhododendron.\n".encode("utf-16-le"),
    )
    w("binary.md", bytes(range(256)) * 64)
    big = world.vault / "big.md"
    with open(big, "wb") as fh:  # sparse: fast to make, 50 MB by its size
        fh.truncate(BIG_NOTE_BYTES)
    w(
        "frontmatter.md",
        b"---\njunk: "
        + b"ab " * (FRONTMATTER_BYTES // 3)
        + b"\n---\n# Big frontmatter\n\nbody after a huge frontmatter\n",
    )
    pwned = world.root / "pwned"
    w(
        "yaml-tags.md",
        '---\ntitle: !!python/object/apply:os.system ["touch '
        f'{pwned}"]\nother: !!python/object:builtins.dict {{}}\n---\n# Tags\n\nyaml body\n',
    )
    w("brace.md", "{\nnot json either\n# Brace\n\nfirst line is a brace\n")
    w("empty.md", b"")
    w("crlf.md", b"# CRLF\r\n\r\nWindows line endings here.\r\n")
    w("bom.md", "\ufeff---\ntitle: bom\n---\nByte order mark note.\n".encode())
    w("\U0001f331 garden \U0001f33b.md", "# Emoji\n\nAn emoji name.\n")
    w("a" * 252 + ".md", "# Long\n\nA 255-byte file name.\n")
    os.symlink(".", world.vault / "loop")
    os.symlink("ring-b.md", world.vault / "ring-a.md")
    os.symlink("ring-a.md", world.vault / "ring-b.md")
    os.symlink(str(world.outside / "canary.md"), world.vault / "outside-file.md")
    os.symlink("../outside/folder", world.vault / "outside-folder")
    with open(os.path.join(os.fsencode(world.vault), b"bad-name-\xff.md"), "wb") as fh:
        fh.write(b"# Bad name\n\nnot a UTF-8 file name\n")
    w(
        "Sources demo.md",
        "---\nsources:\n  - ../outside/canary.md\n"
        f'  - {world.outside / "canary.md"}\n  - "[[../outside/canary]]"\n---\n'
        "# Sources demo\n\nThe sources demo note holds the hydrangea fact.\n",
    )


def _skip_reasons(world: FaultWorld) -> dict[str, str]:
    conn = connect(world.db_path, readonly=True)
    try:
        return dict(conn.execute("SELECT path, reason FROM skipped").fetchall())
    finally:
        conn.close()


def _answer(world: FaultWorld, stem: str) -> str:
    notes = answer_notes(world, stem)
    return notes[0].read_text(encoding="utf-8") if notes else ""


def test_bad_notes_and_paths_are_skipped_or_handled_without_escaping_the_vault(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    inproc: Callable[..., InProcessDaemon],
) -> None:
    _write_bad_vault(world)
    questions = {
        "Up and out": b'---\nfolders: ["../outside"]\n---\nWhat is the canary?\n',
        "Absolute": f'---\nfolders: ["{world.outside}"]\n---\nWhat is secret?\n'.encode(),
        "Hydrangea": b"What does the sources demo note hold about hydrangea?\n",
    }
    for stem, data in questions.items():
        world.write(f"queries/inbox/{stem}.md", data)
    world.freeze()
    fake_ollama.chat_script = lambda messages: (
        "The sources demo note holds the hydrangea fact [[Sources demo]]."
        if "hydrangea" in str(messages)
        else "No idea."
    )
    daemon = inproc()
    wait_until(
        lambda: all(
            (world.vault / "queries/archive" / f"{s}.md").exists()
            or "status: failed" in _answer(world, s)
            for s in questions
        ),
        30,
        "every question answered or failed",
    )

    check_invariants(world, alive=daemon.alive, questions=questions, fake=fake_ollama)
    assert not (world.root / "pwned").exists(), "a YAML tag ran code"
    reasons = _skip_reasons(world)
    assert reasons["binary.md"] == "binary file"
    assert reasons["big.md"].startswith("oversized")
    assert reasons["outside-file.md"] == "symlink outside vault"
    assert reasons["outside-folder/"] == "symlink outside vault"
    assert "symlink loop" in reasons.get("loop/", "") and "ring-a.md" in reasons
    assert any("UTF-8" in r for p, r in reasons.items() if p.startswith("bad-name-"))
    paths, _, _ = index_state(world.db_path)
    for name in (
        "latin1.md",
        "utf16.md",
        "frontmatter.md",
        "yaml-tags.md",
        "brace.md",
        "empty.md",
        "crlf.md",
        "bom.md",
        "a" * 252 + ".md",
        "\U0001f331 garden \U0001f33b.md",
    ):
        assert name in paths, f"{name} should be indexed (with its problems recorded)"
    for stem in ("Up and out", "Absolute"):
        text = _answer(world, stem)
        assert "status: failed" in text and "outside the vault" in text, text
    hydrangea = _answer(world, "Hydrangea")
    # A bad `sources:` names no raw file: the ledger entry is the page alone.
    assert "status: answered" in hydrangea and "(no raw source resolved)" not in hydrangea
    ledger = hydrangea.split("## Sources")[1].split("##")[0]
    assert re.search(r"^1\. \[\[[^\]]+\]\]$", ledger, flags=re.M), ledger
    assert CANARY_TEXT not in hydrangea and "canary.md" not in hydrangea.split("## Sources")[1]
    assert daemon.stop() == 0


@pytest.mark.parametrize("kind", ["short", "long", "nan"])
def test_malformed_vectors_are_failed_inputs_and_the_daemon_keeps_embedding(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
    kind: str,
) -> None:
    """Issue 15 item 4: a vector of the wrong length (a ragged batch) or with NaN used to
    raise "Dimension mismatch" on the embedding thread: exit 1."""
    for i in range(6):
        world.write(f"Good {i}.md", f"# Good {i}\n\nOrdinary words about topic {i}.\n")
    world.write("Odd.md", "# Odd\n\nThe quasar-malformed text gets a bad vector.\n")
    fake_ollama.malformed = {"quasar-malformed": kind}
    daemon = daemons()
    db = world.db_path

    def failed_inputs() -> int:
        conn = connect(db, readonly=True)
        try:
            return int(conn.execute("SELECT count(*) FROM embed_failures").fetchone()[0])
        finally:
            conn.close()

    wait_until(lambda: db.exists() and failed_inputs() == 1, 20, "the bad text is recorded")
    wait_until(lambda: index_state(db)[1] == 1, 20, "all but the bad text embedded")
    daemon.wait_for_log("got an unusable vector", 5)
    world.write("Later.md", "# Later\n\nA note written after the bad vector.\n")
    wait_until(
        lambda: any("A note written after" in t for t in fake_ollama.embedded_inputs),
        20,
        "the embedding thread still runs",
    )
    assert daemon.proc.poll() is None, daemon.log()
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(5) == 0
    assert "Dimension mismatch" not in daemon.log() and "Traceback" not in daemon.log()


@pytest.mark.parametrize("kind", ["fifo", "symlink-to-dev-zero", "symlink-outside"])
def test_hostile_app_json_is_ignored_with_a_warning_and_never_hangs_start_up(
    world: FaultWorld,
    daemons: Callable[..., DaemonProcess],
    kind: str,
) -> None:
    """Issue 15 item 5: a FIFO app.json hung `index` and start-up; /dev/zero grew memory
    without bound; a symlink out of the vault was followed."""
    world.write("Private/secret.md", "# Secret\n\nexcluded only if app.json were read\n")
    world.write("Note.md", "# Note\n\nan ordinary note\n")
    app_json = world.vault / ".obsidian/app.json"
    app_json.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(app_json)
    elif kind == "symlink-to-dev-zero":
        app_json.symlink_to("/dev/zero")
    else:
        (world.outside / "app.json").write_text('{"userIgnoreFilters": ["Private/"]}')
        app_json.symlink_to(world.outside / "app.json")
    daemon = daemons()  # waits for "daemon started": start-up did not hang
    wait_until(
        lambda: index_state(world.db_path)[0] == ["Note.md", "Private/secret.md"],
        20,
        "both notes indexed (the app.json filters are not applied)",
    )
    daemon.wait_for_log("ignore rules: .obsidian/app.json", 5)
    world.write("Later.md", "# Later\n\na change after start-up\n")
    wait_until(lambda: "Later.md" in index_state(world.db_path)[0], 20, "the watcher indexes")
    assert daemon.log().count("ignore rules: .obsidian/app.json") == 1, "warned once"
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(5) == 0


def test_a_non_utf8_name_is_skipped_per_path_in_the_watcher_batch_and_answered_in_the_inbox(
    world: FaultWorld,
    fake_ollama: FakeOllama,
    daemons: Callable[..., DaemonProcess],
) -> None:
    """Issue 15 item 9: one such name failed the whole watcher batch (the other changes
    waited for the 600 s reconcile), and such a question got a traceback at every pass;
    issue 25 item 11: then it got no note at all, only a log line. It is answered now,
    under its name with U+FFFD in place of the bad byte."""
    world.write("Note.md", "# Note\n\nThe ferry leaves at noon.\n")
    daemon = daemons()
    vault = os.fsencode(world.vault)
    # One debounce window: a bad name beside good changes, in the vault and in the inbox.
    with open(os.path.join(vault, b"bad-\xff.md"), "wb") as fh:
        fh.write(b"# Bad name\n\nnot indexable by name\n")
    world.write("Fresh.md", "# Fresh\n\nA fresh note beside a bad name.\n")
    os.makedirs(os.path.join(vault, b"queries", b"inbox"), exist_ok=True)
    with open(os.path.join(vault, b"queries", b"inbox", b"Q-\xfe.md"), "wb") as fh:
        fh.write(b"When does the ferry leave?\n")
    world.write("queries/inbox/Ferry.md", "When does the ferry leave?\n")
    wait_until(
        lambda: "Fresh.md" in index_state(world.db_path)[0],
        10,
        "the good change of the batch is indexed (not left to the reconcile)",
    )
    wait_until(
        lambda: "bad-\ufffd.md" in index_state(world.db_path)[2],
        10,
        "the bad name is skipped with its reason",
    )
    wait_until(
        lambda: (world.vault / "queries/answers/Ferry.md").exists(),
        20,
        "the good question is answered",
    )
    wait_until(
        lambda: (world.vault / "queries/archive/Q-\ufffd.md").exists(),
        20,
        "the question with a bad name is answered and archived under a safe name",
    )
    assert (world.vault / "queries/archive/Q-\ufffd.md").read_bytes() == (
        b"When does the ferry leave?\n"
    )
    assert "status: " in (world.vault / "queries/answers/Q-\ufffd.md").read_text("utf-8")
    time.sleep(1.0)  # several inbox passes
    assert daemon.log().count("file name is not valid UTF-8; answered and archived") == 1
    assert "Traceback" not in daemon.log() and "surrogates not allowed" not in daemon.log()
    assert not os.path.exists(os.path.join(vault, b"queries", b"inbox", b"Q-\xfe.md"))
    daemon.signal(signal.SIGTERM)
    assert daemon.wait(5) == 0
