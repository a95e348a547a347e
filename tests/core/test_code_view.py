"""core/code_view.py: what is code however a renderer reads the text, never more."""

from __future__ import annotations

import pytest

from askvault.core.code_view import Fences, code_spans, code_view


def test_a_fenced_block_at_the_top_is_code() -> None:
    text = "a\n```\n<img src=x>\n```\nb"
    assert code_view(text) == "a\n   \n           \n   \nb"


def test_a_fence_no_container_can_end_is_code_open_or_closed() -> None:
    fences = Fences.of(["> ```", "> code", "> more"], escape=True)
    assert (fences.rows, fences.closer, fences.suspects) == ([True] * 3, "> ```", [])


@pytest.mark.parametrize(
    "lines",
    [
        ["> ```", "code", "> ```"],  # the quote ends: so does the fence
        ["   ```", "   code", "done"],  # an item may end at the line indented less
        ["   ```", "     ```", "x"],  # a closer for one reading, content for another
        ["- ```", "  x", "  ```"],  # a list marker before the fence
    ],
)
def test_a_fence_a_reading_may_end_sooner_is_not_code(lines: list[str]) -> None:
    fences = Fences.of(lines, escape=True)
    assert not fences.rows[0] and not fences.rows[1] and fences.suspects[0] == 0


def test_after_a_fence_that_is_unsure_no_later_fence_counts_unless_it_was_escaped() -> None:
    """Whether a later ``` opens or closes depends on the unsure one."""
    lines = ["- ```", "x", "```", "y", "```"]
    assert not any(Fences.of(lines, escape=False).rows)
    assert Fences.of(lines, escape=True).rows == [False, False, True, True, True]


def test_code_spans_pair_as_commonmark_with_escapes() -> None:
    assert code_spans("a `b` \\`c` d`") == ([(2, 5), (9, 13)], 0)
    assert code_spans("`a`` b") == ([], 2)


@pytest.mark.parametrize(
    "text",
    [
        "x `a\n- b `c ![i](u) `",  # a lone run: a list item may pair it otherwise
        "| `a | b` |",  # the cells pair what the line does not
        "<b title='`'> `z` ![i](u) `",  # a tag takes the backtick it holds
    ],
)
def test_spans_a_cut_could_change_are_not_code(text: str) -> None:
    assert code_view(text) == text


def test_spans_every_line_pairs_by_itself_are_code() -> None:
    assert code_view("a `b` c\nd `e`") == "a     c\nd    "
