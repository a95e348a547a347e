"""The parsing pool: `map` over worker processes for a large batch of notes.

An adapter of the operating system's processes (as adapters/watcher.py is of its file
events): the pool, and the thread each worker runs to exit with its parent, live here so
that services/ start no thread (tests/repo/test_architecture.py).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class MapFn(Protocol):
    """`fn(*a)` for each tuple `a` of `args`, in order (lazily)."""

    def __call__(self, fn: Callable[..., T], args: list[tuple[object, ...]]) -> Iterable[T]: ...


# Below this many notes to read, parsing stays in-process (a pool costs ~0.5 s to start).
POOL_MIN_NOTES = 400
PARENT_POLL_S = 0.25  # how often a pool worker checks that its parent still lives


@contextlib.contextmanager
def worker_map(count: int, max_workers: int) -> Iterator[MapFn]:
    """`map` in this process, or over a pool of worker processes for a large batch.

    Reading, parsing and chunking are about half of a cold index; on the hub vault a pool
    of two took the reconcile from 4.3-5.1 s to 3.3-3.4 s (bench/index_bench.py). The pool
    costs ~0.5 s to start (spawned, not forked: the daemon has threads), so small batches
    stay in this process; `index.parse_workers = 1` turns it off.
    """
    workers = min(max_workers, os.cpu_count() or 1)
    if count < POOL_MIN_NOTES or workers < 2:
        yield lambda fn, args: (fn(*a) for a in args)
        return
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=mp.get_context("spawn"),
        initializer=exit_with_parent,
        initargs=(os.getpid(),),
    )

    def pooled(fn: Callable[..., T], args: list[tuple[object, ...]]) -> Iterator[T]:
        done = 0
        try:
            for outcome in pool.map(fn, *zip(*args, strict=True), chunksize=32):
                done += 1
                yield outcome
        except BrokenProcessPool:
            # A worker could not start (e.g. a host script without a __main__ guard):
            # finish in this process, slower but complete.
            log.warning("parsing pool failed; continuing in one process")
            for a in args[done:]:
                yield fn(*a)

    try:
        yield pooled
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def exit_with_parent(parent_pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """In a pool worker: exit as soon as the process that started it is gone.

    A parent killed hard (kill -9, the OOM killer, a service manager's stop timeout) closes
    nothing, so its spawned workers would run on, reparented to init, and the resource
    tracker with them (it exits once every end of its pipe is closed). A daemon thread
    compares `os.getppid()` with the parent's pid: portable, and a worker busy parsing
    still notices within `poll_s` (the GIL is released to other threads every few ms).
    """

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="askvault-parent-watch", daemon=True).start()
