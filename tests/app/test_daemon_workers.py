"""The daemon in-process with a Worker: inbox paths are routed to it, index changes reported."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from askvault.adapters import store
from askvault.adapters.db import connect
from askvault.app.daemon import Daemon, default_workers
from askvault.settings import Settings
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.settings_factory import settings_for


class RecordingWorker:
    def __init__(self) -> None:
        self.noticed: list[str] = []
        self.changed: list[str] = []
        self.deleted: list[str] = []
        self.ran = threading.Event()
        self.returned = threading.Event()

    def notice(self, paths: list[str]) -> None:
        self.noticed += paths

    def on_notes_changed(self, changed: list[str], deleted: list[str]) -> None:
        self.changed += changed
        self.deleted += deleted

    def run(self, stop_event: threading.Event) -> None:
        self.ran.set()
        stop_event.wait()
        self.returned.set()


def _wait(check, timeout_s: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not check():
        time.sleep(0.02)
    assert check()


def test_daemon_routes_inbox_paths_to_workers_and_reports_index_changes(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    vault = tmp_path / "vault"
    (vault / "queries" / "inbox").mkdir(parents=True)
    settings = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"daemon.debounce_s": 0.05}
    )
    worker = RecordingWorker()
    daemon = Daemon(settings, [worker])
    before = set(threading.enumerate())
    daemon.start()
    try:
        _wait(worker.ran.is_set)
        (vault / "queries" / "inbox" / "Why.md").write_text("Why is the sky blue?\n")
        (vault / "Sky.md").write_text("The sky is blue because of scattering.\n")
        _wait(lambda: "queries/inbox/Why.md" in worker.noticed)
        _wait(lambda: "Sky.md" in worker.changed)
        assert "queries/inbox/Why.md" not in worker.changed  # not knowledge by default
        (vault / "Sky.md").unlink()
        _wait(lambda: "Sky.md" in worker.deleted)
    finally:
        assert daemon.shutdown() == 0
    assert worker.returned.is_set()
    _wait(lambda: {t for t in threading.enumerate() if t.is_alive()} - before == set())


def test_default_workers_are_empty_until_the_inbox_module_exists(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = settings_for(tmp_path, tmp_path / "state", fake_ollama.url)
    workers = default_workers(settings)
    assert all(hasattr(w, "run") and hasattr(w, "notice") for w in workers)


def test_the_inbox_thread_answers_a_dropped_question_and_stops_promptly(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    """InboxWorker only waits and wakes: a real thread, the real clock, one question."""
    from askvault.app.clients import OllamaClients
    from askvault.app.inbox_loop import InboxWorker
    from askvault.services.inbox.inbox import Inbox
    from support.inbox_driver import inbox_settings, inbox_vault

    vault = inbox_vault(tmp_path / "vault")
    settings = inbox_settings(vault, tmp_path / "state", fake_ollama.url)
    fake_ollama.chat_script = ["An embed shows another note inline [[Embeds]]."]
    worker = InboxWorker(Inbox(settings, OllamaClients(settings)))
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    try:
        (vault / "queries/inbox/Q.md").write_text("What does an embed show?\n", encoding="utf-8")
        worker.notice(["queries/inbox/Q.md"])
        _wait(lambda: (vault / "queries/archive/Q.md").exists(), timeout_s=20.0)
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive(), "the inbox thread must stop promptly"
    assert "status: answered" in (vault / "queries/answers/Q.md").read_text(encoding="utf-8")


def _indexed(settings: Settings) -> set[str]:
    conn = connect(settings.db_path, readonly=True)
    try:
        return set(store.stored_notes(conn))
    finally:
        conn.close()


def test_obsidians_excluded_files_take_effect_as_soon_as_app_json_changes(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    vault = tmp_path / "vault"
    (vault / "Templates").mkdir(parents=True)
    (vault / ".obsidian").mkdir()
    (vault / "Templates" / "Daily.md").write_text("# Daily\n\nA template.\n")
    (vault / "Fern.md").write_text("# Fern\n\nFerns like shade.\n")
    # The periodic reconcile is an hour away: only the change of app.json can do it.
    settings = settings_for(
        vault,
        tmp_path / "state",
        fake_ollama.url,
        **{"daemon.debounce_s": 0.05, "daemon.reconcile_interval_s": 3600},
    )
    worker = RecordingWorker()
    daemon = Daemon(settings, [worker])
    daemon.start()
    try:
        _wait(lambda: _indexed(settings) == {"Fern.md", "Templates/Daily.md"}, timeout_s=30)
        app_json = vault / ".obsidian" / "app.json"
        app_json.write_text('{"userIgnoreFilters": ["Templates/"], "showLineNumber": true}')
        _wait(lambda: "Templates/Daily.md" in worker.deleted, timeout_s=30)
        assert _indexed(settings) == {"Fern.md"}
        app_json.write_text('{"userIgnoreFilters": [], "showLineNumber": true}')
        _wait(lambda: _indexed(settings) == {"Fern.md", "Templates/Daily.md"}, timeout_s=30)
    finally:
        assert daemon.shutdown() == 0


def _active_digest(settings: Settings) -> str | None:
    conn = connect(settings.db_path, readonly=True)
    try:
        active = store.active_fingerprint(conn)
        pending = store.count_pending(conn, active) if active else None
    finally:
        conn.close()
    return active.fingerprint.digest if active and pending == 0 else None


def test_a_running_daemon_builds_a_re_pulled_models_vectors_at_its_next_reconcile(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    # The same way as `askvault index`: a new client asks for the model's fingerprint.
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Fern.md").write_text("# Fern\n\nFerns like shade.\n")
    settings = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"daemon.debounce_s": 0.05}
    )
    daemon = Daemon(settings, [RecordingWorker()])
    daemon.start()
    try:
        _wait(
            lambda: _active_digest(settings) == fake_ollama.digest(FAKE_EMBED_MODEL), timeout_s=30
        )
        fake_ollama.digests[f"{FAKE_EMBED_MODEL}:latest"] = "sha256:" + "e" * 64
        fake_ollama.dimensions[FAKE_EMBED_MODEL] = 32
        daemon.request_reconcile("periodic")
        _wait(lambda: _active_digest(settings) == "sha256:" + "e" * 64, timeout_s=30)
    finally:
        assert daemon.shutdown() == 0
