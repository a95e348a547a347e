"""status and doctor tell the truth while work goes on (issue 26, item 6): doctor does not
fail while the daemon embeds normally; a model Ollama lacks gets `ollama pull <model>`,
not "start Ollama"; after a model switch status says which model's vectors search uses and
which are still to make; a reconcile under way and the embedding rate, with the time left,
are shown from the daemon's activity file (and only while that daemon holds the lock)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from askvault.adapters.activity import (
    Activity,
    EmbedActivity,
    ScanActivity,
    activity_path,
    read_activity,
    write_activity,
)
from askvault.adapters.lockfile import VaultLock
from askvault.app.activity_board import ActivityBoard
from askvault.app.clients import OllamaClients
from askvault.app.daemon import Daemon
from askvault.services.admin.doctor import run_checks
from askvault.services.admin.status import collect_status, embedding_rate
from askvault.settings import Settings
from support.cli_invoke import invoke
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.settings_factory import cli_env, settings_for
from support.vault_factory import make_fixture_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return make_fixture_vault(tmp_path / "vault")


@pytest.fixture
def settings(vault: Path, tmp_path: Path, fake_ollama: FakeOllama) -> Settings:
    return settings_for(vault, tmp_path / "state", fake_ollama.url)


@pytest.fixture
def env(vault: Path, tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, str]:
    return cli_env(vault, tmp_path / "state", fake_ollama.url)


def daemon_lock(settings: Settings) -> VaultLock:
    """The lock `askvault run` holds, taken by this process (its pid is the daemon's)."""
    return VaultLock(settings.vault_path, "run", state_dir=settings.state_path.parent)


def index_with_ollama_down(env: dict[str, str], fake: FakeOllama) -> None:
    fake.set_fault("down")
    assert invoke(["index"], env)[0] == 0  # words indexed, embeddings wait
    fake.recover()


def checks_by_name(settings: Settings) -> dict[str, tuple[bool, str]]:
    return {c.name: (c.ok, c.detail) for c in run_checks(settings, OllamaClients(settings))}


# -- doctor while the daemon embeds --------------------------------------------------------


def test_doctor_fails_on_vectors_still_to_make_when_no_daemon_makes_them(
    env: dict[str, str], settings: Settings, fake_ollama: FakeOllama
) -> None:
    index_with_ollama_down(env, fake_ollama)
    ok, detail = checks_by_name(settings)["vectors"]
    assert not ok and detail == "no embedding model has stored vectors yet"


def test_doctor_passes_while_the_daemon_embeds_the_first_vectors(
    env: dict[str, str], settings: Settings, fake_ollama: FakeOllama
) -> None:
    index_with_ollama_down(env, fake_ollama)
    with daemon_lock(settings):
        ok, detail = checks_by_name(settings)["vectors"]
        code, out, _ = invoke(["doctor"], env)
    assert ok and f"the daemon (pid {os.getpid()}) is embedding them" in detail
    assert detail.startswith("no vectors yet for ")
    assert code == 0 and "FAIL" not in out


def test_doctor_passes_while_the_daemon_embeds_new_chunks_and_fails_without_it(
    env: dict[str, str], settings: Settings, fake_ollama: FakeOllama, vault: Path
) -> None:
    assert invoke(["index"], env)[0] == 0
    (vault / "New note.md").write_text("# New\n\nFresh words about lichens.\n")
    index_with_ollama_down(env, fake_ollama)
    ok, detail = checks_by_name(settings)["vectors match chunks"]
    assert not ok and "chunks without a vector" in detail
    with daemon_lock(settings):
        ok, detail = checks_by_name(settings)["vectors match chunks"]
    assert ok and detail.startswith("1 of ") and "chunks still to embed" in detail
    assert "the daemon (pid" in detail


def test_doctor_passes_while_the_daemon_switches_models(
    env: dict[str, str], settings: Settings
) -> None:
    assert invoke(["index"], env)[0] == 0
    other = settings_for(
        settings.vault_path,
        Path(settings.state_dir),
        settings.ollama.host,
        **{"ollama.embed_model": "all-minilm"},
    )
    ok, detail = checks_by_name(other)["embedding model"]
    assert not ok and detail.startswith(f"index built with {FAKE_EMBED_MODEL}")
    with daemon_lock(other):
        ok, detail = checks_by_name(other)["embedding model"]
    assert ok and "a switch under way; the daemon (pid" in detail


# -- a model Ollama lacks --------------------------------------------------------------------


def test_a_model_ollama_lacks_is_named_with_ollama_pull_everywhere(
    env: dict[str, str], settings: Settings, fake_ollama: FakeOllama
) -> None:
    assert invoke(["index"], env)[0] == 0
    missing = env | {"ASKVAULT_EMBED_MODEL": "mxbai-embed-large"}  # not in the fake's list
    code, _, err = invoke(["index"], missing)
    assert code == 0
    assert "(run `ollama pull mxbai-embed-large`)" in err
    assert "embeds them once the model is pulled" in err and "once Ollama answers" not in err
    # Search keeps using the vectors it has (the query embedded with their model), so it
    # stays semantic and has nothing to warn about; the other commands name the pull.
    code, out, err = invoke(["search", "fermentation"], missing)
    assert code == 0 and "fermentation" in out.lower() and "unavailable" not in err
    assert fake_ollama.requests_to("/api/embed")[-1]["model"] == FAKE_EMBED_MODEL
    doc = json.loads(invoke(["context", "fermentation", "--json"], missing)[1])
    assert doc["degraded"] is None and doc["pages"]
    status = invoke(["status"], missing)[1]
    assert "waiting: model 'mxbai-embed-large' is not available" in status
    assert "(run `ollama pull mxbai-embed-large`)" in status


def test_ollama_down_still_says_so_in_the_context_pack(
    env: dict[str, str], settings: Settings, fake_ollama: FakeOllama
) -> None:
    assert invoke(["index"], env)[0] == 0
    fake_ollama.set_fault("down")
    doc = json.loads(invoke(["context", "fermentation", "--json"], env)[1])
    assert any("Ollama is not reachable" in a for a in doc["actions"])


# -- status after a model switch ------------------------------------------------------------


def test_status_after_a_model_switch_says_which_vectors_search_uses(
    env: dict[str, str],
) -> None:
    assert invoke(["index"], env)[0] == 0
    out = invoke(["status", "--embed-model", "all-minilm"], env)[1]
    line = next(x for x in out.splitlines() if x.startswith("notes "))
    assert f"embedded with {FAKE_EMBED_MODEL}, which search uses;" in line
    assert "to embed with all-minilm)" in line
    assert "pending for" not in line


def test_status_without_a_switch_keeps_the_short_line(env: dict[str, str]) -> None:
    assert invoke(["index"], env)[0] == 0
    line = next(x for x in invoke(["status"], env)[1].splitlines() if x.startswith("notes "))
    assert f"embedded, 0 pending for {FAKE_EMBED_MODEL})" in line


# -- the daemon's activity: a scan under way, the rate, the time left ------------------------


def test_status_shows_a_reconcile_under_way_and_the_rate_of_the_running_daemon(
    env: dict[str, str], settings: Settings, fake_ollama: FakeOllama
) -> None:
    index_with_ollama_down(env, fake_ollama)
    with daemon_lock(settings):
        now = time.time()
        write_activity(
            activity_path(settings.state_path),
            Activity(
                pid=os.getpid(),
                scan=ScanActivity("start-up", 1200, 5000, now - 42),
                embedding=EmbedActivity(FAKE_EMBED_MODEL, 50, 4.0, now),
            ),
        )
        out = invoke(["status"], env)[1]
        doc = json.loads(invoke(["status", "--json"], env)[1])
    assert "scan         running (start-up): 1200 of 5000 notes, 42 s so far" in out
    pending = doc["pending_embeddings"]
    assert pending > 0 and doc["embedding"]["rate_per_s"] == 12.5
    assert doc["embedding"]["eta_s"] == pytest.approx(pending / 12.5)
    assert "embedding    running: 12.5 texts/s, about " in out and " left" in out
    assert doc["scan"]["done"] == 1200 and doc["scan"]["total"] == 5000


def test_an_activity_file_of_another_pid_or_without_a_daemon_says_nothing(
    env: dict[str, str], settings: Settings
) -> None:
    assert invoke(["index"], env)[0] == 0
    path = activity_path(settings.state_path)
    busy = Activity(
        pid=os.getpid() + 1,  # a daemon killed before it could remove its file
        scan=ScanActivity("start-up", 1, 9, time.time()),
        embedding=EmbedActivity(FAKE_EMBED_MODEL, 5, 1.0, time.time()),
    )
    write_activity(path, busy)
    with daemon_lock(settings):
        doc = collect_status(settings, probe=False)
    assert doc.scan is None and doc.embedding.rate_per_s is None
    write_activity(path, Activity(pid=os.getpid(), scan=busy.scan))
    assert collect_status(settings, probe=False).scan is None  # nobody holds the lock


@pytest.mark.parametrize(
    ("drain", "expected"),
    [
        (EmbedActivity(FAKE_EMBED_MODEL, 100, 10.0, 1000.0), 10.0),
        (EmbedActivity("all-minilm", 100, 10.0, 1000.0), None),  # another model's drain
        (EmbedActivity(FAKE_EMBED_MODEL, 100, 10.0, 1000.0 - 600), None),  # an old figure
        (EmbedActivity(FAKE_EMBED_MODEL, 0, 0.0, 1000.0), None),  # no time measured yet
    ],
)
def test_the_rate_is_the_configured_models_and_recent(
    drain: EmbedActivity, expected: float | None
) -> None:
    activity = Activity(pid=1, embedding=drain)
    assert embedding_rate(activity, FAKE_EMBED_MODEL, now=1000.0) == expected
    assert embedding_rate(None, FAKE_EMBED_MODEL, now=1000.0) is None


def test_a_damaged_or_missing_activity_file_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "activity.json"
    assert read_activity(path) is None
    for text in ("", "{", "[]", '{"pid": "x"}', '{"pid": 1, "scan": {"reason": "a"}}'):
        path.write_text(text)
        assert read_activity(path) is None, text
    path.write_text('{"pid": 7, "scan": null, "embedding": null}')
    assert read_activity(path) == Activity(pid=7)


def test_the_board_writes_at_most_once_a_second_but_always_a_scans_start_and_end(
    tmp_path: Path,
) -> None:
    now = [1000.0]
    path = tmp_path / "activity.json"
    board = ActivityBoard(path, pid=42, clock=lambda: now[0])
    board.scanning("start-up", 0, 10)
    assert read_activity(path) == Activity(42, ScanActivity("start-up", 0, 10, 1000.0))
    now[0] += 0.5
    board.scanning("start-up", 5, 10)
    assert read_activity(path).scan.done == 0  # type: ignore[union-attr]  # too soon
    now[0] += 0.6
    board.scanning("start-up", 6, 10)
    assert read_activity(path).scan.done == 6  # type: ignore[union-attr]
    board.scanning("start-up", 10, 10)  # the end, however soon
    assert read_activity(path).scan.done == 10  # type: ignore[union-attr]
    board.embedding("m", 3, 1.5)
    board.scan_done()
    assert read_activity(path) == Activity(42, None, EmbedActivity("m", 3, 1.5, now[0]))
    board.embedding_done()
    assert read_activity(path) == Activity(42)
    board.close()
    assert not path.exists()


class RecordingBoard(ActivityBoard):
    """The daemon's board, recording every report it gets."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.scans: list[tuple[str, int, int]] = []
        self.drains: list[int] = []
        self.lock = threading.Lock()

    def scanning(self, reason: str, done: int, total: int) -> None:
        with self.lock:
            self.scans.append((reason, done, total))
        super().scanning(reason, done, total)

    def embedding(self, model: str, texts: int, seconds: float) -> None:
        with self.lock:
            self.drains.append(texts)
        super().embedding(model, texts, seconds)


def test_the_daemon_reports_its_start_up_scan_and_its_embedding_then_removes_the_file(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for name in ("Fern", "Moss", "Lichen"):
        (vault / f"{name}.md").write_text(f"# {name}\n\n{name} grows in shade.\n")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    board = RecordingBoard(activity_path(settings.state_path))
    daemon = Daemon(settings, [], activity=board)
    daemon.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (board.drains and board.scans):
            time.sleep(0.05)
    finally:
        assert daemon.shutdown() == 0
    assert board.scans[0] == ("start-up", 0, 3) and board.scans[-1] == ("start-up", 3, 3)
    assert board.drains and board.drains[-1] >= 3
    assert board.activity.scan is None and board.activity.embedding is None
    assert not activity_path(settings.state_path).exists()
