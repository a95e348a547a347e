"""core/reply.py: the limits a model reply is read to."""

from __future__ import annotations

from askvault.core.reply import ReplyBudget, ReplyLimits, cut_note


def _limits(tokens: int = 100, size: int = 1000, seconds: float = 10.0) -> ReplyLimits:
    return ReplyLimits(tokens, size, seconds)


def test_the_budget_keeps_pieces_up_to_the_token_cap() -> None:
    budget = ReplyBudget(_limits(tokens=2))
    kept = [budget.take(p, 0.0) for p in ("a", "b", "c", "d")]
    assert (kept, budget.cut) == (["a", "b", "", ""], "tokens")


def test_the_budget_cuts_the_piece_that_crosses_the_byte_cap_at_a_character() -> None:
    budget = ReplyBudget(_limits(size=7))
    assert budget.take("abc", 0.0) == "abc"
    assert budget.take("ééé", 0.0) == "éé"  # 2 bytes each: 4 bytes were left
    assert (budget.cut, budget.take("x", 0.0)) == ("bytes", "")


def test_the_budget_counts_seconds_of_writing_from_the_first_piece() -> None:
    """The wait for the first piece (the model reading the prompt) is the silence bound's."""
    budget = ReplyBudget(_limits(seconds=5))
    assert budget.take("a", 100.0) == "a"
    assert budget.take("b", 105.0) == "b"
    assert (budget.take("c", 105.5), budget.cut) == ("", "time")


def test_a_cut_reply_says_where_and_which_setting() -> None:
    note = cut_note("bytes", _limits(size=32768))
    assert "32,768 bytes" in note and "`ollama.reply_max_bytes`" in note
