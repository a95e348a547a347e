"""Follow-ups in answer notes: where they are, and how one is made standalone."""

from __future__ import annotations

import pytest

from askvault.core.followup import (
    find_follow_ups,
    is_elliptic,
    next_follow_up,
    period_texts,
    standalone_question,
    subject_terms,
)

NOTE = """---
status: "answered"
---
> [!question] How do I hide the ribbon?

Right-click the ribbon.

## Follow-up
and on mobile?
"""


def test_a_follow_up_heading_and_the_lines_under_it_are_the_question() -> None:
    (found,) = find_follow_ups(NOTE)
    assert found.question == "and on mobile?"
    assert not found.answered
    assert NOTE.splitlines()[found.heading_line] == "## Follow-up"


def test_the_heading_may_carry_the_question_and_any_level_or_spelling() -> None:
    text = "x\n\n### follow up: can it be folded?\n\n# FOLLOW-UP\nwhat about\nnesting?\n"
    assert [f.question for f in find_follow_ups(text)] == [
        "can it be folded?",
        "what about\nnesting?",
    ]


def test_a_turn_mark_after_a_follow_up_makes_it_answered() -> None:
    text = NOTE + "\n%% askvault: turn 2 %%\nOn mobile, ...\n\n## Follow-up\nand on iPad?\n"
    first, second = find_follow_ups(text)
    assert first.answered and not second.answered
    assert next_follow_up(text) == second


def test_a_heading_inside_a_code_fence_is_not_a_follow_up() -> None:
    assert find_follow_ups("```\n## Follow-up\nnot me?\n```\n") == []


def test_an_empty_follow_up_is_listed_but_not_next() -> None:
    text = NOTE.replace("and on mobile?\n", "")
    (found,) = find_follow_ups(text)
    assert found.question == ""
    assert next_follow_up(text) is None


def test_a_follow_up_ends_at_the_next_heading() -> None:
    text = "## Follow-up\nand on mobile?\n## My own notes\nkeep me\n"
    (found,) = find_follow_ups(text)
    assert found.question == "and on mobile?"
    assert found.end_line == 2


def test_subject_terms_drop_function_and_asking_words() -> None:
    assert subject_terms("How do I hide the ribbon?") == ["hide", "ribbon"]
    assert subject_terms("Can I get a refund on a Catalyst license?") == [
        "refund",
        "Catalyst",
        "license",
    ]


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        # An English clitic is no word of its own: "I'm" is "I", "Obsidian's" "Obsidian".
        (
            "I deleted a note and I'm using Sync. How do I get it back?",
            ["deleted", "note", "Sync", "back"],
        ),
        ("What's the best way to move Obsidian's config?", ["best", "move", "Obsidian", "config"]),
        ("We’ll need the user’s vault", ["user", "vault"]),  # the typographic apostrophe
        # A negated verb is a function word, whole.
        ("I don't want the Drafts folder, and it doesn't sync", ["Drafts", "folder", "sync"]),
        ("What if I can't sync?", ["sync"]),
        # An elided article or pronoun goes, its word stays.
        ("ouvrir l'éditeur qu'il préfère", ["ouvrir", "éditeur", "il", "préfère"]),
    ],
)
def test_subject_terms_keep_no_part_of_a_contraction_that_is_not_the_subject(
    question: str, terms: list[str]
) -> None:
    assert subject_terms(question) == terms


def test_a_contraction_in_the_first_question_carries_no_fragment() -> None:
    earlier = ["I accidentally deleted a note and I'm using Obsidian Sync. How do I get it back?"]
    assert standalone_question(earlier, "how far back does it keep old versions?") == (
        "how far back does it keep old versions? (accidentally deleted note Obsidian Sync)"
    )


def test_elliptic_follow_ups_are_recognised() -> None:
    assert is_elliptic("and on mobile?")
    assert is_elliptic("what about Apple Notes?")
    assert is_elliptic("can it be folded?")  # a pronoun
    assert not is_elliptic("Is there a discount for students buying a Catalyst license?")


def test_an_elliptic_follow_up_carries_the_first_questions_subject() -> None:
    assert standalone_question(["How do I hide the ribbon?"], "and on mobile?") == (
        "and on mobile? (hide ribbon)"
    )


def test_a_new_name_replaces_the_earlier_names() -> None:
    got = standalone_question(["How do I import my notes from Evernote?"], "and from Notion?")
    assert got == "and from Notion? (import notes)"


def test_only_the_first_questions_terms_are_carried() -> None:
    got = standalone_question(
        ["How do I embed one note in another?", "what about a PDF?"], "and a web page?"
    )
    assert got == "and a web page? (embed note)"


def test_a_standalone_follow_up_is_left_as_it_is() -> None:
    question = "Is there a discount for students buying a Catalyst license?"
    assert standalone_question(["Can I get a refund?"], question) == question


def test_terms_the_follow_up_repeats_are_not_carried_and_no_history_is_no_change() -> None:
    assert standalone_question(["How do I hide the ribbon?"], "and the ribbon on mobile?") == (
        "and the ribbon on mobile? (hide)"
    )
    assert standalone_question([], "and on mobile?") == "and on mobile?"
    assert standalone_question(["how?"], "and it?") == "and it?"


def test_a_follow_ups_period_is_read_from_its_own_words_then_its_first_questions() -> None:
    first = "I wrecked a note this morning. Can I roll it back to how it was yesterday?"
    # The standalone question carries "back yesterday" out of its sentence: never read.
    assert "yesterday" in standalone_question([first], "And without Sync?")
    assert period_texts([first, "and on mobile?"], "And without Sync?") == (
        "And without Sync?",
        first,
    )
    # A follow-up that stands on its own inherits nothing, as it carries no terms.
    alone = "Is there a discount for students buying a Catalyst license?"
    assert period_texts([first], alone) == (alone,)
    assert period_texts([], "and on mobile?") == ("and on mobile?",)
    assert period_texts(["  "], "and on mobile?") == ("and on mobile?",)


def test_a_models_follow_up_heading_or_turn_mark_is_made_inert() -> None:
    from askvault.core.followup import inert_follow_up_lines

    text = "## Follow-up\n%% askvault: turn 3 %%\n## Sources"
    assert inert_follow_up_lines(text) == "\\## Follow-up\n\\%% askvault: turn 3 %%\n## Sources"
    assert find_follow_ups(inert_follow_up_lines(text)) == []


def test_a_turn_is_marked_its_headings_demoted_and_its_footnotes_named_for_it() -> None:
    from askvault.core.followup import render_turn

    turn = render_turn(2, "Yes [^1].\n\n[^1]: “quote”\n\n## Sources\n\n## Follow-up\n")
    assert turn.startswith("%% askvault: turn 2 %%\n\n")
    assert "Yes [^2-1]." in turn and "[^2-1]: “quote”" in turn
    assert "\n### Sources" in turn
    assert "\\### Follow-up" in turn  # the model's heading never reads as the user's


def test_an_answer_note_never_shows_a_follow_up_heading_of_its_own() -> None:
    from askvault.core.answer_note import AnswerNote, render_answer_note

    note = AnswerNote(
        question="q?", status="answered", asked="t", answer="Yes.\n\n## Follow-up\nmore?"
    )
    assert find_follow_ups(render_answer_note(note)) == []
