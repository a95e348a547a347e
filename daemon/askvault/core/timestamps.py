"""The one format of every time askvault writes or shows (answer notes, the problem note,
status): ISO 8601 to the second with the local UTC offset, `2026-12-01T10:00:00+01:00`
(docs/how-to/question-notes.md, "Times"). The JSON log stays in UTC (app/logging_setup.py).
"""

from __future__ import annotations

from datetime import datetime


def local_iso(ts: float) -> str:
    """`ts` (seconds since the epoch) as local time, ISO 8601 to the second, with offset."""
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")
