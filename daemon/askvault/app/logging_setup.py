"""Daemon logging on stderr: readable text, journald-friendly, or JSON lines.

Under systemd (JOURNAL_STREAM names our stderr) lines carry no timestamp (the
journal adds one) and start with a `<N>` syslog priority, which journald turns
into the entry's priority, so `journalctl -p warning` works.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping
from typing import IO, Any

from askvault.core.controls import escape_controls

# syslog priorities (sd-daemon.h): <3> error, <4> warning, <6> info, <7> debug.
SYSLOG_PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(message)s"


class TextFormatter(logging.Formatter):
    """The standard formatter, with control characters written as escapes: a message may
    hold what came from outside (a file name, a server's error text), which must not drive
    the terminal or the journal viewer reading it."""

    def format(self, record: logging.LogRecord) -> str:
        return escape_controls(super().format(record))


class JournalFormatter(TextFormatter):
    """`<N>message`: no timestamp, the level as a syslog priority prefix."""

    def format(self, record: logging.LogRecord) -> str:
        priority = SYSLOG_PRIORITY.get(record.levelno, 6 if record.levelno < 30 else 3)
        text = super().format(record)
        # Every physical line gets the prefix, or a traceback would be logged at info.
        return "\n".join(f"<{priority}>{line}" for line in text.splitlines())


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg (and exc when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": escape_controls(record.getMessage()),
        }
        if record.exc_info:
            doc["exc"] = escape_controls(self.formatException(record.exc_info))
        return json.dumps(doc, ensure_ascii=False)


def is_journal_stream(stream: IO[str], env: Mapping[str, str]) -> bool:
    """True if `stream` is the journald stream systemd named in JOURNAL_STREAM (`dev:inode`)."""
    value = env.get("JOURNAL_STREAM", "")
    if not value:
        return False
    try:
        st = os.fstat(stream.fileno())
        dev, ino = value.split(":", 1)
        return (st.st_dev, st.st_ino) == (int(dev), int(ino))
    except (OSError, ValueError, AttributeError):
        # Cannot compare (a wrapped stream): trust the variable, as sd_journal does loosely.
        return True


def make_formatter(log_format: str, stream: IO[str], env: Mapping[str, str]) -> logging.Formatter:
    """The formatter for `log_format` (text | json) on `stream`."""
    if log_format == "json":
        return JsonFormatter()
    if is_journal_stream(stream, env):
        return JournalFormatter("%(message)s")
    return TextFormatter(TEXT_FORMAT, datefmt="%Y-%m-%d %H:%M:%S")


def configure_logging(
    log_format: str = "text",
    level: str = "info",
    *,
    stream: IO[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> logging.Handler:
    """Send the `askvault` loggers (and warnings of libraries) to `stream` (stderr).

    Returns the installed handler, so a caller (a test) can remove it again.
    """
    stream = sys.stderr if stream is None else stream
    env = os.environ if env is None else env
    handler = logging.StreamHandler(stream)
    handler.setFormatter(make_formatter(log_format, stream, env))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_askvault", False)]:
        root.removeHandler(old)
    handler._askvault = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("askvault").setLevel(LEVELS.get(level, logging.INFO))
    # APScheduler logs every job run at info: one line per reconcile is ours to write.
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    return handler
