"""Support of one sentence by one text: content words, numbers and names (core/support.py)."""

from __future__ import annotations

from askvault.core.support import (
    content_tokens,
    is_claim,
    judge,
    prepare_evidence,
    simple_tokens,
)

NOTE = ("By default, snapshots are saved a minimum of 5 minutes from each other, and kept "
        "for 7 days. Obsidian Sync stores remote vaults in Frankfurt when you pick Europe.")


def _judge(sentence: str, text: str = NOTE, question: str = "") -> tuple[str, float]:
    (content,) = content_tokens([sentence], simple_tokens, given=question)
    (evidence,) = prepare_evidence([text], simple_tokens)
    support = judge(sentence, content, evidence)
    return support.verdict, support.coverage


def test_a_paraphrase_with_the_same_facts_is_supported() -> None:
    assert _judge("Snapshots are saved every 5 minutes and kept for 7 days.")[0] == "supported"


def test_a_wrong_number_is_unsupported_whatever_the_words() -> None:
    assert _judge("Snapshots are saved a minimum of 5 minutes apart and kept for 30 days.")[0] \
        == "unsupported"


def test_a_missing_name_caps_the_verdict_at_weak() -> None:
    assert _judge("Obsidian Sync stores remote vaults in Paris when you pick Europe.")[0] == "weak"
    assert _judge("Obsidian Sync stores remote vaults in Frankfurt when you pick Europe.")[0] \
        == "supported"


def test_unrelated_sentence_is_unsupported() -> None:
    assert _judge("The Wi-Fi password of my home network is written on the router.")[0] \
        == "unsupported"


def test_words_of_the_question_claim_nothing_what_the_answer_adds_must_be_found() -> None:
    question = "how long are file recovery snapshots kept"
    assert _judge("File recovery snapshots are kept for 7 days.", question=question)[0] \
        == "supported"
    assert _judge("File recovery snapshots are kept in a cloud bucket.", question=question)[0] \
        == "unsupported"


def test_an_answer_that_only_echoes_the_question_is_judged_on_all_its_words() -> None:
    (content,) = content_tokens(["Snapshots are saved."], simple_tokens,
                                given="are snapshots saved")
    assert content == ["snapshots", "saved"]


def test_stopwords_and_words_about_the_notes_are_not_content() -> None:
    (content,) = content_tokens(["According to the notes, it is mentioned that snapshots are "
                                 "kept."], simple_tokens)
    assert content == ["snapshots", "kept"]


def test_fragments_without_content_are_not_claims() -> None:
    assert not is_claim("and", [])
    assert not is_claim("For example:", ["example"])
    assert is_claim("kept 7 days", ["kept"])


def test_stemming_is_the_tokenizer_s() -> None:
    def stemmer(texts: list[str]) -> list[list[str]]:
        return [[w.removesuffix("s").removesuffix("ed") for w in ws] for ws in simple_tokens(texts)]

    (content,) = content_tokens(["Snapshot saving keeps notes"], stemmer)
    (evidence,) = prepare_evidence(["snapshots saving keep notes"], stemmer)
    assert judge("Snapshot saving keeps notes", content, evidence).verdict == "supported"


def test_the_same_words_with_the_opposite_polarity_are_only_weak() -> None:
    note = "If you forget your encryption password, you cannot recover your remote vault."
    verdict, _ = _judge("You can recover your remote vault if you forget the encryption password.",
                        note)
    assert verdict == "weak"
    assert _judge("You cannot recover your remote vault if you forget the encryption password.",
                  note)[0] == "supported"


def test_a_sentence_that_only_echoes_the_question_is_judged_strictly_on_all_its_words() -> None:
    from askvault.core.support import claim_contents

    ((content, echo),) = claim_contents(["The wifi password is stored in the excerpt."],
                                        simple_tokens, given="what is my wifi password")
    assert echo and content == ["wifi", "password", "stored"]
    (evidence,) = prepare_evidence(["The site password is stored in your browser."],
                                   simple_tokens)
    assert judge("The wifi password is stored.", content, evidence, lenient=False).verdict \
        == "weak"
    assert judge("The wifi password is stored.", content, evidence).verdict == "supported"
