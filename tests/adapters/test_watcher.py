"""VaultWatcher on a real folder: real inotify (and polling) events to batches."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from askvault.adapters.watcher import (
    VaultWatcher,
    WatchBatch,
    choose_watch_mode,
    default_observer,
)


class Collector:
    def __init__(self) -> None:
        self.batches: list[WatchBatch] = []
        self.lock = threading.Lock()

    def __call__(self, batch: WatchBatch) -> None:
        with self.lock:
            self.batches.append(batch)

    def changed(self) -> list[str]:
        with self.lock:
            return sorted({p for b in self.batches for p in b.changed})

    def wait(self, check, timeout_s: float = 5.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.02)
        raise AssertionError(f"batches: {self.batches}")


@pytest.fixture(params=["events", "polling"])
def watched(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Collector]]:
    collector = Collector()
    watcher = VaultWatcher(
        tmp_path, collector, debounce_s=0.1, mode=request.param, poll_interval_s=0.1
    )
    watcher.start()
    try:
        yield tmp_path, collector
    finally:
        watcher.stop()


def test_watcher_reports_an_atomic_save_once_without_the_temp_name(
    watched: tuple[Path, Collector],
) -> None:
    root, collector = watched
    tmp = root / ".note.md.tmp"
    tmp.write_text("draft")
    os.replace(tmp, root / "note.md")
    collector.wait(lambda: "note.md" in collector.changed())
    time.sleep(0.3)
    assert collector.changed() == ["note.md"]


def test_watcher_reports_a_deleted_folder(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.md").write_text("a")
    collector = Collector()
    watcher = VaultWatcher(tmp_path, collector, debounce_s=0.05)
    watcher.start()
    try:
        (tmp_path / "dir" / "a.md").unlink()
        (tmp_path / "dir").rmdir()
        collector.wait(lambda: any("dir" in b.dropped_folders for b in collector.batches))
    finally:
        watcher.stop()


def test_watcher_threads_end_when_stopped(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    watcher = VaultWatcher(tmp_path, lambda batch: None, debounce_s=0.05)
    watcher.start()
    watcher.stop()
    time.sleep(0.1)
    assert {t for t in threading.enumerate() if t.is_alive()} - before == set()


def test_watch_mode_auto_polls_a_network_filesystem(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"srv:/x {tmp_path} nfs4 rw 0 0\n/dev/sda1 / ext4 rw 0 0\n")
    assert choose_watch_mode("auto", tmp_path / "vault", mounts) == "polling"
    assert choose_watch_mode("events", tmp_path / "vault", mounts) == "events"
    mounts.write_text("/dev/sda1 / ext4 rw 0 0\n")
    assert choose_watch_mode("auto", tmp_path / "vault", mounts) == "events"
    assert choose_watch_mode("auto", tmp_path, tmp_path / "missing") == "events"


def test_watcher_asks_for_a_reconcile_when_inotify_reports_an_overflow(tmp_path: Path) -> None:
    collector = Collector()
    watcher = VaultWatcher(tmp_path, collector, debounce_s=0.05)
    watcher.start()
    try:
        # watchdog surfaces IN_Q_OVERFLOW only as this warning of its inotify module.
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        collector.wait(lambda: any(b.events_lost for b in collector.batches))
    finally:
        watcher.stop()


def test_watcher_falls_back_to_polling_and_reconciles_when_inotify_refuses(
    tmp_path: Path,
) -> None:
    def make_observer(mode: str, poll_interval_s: float):  # type: ignore[no-untyped-def]
        if mode == "events":
            raise OSError(28, "inotify watch limit reached")
        return default_observer(mode, poll_interval_s)

    collector = Collector()
    watcher = VaultWatcher(
        tmp_path, collector, debounce_s=0.05, poll_interval_s=0.1, make_observer=make_observer
    )
    watcher.start()
    try:
        assert watcher.mode == "polling"
        collector.wait(lambda: any(b.events_lost for b in collector.batches))
        (tmp_path / "late.md").write_text("written after the fallback")
        collector.wait(lambda: "late.md" in collector.changed())
    finally:
        watcher.stop()


@pytest.mark.parametrize("mode", ["events", "polling"])
@pytest.mark.parametrize("how", ["replaced_by_another_folder", "deleted_and_made_again"])
def test_a_vault_folder_that_comes_back_is_watched_again_and_reconciled(
    tmp_path: Path, mode: str, how: str
) -> None:
    # A drive unmounted and mounted again, a share reconnected: the path is the same, the
    # folder is not, and the old watch died with the old one.
    root = tmp_path / "vault"
    root.mkdir()
    (root / "a.md").write_text("a")
    collector = Collector()
    watcher = VaultWatcher(
        root, collector, debounce_s=0.05, mode=mode, poll_interval_s=0.1, root_check_s=0.2
    )
    watcher.start()
    try:
        if how == "replaced_by_another_folder":
            root.rename(tmp_path / "old mount")
        else:
            (root / "a.md").unlink()
            root.rmdir()
            collector.wait(lambda: watcher.router.watch_lost.is_set(), timeout_s=15)
        root.mkdir()
        (root / "a.md").write_text("a")
        collector.wait(lambda: any(b.events_lost for b in collector.batches), timeout_s=15)
        (root / "edited after the return.md").write_text("b")
        collector.wait(lambda: "edited after the return.md" in collector.changed(), timeout_s=15)
    finally:
        watcher.stop()


def test_a_vault_found_away_is_watched_again_even_when_it_returns_with_its_old_identity(
    tmp_path: Path,
) -> None:
    # A tmpfs or a drive unmounted and mounted again within a second can come back with
    # the same device and inode, and an unmount reports no event: the daemon, which saw
    # the vault away, asks for a new watch.
    collector = Collector()
    watcher = VaultWatcher(tmp_path, collector, debounce_s=0.05, root_check_s=0.2)
    watcher.start()
    try:
        watcher.watch_again()
        collector.wait(lambda: any(b.events_lost for b in collector.batches), timeout_s=15)
        (tmp_path / "after.md").write_text("b")
        collector.wait(lambda: "after.md" in collector.changed(), timeout_s=15)
    finally:
        watcher.stop()


@pytest.mark.parametrize("mode", ["events", "polling"])
def test_a_change_of_obsidians_app_json_asks_for_new_rules_and_other_settings_do_not(
    tmp_path: Path, mode: str
) -> None:
    (tmp_path / ".obsidian").mkdir()
    collector = Collector()
    watcher = VaultWatcher(tmp_path, collector, debounce_s=0.05, mode=mode, poll_interval_s=0.1)
    watcher.start()
    try:
        (tmp_path / ".obsidian" / "workspace.json").write_text('{"active": "Fern.md"}')
        (tmp_path / "note.md").write_text("n")
        collector.wait(lambda: "note.md" in collector.changed(), timeout_s=15)
        assert not any(b.rules_changed for b in collector.batches)
        (tmp_path / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["T/"]}')
        collector.wait(lambda: any(b.rules_changed for b in collector.batches), timeout_s=15)
    finally:
        watcher.stop()


def test_watchdogs_warning_about_a_folder_watched_twice_is_not_in_the_users_log() -> None:
    # The first question makes `queries/inbox`; inotify's observer then warns with a repr
    # of every watch of the vault (kilobytes in the log). Other warnings still show.
    import warnings

    from askvault.adapters.watcher import default_observer

    with warnings.catch_warnings(record=True) as caught:
        default_observer("native", 1.0)
        for message in ("Callback with id '1' already exists for watch <Watch>.", "other"):
            warnings.warn_explicit(
                message, RuntimeWarning, "inotify.py", 365, module="watchdog.observers.inotify"
            )
    assert [str(w.message) for w in caught] == ["other"]
