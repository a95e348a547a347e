"""core/controls.py: control characters removed from what is shown, escaped in logs."""

from __future__ import annotations

from askvault.core.controls import escape_controls, strip_controls, strip_counted


def test_strip_controls_removes_escape_sequences_whole() -> None:
    assert strip_controls("a\x1b[2Jb\x1b]0;title\x07c\x1bPdata\x1b\\d\x1b(Be") == "abcde"


def test_an_osc_without_terminator_loses_its_escape_and_leaves_the_rest_readable() -> None:
    assert strip_controls("a\x1b]0;not closed") == "a0;not closed"


def test_strip_controls_keeps_newlines_and_tabs_and_makes_lines_of_the_rest() -> None:
    assert strip_controls("a\tb\r\nc\rd\u2028e\x85f\x00g") == "a\tb\nc\nd\nefg"


def test_strip_counted_says_how_many_went() -> None:
    assert strip_counted("ok") == ("ok", 0)
    assert strip_counted("\x07\x1b[1m!") == ("!", 2)


def test_escape_controls_shows_each_one() -> None:
    assert escape_controls("a\x1b[31m\tb\x9b\u2028") == "a\\x1b[31m\tb\\x9b\\u2028"
