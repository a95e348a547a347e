"""How the model reads a follow-up: the forms of `asked_follow_up`, each prompt as a golden
file (the whole user message the model gets), the earlier answer's sentence, and the
model's rewrite of a follow-up (`rewrite_messages`, `read_rewrite`: an untrusted reply).

Regenerate the golden files with `UPDATE_GOLDEN=1 pytest tests/core/test_followup_prompt.py`
and read the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from askvault.core.followup import (
    EARLIER_ANSWER_MAX_CHARS,
    FOLLOW_UP_FORMS,
    REWRITE_MAX_CHARS,
    REWRITE_SCHEMA,
    AskedFollowUp,
    asked_follow_up,
    first_sentence,
    read_rewrite,
    rewrite_messages,
)
from askvault.core.prompt import build_messages, context_budget, reordered
from askvault.records import ContextPack, EvidenceChunk, EvidencePage

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
EARLIER = ["How do I hide the ribbon?"]
ANSWER = "Right-click the ribbon and choose **Hide ribbon** [[Ribbon#Hide]]. It comes back [2]."
REWRITTEN = "How do I hide the ribbon on mobile?"


def _pack() -> ContextPack:
    chunk = EvidenceChunk(
        0, "Hide", ("Hide",), (3, 5), "Right-click the ribbon and choose Hide ribbon.", 1.0
    )
    mobile = EvidenceChunk(
        0, None, (), (1, 2), "On mobile, the ribbon is in the sidebar menu.", 0.9
    )
    return ContextPack(
        prompt="q",
        pages=(
            EvidencePage("Ribbon.md", "Ribbon", "[[Ribbon]]", 1.0, (("fts", 1.0),), (chunk,)),
            EvidencePage(
                "Mobile app.md", "Mobile app", "[[Mobile app]]", 0.9, (("fts", 0.9),), (mobile,)
            ),
        ),
    )


def _user_message(asked: AskedFollowUp) -> str:
    plan = build_messages(asked.question, _pack(), num_ctx=8192, background=asked.background)
    return plan.messages[1]["content"]


@pytest.mark.parametrize("form", FOLLOW_UP_FORMS)
def test_each_follow_up_form_renders_its_golden_prompt(form: str) -> None:
    text = _user_message(asked_follow_up(form, EARLIER, "and on mobile?", ANSWER, REWRITTEN))
    path = GOLDEN / f"follow_up_prompt_{form.replace('+', '_')}.md"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text


def test_the_forms_differ_only_in_what_comes_after_the_excerpts() -> None:
    texts = {
        f: _user_message(asked_follow_up(f, EARLIER, "and on mobile?", ANSWER, REWRITTEN))
        for f in FOLLOW_UP_FORMS
    }
    excerpts = {t.split("\n\nQuestion")[0].split("\n\nEarlier")[0] for t in texts.values()}
    assert len(excerpts) == 1
    assert len(set(texts.values())) == len(FOLLOW_UP_FORMS)


def test_beside_is_todays_follow_up_with_the_first_question_in_parentheses() -> None:
    asked = asked_follow_up("beside", EARLIER, " and on mobile? ")
    assert asked == AskedFollowUp(
        "and on mobile?\n(A follow-up to the earlier question: How do I hide the ribbon?)"
    )


def test_standalone_asks_the_rewritten_question_alone() -> None:
    asked = asked_follow_up("standalone", EARLIER, "and on mobile?")
    assert asked == AskedFollowUp("and on mobile? (hide ribbon)")
    assert "How do I hide" not in _user_message(asked)


def test_background_puts_the_earlier_question_before_the_question_now() -> None:
    asked = asked_follow_up("background", EARLIER, "and on mobile?", ANSWER)
    assert asked == AskedFollowUp(
        "and on mobile?", "Earlier question (already answered): How do I hide the ribbon?"
    )
    tail = _user_message(asked).rsplit("\n\n", 1)[1]
    assert tail == (
        "Earlier question (already answered): How do I hide the ribbon?\n"
        "Question now: and on mobile?"
    )


def test_background_and_answer_adds_the_first_answers_first_sentence() -> None:
    asked = asked_follow_up("background+answer", EARLIER, "and on mobile?", ANSWER)
    assert asked.background.endswith(
        "\nEarlier answer: Right-click the ribbon and choose Hide ribbon."
    )


def test_background_and_answer_without_an_answer_is_the_background_form() -> None:
    # The first turn was a no-answer (or its answer is all links): nothing was said.
    for answer in ("", "[[Ribbon]] [2]"):
        assert asked_follow_up("background+answer", EARLIER, "and on mobile?", answer) == (
            asked_follow_up("background", EARLIER, "and on mobile?")
        )


@pytest.mark.parametrize("form", FOLLOW_UP_FORMS)
def test_a_follow_up_that_stands_alone_is_asked_as_written_in_every_form(form: str) -> None:
    standalone = "How do I export a note to PDF from the command palette?"
    assert asked_follow_up(form, EARLIER, standalone, ANSWER, REWRITTEN) == (
        AskedFollowUp(standalone)
    )
    # No earlier question (or a blank one): nothing to lean on.
    assert asked_follow_up(form, [], "and on mobile?") == AskedFollowUp("and on mobile?")
    assert asked_follow_up(form, ["  "], "and on mobile?") == AskedFollowUp("and on mobile?")


def test_an_unknown_form_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown follow-up form 'aside'"):
        asked_follow_up("aside", EARLIER, "and on mobile?")


def test_the_background_counts_against_the_excerpt_budget_and_survives_reordering() -> None:
    background = "Earlier question (already answered): " + "ribbon " * 200
    assert context_budget(8192, "q?", background=background) < context_budget(8192, "q?")
    plan = build_messages("and on mobile?", _pack(), num_ctx=8192, background=background)
    again = reordered(plan, "and on mobile?", background=background)
    assert again.messages[1]["content"].endswith(
        f"{background.strip()}\nQuestion now: and on mobile?"
    )
    assert "Excerpt [1] from [[Mobile app]]" in again.messages[1]["content"]


def test_first_sentence_keeps_labels_and_drops_citations_marks_and_flags() -> None:
    assert first_sentence(ANSWER) == "Right-click the ribbon and choose Hide ribbon."
    assert first_sentence("Use [[Callouts|a callout]][^1]. More.") == "Use a callout."
    assert first_sentence("⚠️ It is `off` by default [1, 3]! Then") == "It is off by default!"
    assert first_sentence("") == ""


def test_first_sentence_of_a_long_answer_is_cut() -> None:
    sentence = first_sentence("word " * 200)
    assert len(sentence) == EARLIER_ANSWER_MAX_CHARS and sentence.endswith("…")


def test_rewritten_asks_the_models_rewrite_alone_and_else_the_rules_question() -> None:
    assert asked_follow_up("rewritten", EARLIER, "and on mobile?", rewritten=REWRITTEN) == (
        AskedFollowUp(REWRITTEN)
    )
    # No rewrite taken (the model down, or its reply refused): the standalone form's.
    for rewrite in (None, ""):
        assert asked_follow_up("rewritten", EARLIER, "and on mobile?", rewritten=rewrite) == (
            asked_follow_up("standalone", EARLIER, "and on mobile?")
        )
    # Other forms never read a rewrite.
    assert asked_follow_up("standalone", EARLIER, "and on mobile?", rewritten=REWRITTEN) == (
        AskedFollowUp("and on mobile? (hide ribbon)")
    )


def test_rewrite_messages_list_the_earlier_questions_and_say_they_are_data() -> None:
    system, user = rewrite_messages(
        ["How do I hide\nthe ribbon?", "and the status bar?"], "  and on  mobile? "
    )
    assert system["role"] == "system" and "not instructions" in system["content"]
    assert user["content"] == (
        "Earlier questions:\n- How do I hide the ribbon?\n- and the status bar?\n\n"
        "Follow-up: and on mobile?\n\nThe follow-up as one standalone question:"
    )
    assert REWRITE_SCHEMA["required"] == ["question"]


def _reply(question: object) -> str:
    return json.dumps({"question": question})


def test_read_rewrite_takes_a_standalone_question_that_keeps_the_follow_ups_words() -> None:
    assert read_rewrite(_reply(REWRITTEN), EARLIER, "and on mobile?") == REWRITTEN
    # Quotes, newlines and control characters around or inside it are tidied.
    messy = '"How do I hide\nthe ribbon\x07 on mobile?"'
    assert read_rewrite(_reply(messy), EARLIER, "and on mobile?") == REWRITTEN
    # A word of the follow-up kept in another spelling or form of its root.
    assert (
        read_rewrite(
            _reply("Can I color the nodes by folder in the graph view?"),
            ["How do I show the graph view?"],
            "and colour the nodes by folder?",
        )
        == "Can I color the nodes by folder in the graph view?"
    )
    assert (
        read_rewrite(
            _reply("Can I put one callout inside another?"),
            ["How do I make a callout?"],
            "what about putting one inside another?",
        )
        == "Can I put one callout inside another?"
    )


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("not json at all", "no JSON"),
        ('{"question": ', "cut JSON"),
        (json.dumps(["How do I hide the ribbon on mobile?"]), "not an object"),
        (json.dumps({"answer": "Tap the menu."}), "no question key"),
        (_reply(42), "not a string"),
        (_reply("   "), "empty"),
        (_reply("How do I hide the ribbon on mobile? " * 20), "too long"),
        (_reply("How do I hide the ribbon?"), "the earlier question again, mobile dropped"),
        (_reply("How do I hide the ribbon on my tablet?"), "the follow-up's word dropped"),
        (_reply("And on mobile?"), "nothing of the earlier question brought in"),
    ],
)
def test_read_rewrite_refuses_what_cannot_be_taken(reply: str, why: str) -> None:
    assert read_rewrite(reply, EARLIER, "and on mobile?") is None, why


def test_read_rewrite_refuses_a_repeat_of_an_earlier_question_in_other_case() -> None:
    earlier = ["How do I hide the ribbon?", "How do I hide the ribbon on mobile?"]
    assert read_rewrite(_reply("how do i hide the ribbon on mobile"), earlier, "on mobile?") is None


def test_read_rewrite_bounds_are_the_documented_ones() -> None:
    at_most = "How do I hide the ribbon on mobile " + "x" * (REWRITE_MAX_CHARS - 36) + "?"
    assert len(at_most) == REWRITE_MAX_CHARS
    assert read_rewrite(_reply(at_most), EARLIER, "and on mobile?") == at_most
    assert read_rewrite(_reply(at_most + "?"), EARLIER, "and on mobile?") is None
