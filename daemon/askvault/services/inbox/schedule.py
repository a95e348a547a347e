"""When each inbox question may be tried again (issue 12: the one backoff, per question).

A question put off (Ollama away, a write that failed, an archive step refused) waits its
own `Backoff` delay; one that cannot be answered as it is (a draft, a failed question, a
name SQLite cannot hold) is skipped until its bytes change.
"""

from __future__ import annotations

from askvault.core.backoff import BACKOFF_FIRST_S, BACKOFF_MAX_S, Backoff
from askvault.services.inbox.clock import SYSTEM_CLOCK, Clock

Signature = tuple[int, int, int]  # (size, mtime_ns, inode) of a question note


class QuestionSchedule:
    """When each question may be tried again: put off with backoff after a failure (the
    one `Backoff`, per question), or skipped until its bytes change (a draft, a failed
    question, an unusable name). Answered questions whose archive or log step waits keep
    their backoff after they leave the inbox listing (a vanished question is still to be
    logged)."""

    def __init__(
        self,
        first_s: float = BACKOFF_FIRST_S,
        max_s: float = BACKOFF_MAX_S,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.first_s, self.max_s = first_s, max_s
        self.clock = clock
        self._backoff: dict[str, Backoff] = {}
        self._retry_at: dict[str, float] = {}
        self._skip_sig: dict[str, Signature] = {}
        self._finishing: set[str] = set()

    def put_off(self, rel: str) -> float:
        """Put `rel` off for its next backoff delay; returns the delay."""
        backoff = self._backoff.setdefault(rel, Backoff(self.first_s, self.max_s))
        delay = backoff.failed()
        self._retry_at[rel] = self.clock.monotonic() + delay
        return delay

    def put_off_finishing(self, rel: str) -> float:
        """Put off the archive or log step of an answered question; returns the delay."""
        self._finishing.add(rel)
        return self.put_off(rel)

    def is_due(self, rel: str) -> bool:
        """False while `rel` is put off."""
        return self._retry_at.get(rel, float("-inf")) <= self.clock.monotonic()

    def skip(self, rel: str, sig: Signature) -> None:
        """Leave `rel` alone until its bytes change."""
        self._skip_sig[rel] = sig

    def is_skipped(self, rel: str, sig: Signature) -> bool:
        return self._skip_sig.get(rel) == sig

    def is_finishing(self, rel: str) -> bool:
        return rel in self._finishing

    def answered(self, rel: str) -> None:
        """`rel` was answered: a later failure of it waits the first delay again."""
        self._backoff.pop(rel, None)

    def finished(self, rel: str) -> None:
        """`rel` is archived and logged: nothing is kept of it."""
        self._backoff.pop(rel, None)
        self._retry_at.pop(rel, None)
        self._finishing.discard(rel)

    def forget_absent(self, present: set[str]) -> None:
        """Drop what is kept of questions no longer listed, unless they are finishing."""
        for table in (self._skip_sig, self._retry_at, self._backoff):
            for rel in [r for r in table if r not in present and r not in self._finishing]:
                del table[rel]
