"""Every command turns a full disk into one line and a hint, never a traceback (issue 15 #11)."""

from __future__ import annotations

import errno

import click
import pytest
import sqlean
from click.testing import CliRunner

from askvault.cli.common import handle_errors


def _command(exc: BaseException) -> click.Command:
    @click.command()
    @handle_errors
    def boom() -> None:
        raise exc

    return boom


def _real_sqlite_full() -> sqlean.Error:
    """The error SQLite itself raises when a write finds no room (SQLITE_FULL)."""
    conn = sqlean.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t(a)")
        conn.execute("PRAGMA max_page_count = 2")
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 100)
    except sqlean.Error as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("the insert did not fill the database")


@pytest.mark.parametrize(
    "exc",
    [
        OSError(errno.ENOSPC, "No space left on device", "/state/index.sqlite"),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        _real_sqlite_full(),
    ],
    ids=["enospc", "edquot", "sqlite_full"],
)
def test_a_full_disk_anywhere_is_one_line_and_a_hint(exc: BaseException) -> None:
    result = CliRunner().invoke(_command(exc), [], catch_exceptions=False)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("askvault: the disk is full")
    assert lines[1] == "hint: free some disk space and try again"


def test_other_errors_still_raise() -> None:
    with pytest.raises(ValueError):
        CliRunner().invoke(_command(ValueError("bug")), [], catch_exceptions=False)


def test_a_message_that_only_reads_like_a_full_disk_is_not_one() -> None:
    """SQLite's error code tells a full disk, not the words of a message."""
    fake = sqlean.OperationalError("database or disk is full")
    with pytest.raises(sqlean.OperationalError):
        CliRunner().invoke(_command(fake), [], catch_exceptions=False)
