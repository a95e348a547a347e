from __future__ import annotations

from askvault.app.work import WorkQueue


def test_work_queue_merges_everything_pending_into_one_step() -> None:
    queue = WorkQueue()
    queue.add_paths(["b.md", "a.md"])
    queue.add_paths(["a.md"], ["old"])
    work = queue.take(0.0)
    assert work is not None
    assert (work.paths, work.dropped_folders, work.reconcile) == (["a.md", "b.md"], ["old"], None)
    assert queue.take(0.0) is None


def test_work_queue_keeps_the_first_reason_of_merged_reconcile_requests() -> None:
    queue = WorkQueue()
    queue.request_reconcile("periodic")
    queue.request_reconcile("SIGHUP")
    work = queue.take(0.0)
    assert work is not None and work.reconcile == "periodic"


def test_work_queue_ignores_empty_batches() -> None:
    queue = WorkQueue()
    queue.add_paths([], [])
    assert queue.take(0.0) is None
