"""Refusals as small models write them, in their paraphrases and in other languages."""

from __future__ import annotations

import pytest

from askvault.core.abstention import is_no_answer, is_refusal
from askvault.core.prompt import NO_ANSWER_SENTENCE

REFUSALS = [
    NO_ANSWER_SENTENCE,
    "The notes provided do not contain the answer to this question.",
    "  the excerpts do not contain an answer.",
    "The wifi password is not mentioned in the provided excerpts.",
    "I couldn't find any information about your dentist appointment in the notes.",
    "There is no information about Jupiter's moons in the excerpts.",
    "The excerpts don't say how much Sync costs in euros.",
    "I don't know, the notes do not cover this.",
    "Die Notizen enthalten keine Antwort auf diese Frage.",
    "Les notes ne contiennent pas la réponse.",
    "Las notas no contienen la respuesta.",
    "As notas não contêm a resposta.",
    "Gli appunti non contengono la risposta.",
    "De notities bevatten geen antwoord.",
    "笔记中没有提到这个问题的答案。",
]
ANSWERS = [
    "The notes contain the answer: embeds show a note inline [[Embeds]].",
    "Nested properties are not supported; use source mode to edit them.",
    "Obsidian does not sync your .git folder because hidden folders are skipped.",
    "Fine-grained permissions are not supported yet, every member can edit.",
]


@pytest.mark.parametrize("sentence", REFUSALS)
def test_refusals_are_recognised(sentence: str) -> None:
    assert is_refusal(sentence) and is_no_answer(sentence)


@pytest.mark.parametrize("sentence", ANSWERS)
def test_answers_with_a_negation_are_not_refusals(sentence: str) -> None:
    assert not is_no_answer(sentence)


def test_a_reply_with_an_answer_beside_a_refusal_is_not_a_no_answer() -> None:
    assert not is_no_answer("Embeds show a note inline. The notes do not contain the answer to X.")


def test_an_empty_reply_is_not_a_refusal() -> None:
    assert not is_no_answer("")
