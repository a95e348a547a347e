from __future__ import annotations

import io
import json
import logging
import os
import sys
from pathlib import Path

from askvault.app.logging_setup import (
    JournalFormatter,
    configure_logging,
    is_journal_stream,
    make_formatter,
)


def _record(level: int, msg: str) -> logging.LogRecord:
    return logging.LogRecord("askvault.x", level, __file__, 1, msg, (), None)


def test_journal_lines_carry_the_syslog_priority_and_no_timestamp() -> None:
    fmt = JournalFormatter("%(message)s")
    assert fmt.format(_record(logging.INFO, "indexed 3")) == "<6>indexed 3"
    assert fmt.format(_record(logging.WARNING, "slow")) == "<4>slow"
    assert fmt.format(_record(logging.ERROR, "a\nb")) == "<3>a\n<3>b"


def test_json_lines_are_one_object_each() -> None:
    fmt = make_formatter("json", io.StringIO(), {})
    doc = json.loads(fmt.format(_record(logging.WARNING, "embedding waits")))
    assert doc["level"] == "warning" and doc["msg"] == "embedding waits"
    assert doc["logger"] == "askvault.x" and doc["ts"].endswith("Z")


def test_text_format_is_chosen_on_a_terminal_and_journal_under_systemd(tmp_path: Path) -> None:
    with open(tmp_path / "log", "w") as stream:
        st = os.fstat(stream.fileno())
        env = {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
        assert is_journal_stream(stream, env)
        assert isinstance(make_formatter("text", stream, env), JournalFormatter)
        assert not is_journal_stream(stream, {})
        assert not is_journal_stream(stream, {"JOURNAL_STREAM": "1:2"})
        assert not isinstance(make_formatter("text", stream, {}), JournalFormatter)


def test_configure_logging_replaces_its_own_handler() -> None:
    stream = io.StringIO()
    first = configure_logging("text", "info", stream=stream, env={})
    second = configure_logging("json", "debug", stream=stream, env={})
    root = logging.getLogger()
    try:
        assert first not in root.handlers and second in root.handlers
        logging.getLogger("askvault.test").debug("hello")
        assert json.loads(stream.getvalue().splitlines()[-1])["msg"] == "hello"
    finally:
        root.removeHandler(second)
        logging.getLogger("askvault").setLevel(logging.NOTSET)
    assert sys.stderr  # the default stream is untouched


def test_log_lines_show_control_characters_as_escapes_in_every_format() -> None:
    """A file name or a server's error text must not drive the terminal reading the log."""
    record = _record(logging.WARNING, "question \x1b]0;pwned\x07.md waits: \x1b[2J")
    for log_format, env in (("text", {}), ("json", {}), ("text", {"JOURNAL_STREAM": "1:1"})):
        line = make_formatter(log_format, io.StringIO(), env).format(record)
        assert "\x1b" not in line and "\x07" not in line
        assert "\\x1b]0;pwned\\x07.md" in line.replace("\\\\", "\\")
