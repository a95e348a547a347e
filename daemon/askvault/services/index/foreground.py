"""What the embedding backlog gives way to: questions being answered, and the texts a
waiting question's words find (issue 22, item 4).

The embedding thread drains the backlog batch by batch; a question answered meanwhile
needs the CPU (its own query vector, the chat model) more than the backlog does. Between
two batches the drain asks `wait_while_answering`, so no new batch starts while a question
is answered, and takes the hashes `prefer` was given, which jump its queue.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

WAIT_STEP_S = 0.25


class ForegroundWork:
    """Thread-safe; one per daemon, shared by the answer path and the embedding thread."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._answering = 0
        self._preferred: list[str] = []

    @contextmanager
    def answering(self) -> Iterator[None]:
        """While inside, no new embedding batch starts."""
        with self._cond:
            self._answering += 1
        try:
            yield
        finally:
            with self._cond:
                self._answering -= 1
                self._cond.notify_all()

    def is_answering(self) -> bool:
        with self._cond:
            return self._answering > 0

    def prefer(self, text_hashes: Sequence[str]) -> None:
        """Embed these texts (best first) before the rest of the backlog."""
        if not text_hashes:
            return
        with self._cond:
            self._preferred.extend(text_hashes)

    def take_preferred(self) -> list[str]:
        """The hashes preferred since the last call (each given once)."""
        with self._cond:
            taken, self._preferred = self._preferred, []
        return taken

    def wait_while_answering(self, should_stop: Callable[[], bool]) -> float:
        """Block until no question is being answered (or `should_stop`); seconds waited."""
        started = time.monotonic()
        with self._cond:
            while self._answering > 0 and not should_stop():
                self._cond.wait(WAIT_STEP_S)
        return time.monotonic() - started
