"""The pure parts of adapters/watcher.py: debouncing, event routing, filesystem detection."""

from __future__ import annotations

from pathlib import Path

from watchdog.events import (
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedNoWriteEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)

from askvault.adapters.watcher import (
    Debouncer,
    EventRouter,
    filesystem_type,
    needs_polling,
)


def test_debouncer_waits_for_quiet_then_sends_everything_in_one_batch() -> None:
    d = Debouncer(0.3)
    for i in range(1000):
        d.add_path(f"n{i}.md", 10.0 + i * 0.0001)
    assert d.take_due(10.2) is None
    batch = d.take_due(10.5)
    assert batch is not None and len(batch.changed) == 1000
    assert d.take_due(20.0) is None and d.next_due() is None


def test_debouncer_collapses_repeated_events_of_a_path() -> None:
    d = Debouncer(0.3)
    for t in (0.0, 0.1, 0.2):
        d.add_path("a.md", t)
    assert d.take_due(0.4) is None
    batch = d.take_due(0.5)
    assert batch is not None and batch.changed == ["a.md"]


def test_debouncer_sends_quiet_paths_when_events_never_stop() -> None:
    d = Debouncer(0.3, max_wait_s=1.0)
    d.add_path("done.md", 0.0)
    t = 0.0
    while t < 1.2:
        d.add_path("busy.md", t)
        t += 0.1
    batch = d.take_due(1.2)
    assert batch is not None and batch.changed == ["done.md"]
    assert d.take_due(1.6) is not None  # busy.md once it is quiet


def test_debouncer_reports_lost_events_and_dropped_folders() -> None:
    d = Debouncer(0.1)
    d.add_dropped_folder("old", 0.0)
    d.mark_events_lost(0.0)
    batch = d.take_due(0.2)
    assert batch is not None and batch.dropped_folders == ["old"] and batch.events_lost


def _router(root: Path) -> tuple[EventRouter, Debouncer]:
    d = Debouncer(0.0)
    return EventRouter(root, d, clock=lambda: 0.0), d


def test_router_keeps_note_paths_and_both_ends_of_a_move(tmp_path: Path) -> None:
    router, d = _router(tmp_path)
    router.dispatch(FileCreatedEvent(str(tmp_path / "a.md")))
    router.dispatch(FileModifiedEvent(str(tmp_path / "img.png")))
    router.dispatch(FileOpenedEvent(str(tmp_path / "b.md")))
    router.dispatch(FileClosedNoWriteEvent(str(tmp_path / "b.md")))
    router.dispatch(FileMovedEvent(str(tmp_path / ".a.md.tmp"), str(tmp_path / "sub" / "c.MD")))
    batch = d.take_due(1.0)
    assert batch is not None and batch.changed == ["a.md", "sub/c.MD"]


def test_router_drops_a_deleted_folder_and_repaths_a_moved_one(tmp_path: Path) -> None:
    (tmp_path / "new" / "deep").mkdir(parents=True)
    (tmp_path / "new" / "deep" / "x.md").write_text("x")
    (tmp_path / "new" / "y.txt").write_text("y")
    router, d = _router(tmp_path)
    router.dispatch(DirDeletedEvent(str(tmp_path / "gone")))
    router.dispatch(DirMovedEvent(str(tmp_path / "old"), str(tmp_path / "new")))
    batch = d.take_due(1.0)
    assert batch is not None
    assert batch.dropped_folders == ["gone"]
    assert batch.changed == ["new/deep/x.md", "old/deep/x.md"]


def test_router_treats_a_folder_moved_out_of_the_vault_as_dropped(tmp_path: Path) -> None:
    router, d = _router(tmp_path)
    router.dispatch(DirMovedEvent(str(tmp_path / "away"), ""))
    router.dispatch(FileCreatedEvent("/elsewhere/z.md"))
    batch = d.take_due(1.0)
    assert batch is not None and batch.dropped_folders == ["away"] and batch.changed == []


MOUNTS = """\
/dev/sda1 / ext4 rw,relatime 0 0
server:/export /mnt/notes nfs4 rw 0 0
sshfs#me@host: /home/me/remote fuse.sshfs rw 0 0
/dev/sdb1 /home/me/My\\040Vault ext4 rw 0 0
"""


def test_filesystem_type_takes_the_longest_mount_point() -> None:
    assert filesystem_type(Path("/mnt/notes/vault"), MOUNTS) == "nfs4"
    assert filesystem_type(Path("/mnt/notesx"), MOUNTS) == "ext4"
    assert filesystem_type(Path("/home/me/remote/v"), MOUNTS) == "fuse.sshfs"
    assert filesystem_type(Path("/home/me/My Vault/x"), MOUNTS) == "ext4"
    assert filesystem_type(Path("/x"), "") is None


def test_network_and_fuse_filesystems_are_polled() -> None:
    assert needs_polling("nfs4") and needs_polling("fuse.sshfs") and needs_polling("cifs")
    assert not needs_polling("ext4") and not needs_polling("btrfs") and not needs_polling(None)
