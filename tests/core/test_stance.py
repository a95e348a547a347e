"""A yes/no reply against what the notes say about the question (core/stance.py), and how
the citation check and the decision use it."""

from __future__ import annotations

import pytest

from askvault.core.citations import Excerpt, annotate_answer, check_citations
from askvault.core.decision import decide
from askvault.core.links import build_link_index
from askvault.core.notes import parse_note
from askvault.core.stance import asks_yes_or_no, note_stance, reply_says_yes
from askvault.core.support import content_tokens, prepare_evidence, simple_tokens

NOTES = {
    "Sync.md": (
        "# Sync\n\n## Password\n\nYou can set an end-to-end encryption password for a remote "
        "vault. Individual password protection of single notes is currently not supported.\n"
    ),
    "Properties.md": (
        "# Properties\n\n## Types\n\nObsidian doesn't support nested properties. "
        "A property holds text, a number, a date or a list.\n"
    ),
    "Tags.md": (
        "# Tags\n\nTags can contain letters and numbers. Tags are case-insensitive, "
        "and you can use nested tags with a slash.\n\nSome languages don't use spaces to "
        "separate words, so a tag may look long.\n"
    ),
}


def _excerpts() -> list[Excerpt]:
    out = []
    for path, text in NOTES.items():
        note = parse_note(path, text)
        out.append(Excerpt(path, note.title, None, note.body, f"[[{note.title}]]"))
    return out


def _check(answer: str, question: str):  # type: ignore[no-untyped-def]
    index = build_link_index((p, parse_note(p, t).aliases) for p, t in NOTES.items())
    notes = {p: parse_note(p, t) for p, t in NOTES.items()}
    return check_citations(answer, index, notes, set(), excerpts=_excerpts(), question=question)


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("Can I password-protect a single note?", True),
        ("my tag has two words, can i use a space in it", True),
        ("Is there a way to nest properties?", True),
        ("Kann ich eine Notiz mit einem Passwort schützen?", True),
        ("How do I set a sync password?", False),
        ("What types can a property hold?", False),
        ("", False),
    ],
)
def test_which_questions_ask_yes_or_no(question: str, asks: bool) -> None:
    assert asks_yes_or_no(question) is asks


@pytest.mark.parametrize(
    ("sentence", "says"),
    [
        ("Yes, you can protect a note.", True),
        ("**Yes** - with a plugin.", True),
        ("No, Obsidian cannot do that.", False),
        ("Nope.", False),
        ("Non, ce n'est pas possible.", False),
        ("No-code tools are different.", None),  # "No-" is not an answer
        ("Nothing in the notes.", None),
        ("You can set a password.", None),
    ],
)
def test_which_reply_sentences_say_yes_or_no(sentence: str, says: bool | None) -> None:
    assert reply_says_yes(sentence) is says


def _stance(question: str):  # type: ignore[no-untyped-def]
    evidence = prepare_evidence([e.text for e in _excerpts()], simple_tokens)
    (words,) = content_tokens([question], simple_tokens)
    return note_stance(words, evidence)


def test_the_notes_stance_is_the_sentence_sharing_most_of_the_question() -> None:
    stance = _stance("Can I set password protection for individual notes?")
    assert stance is not None
    assert "Individual password protection" in stance.sentence
    assert not stance.says_yes and stance.refuses


def test_a_not_that_bears_on_other_words_is_no_refusal() -> None:
    # "don't use spaces to separate words": a negation, but not a statement that
    # something is impossible.
    stance = _stance("Can tags use spaces to separate words?")
    assert stance is not None and "separate words" in stance.sentence
    assert not stance.refuses


def test_a_question_the_notes_share_too_few_words_with_has_no_stance() -> None:
    assert _stance("Can I print a canvas?") is None


def test_a_yes_that_the_notes_refuse_in_so_many_words_is_flagged_and_withheld() -> None:
    question = "Can I set password protection for individual notes?"
    answer = "Yes, you can set password protection for individual notes [[Sync]]."
    report = _check(answer, question)
    assert report.reversed_by is not None and "not supported" in report.reversed_by
    (claim,) = report.claims
    assert claim.flagged and claim.reason == "the excerpt says the opposite"
    assert annotate_answer(answer, report).startswith("⚠️ Yes")
    decision = decide(answer, report, nearest_distance=0.1, cutoff=0.9)
    assert decision.status == "no-answer" and decision.decided_by == "reversed"
    assert "not supported" in decision.reason


def test_a_no_that_agrees_with_the_notes_is_backed_by_their_sentence() -> None:
    # Its words differ from the note's ("cannot have" / "doesn't support"), and the
    # stance says the same thing: the note's sentence backs it and is its quote.
    question = "Can I nest properties in Obsidian?"
    answer = "No, you cannot nest properties in Obsidian."
    report = _check(answer, question)
    assert report.reversed_by is None
    first = report.claims[0]
    assert first.verdict == "supported"
    assert first.quote == "Obsidian doesn't support nested properties."
    assert first.added == "Properties"


def test_a_no_against_a_note_that_says_yes_is_not_promoted() -> None:
    question = "Are tags case-insensitive?"
    answer = "No, tags are never case-insensitive."
    report = _check(answer, question)
    assert report.reversed_by is None  # only a yes against a plain refusal is reversed
    assert report.claims[0].quote != "Tags are case-insensitive, and you can use nested tags."


def test_a_question_that_is_not_yes_or_no_is_judged_as_before() -> None:
    answer = "Yes, you can set an end-to-end encryption password for a remote vault."
    with_question = _check(answer, "How do I set a sync password?")
    without = _check(answer, "")
    assert with_question.claims == without.claims
    assert with_question.reversed_by is None


def test_only_the_first_claim_carries_the_yes_or_no() -> None:
    question = "Can I set password protection for individual notes?"
    answer = (
        "You can set an end-to-end encryption password for a remote vault. "
        "Yes, you can set password protection for individual notes."
    )
    report = _check(answer, question)
    assert report.reversed_by is None


def test_a_yes_is_never_backed_by_a_sentence_that_only_shares_the_questions_words() -> None:
    # "Tags are case-insensitive" shares the words and has no negation; it is no proof of
    # every "yes" (a yes about a canvas export or a calendar was published that way).
    question = "Are tags case-insensitive in every language?"
    answer = "Yes, tags are case-insensitive in every language."
    report = _check(answer, question)
    assert report.claims[0].verdict != "supported"


@pytest.mark.parametrize(
    "sentence",
    [
        "Obsidian does not yet support nested properties in the editor.",
        "Obsidian doesn't currently support nested properties in the editor.",
        "Obsidian doesn’t support nested properties in the editor.",
    ],
)
def test_a_not_yet_or_not_currently_support_is_a_refusal(sentence: str) -> None:
    evidence = prepare_evidence([sentence], simple_tokens)
    (words,) = content_tokens(["Can I use nested properties in the editor?"], simple_tokens)
    stance = note_stance(words, evidence)
    assert stance is not None and stance.refuses and not stance.says_yes


def test_a_refusal_speaks_for_the_notes_over_a_sentence_sharing_more_words() -> None:
    # The first sentence shares more of the question, but the page refuses what is asked
    # in the second: "can I password protect only one page ... and leave the rest public"
    # was answered "Yes" from a site-password sentence.
    question = "Can I set an end-to-end encryption password as individual protection of a vault?"
    stance = _stance(question)
    assert stance is not None and stance.refuses
    assert "Individual password protection" in stance.sentence


def test_a_refusal_that_shares_three_words_of_a_long_question_speaks_for_the_notes() -> None:
    # Three of many question words: under the share a sentence needs, but a sentence that
    # refuses in so many words does not need the share.
    question = (
        "my writing group reads my drafts, can i put password protection on just single "
        "notes and leave everything else open to the group?"
    )
    stance = _stance(question)
    assert stance is not None and stance.refuses and len(stance.shared) == 3


def test_a_refusal_sharing_two_words_of_a_long_question_does_not() -> None:
    question = (
        "my writing group reads my drafts, can i add password protection for the whole "
        "group and leave everything else open to visitors?"
    )
    stance = _stance(question)
    assert stance is None or not stance.refuses
