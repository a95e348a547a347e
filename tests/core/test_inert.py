"""core/inert.py: untrusted Markdown made inert, on its lines and quoted on one line."""

from __future__ import annotations

from askvault.core.inert import code_span, inert_line, neutralise


def test_inert_line_never_cuts_a_code_span_in_two() -> None:
    """Cut inside the span, the image it holds would be left out of code, live."""
    text = "x" * 190 + " ![a](http://host/p.png) tail"
    line = inert_line(text, 200)
    assert line == "x" * 190 + "…"


def test_inert_line_makes_the_words_of_a_note_inert() -> None:
    """An excerpt quoted in the report is a note's text: a clipped page's tracker in it
    would load with the answer note."""
    assert inert_line('See <img src="http://host/t.gif"> now', 200) == (
        'See `<img src="http://host/t.gif">` now'
    )


def test_inert_line_takes_no_fence_for_code() -> None:
    """On one line inside a quote, `~~~` opens no code block: what follows it is text."""
    assert inert_line("~~~ ![a](http://host/p.png)", 200) == "~~~ `![a](http://host/p.png)`"


def test_inert_line_removes_control_characters() -> None:
    assert inert_line("a\x1b[31mb\x07c", 200) == "abc"


def test_a_passage_of_a_note_loads_nothing_and_keeps_its_lines() -> None:
    assert neutralise("One ![a](http://host/p.png)\n\n\t<iframe src=http://h>") == (
        "One `![a](http://host/p.png)`\n\n    `<iframe src=http://h>`"
    )


def test_a_code_span_holds_no_backtick_no_line_break_and_no_cell_separator() -> None:
    assert code_span("a`b\nc|d", 2) == "``aˋb c\\|d``"
