"""core/decision.py: every reason a checked reply is or is not published, in order."""

from __future__ import annotations

from askvault.core.citations import CitationReport, ClaimCheck
from askvault.core.decision import decide

SUPPORTED = ClaimCheck("Embeds use an exclamation mark.", "supported", 0.9)
WEAK = ClaimCheck("Embeds use a plus sign.", "weak", 0.5)
ONE_SUPPORTED = CitationReport(claims=(SUPPORTED, WEAK))
NONE_SUPPORTED = CitationReport(claims=(WEAK,))


def test_a_reply_with_a_supported_claim_is_published() -> None:
    decision = decide("Embeds use an exclamation mark. [[Embed files]]", ONE_SUPPORTED)
    assert (decision.status, decision.decided_by, decision.reason) == (
        "answered",
        "supported",
        "",
    )
    assert decision.published and decision.keeps_links


def test_a_reply_none_of_whose_claims_is_supported_is_a_no_answer_that_keeps_its_links() -> None:
    decision = decide("Embeds use a plus sign.", NONE_SUPPORTED)
    assert (decision.status, decision.decided_by) == ("no-answer", "nothing-supported")
    assert decision.keeps_links and not decision.reason


def test_a_refusal_is_a_no_answer_whatever_the_report_says() -> None:
    refusal = "The notes do not contain the answer."
    assert decide(refusal, ONE_SUPPORTED).decided_by == "refusal"
    assert decide(refusal, CitationReport(error="boom")).decided_by == "refusal"


def test_an_unchecked_reply_is_published_on_the_models_word() -> None:
    decision = decide("Embeds use an exclamation mark.", CitationReport(error="ValueError: x"))
    assert (decision.status, decision.decided_by) == ("answered", "unchecked")


def test_a_question_far_from_every_note_withholds_even_a_supported_reply() -> None:
    decision = decide(
        "Embeds use an exclamation mark.", ONE_SUPPORTED, nearest_distance=0.7, cutoff=0.58
    )
    assert (decision.status, decision.decided_by) == ("no-answer", "too-far")
    assert "0.70" in decision.reason and "0.58" in decision.reason
    assert not decision.keeps_links


def test_the_distance_gate_needs_both_a_distance_and_a_cutoff() -> None:
    assert decide("x y z.", ONE_SUPPORTED, nearest_distance=0.9).published
    assert decide("x y z.", ONE_SUPPORTED, cutoff=0.1).published
    assert decide("x y z.", ONE_SUPPORTED, nearest_distance=0.5, cutoff=0.58).published


def test_a_reply_about_what_no_note_mentions_is_withheld_naming_it() -> None:
    decision = decide("Excalidraw lets you draw.", ONE_SUPPORTED, unknown_subjects=("Excalidraw",))
    assert (decision.status, decision.decided_by) == ("no-answer", "unknown-subject")
    assert "“Excalidraw”" in decision.reason and not decision.keeps_links


def test_the_distance_gate_is_asked_before_the_subjects() -> None:
    decision = decide(
        "Excalidraw lets you draw.",
        ONE_SUPPORTED,
        nearest_distance=0.9,
        cutoff=0.58,
        unknown_subjects=("Excalidraw",),
    )
    assert decision.decided_by == "too-far"


def test_a_supported_reply_judged_wrong_for_the_question_is_withheld_saying_why() -> None:
    decision = decide("Embeds use an exclamation mark.", ONE_SUPPORTED, judged="no")
    assert (decision.status, decision.decided_by) == ("no-answer", "judged-wrong")
    assert "do not answer the question as asked" in decision.reason
    assert not decision.keeps_links


def test_a_verdict_of_yes_or_none_leaves_the_lexical_decision() -> None:
    assert decide("Embeds use an exclamation mark.", ONE_SUPPORTED, judged="yes").published
    assert decide("Embeds use an exclamation mark.", ONE_SUPPORTED, judged=None).published
    assert not decide("Embeds use a plus sign.", NONE_SUPPORTED, judged="yes").published


REVERSED = CitationReport(
    claims=(SUPPORTED,),
    reversed_by="Password protection of single notes is currently not supported.",
)


def test_a_yes_the_notes_refuse_is_withheld_quoting_the_notes_sentence() -> None:
    decision = decide("Yes, you can protect a note.", REVERSED)
    assert (decision.status, decision.decided_by) == ("no-answer", "reversed")
    assert "“Password protection of single notes is currently not supported.”" in decision.reason
    assert not decision.keeps_links


def test_a_refusal_comes_before_a_reversal_and_a_reversal_before_the_distance_gate() -> None:
    assert decide("The notes do not say.", REVERSED).decided_by == "refusal"
    assert decide("Yes.", REVERSED, nearest_distance=0.9, cutoff=0.58).decided_by == "reversed"


def test_a_reversing_sentence_is_quoted_inert_and_bounded() -> None:
    hostile = CitationReport(claims=(SUPPORTED,), reversed_by="![x](http://h/p.png) " + "w " * 300)
    reason = decide("Yes.", hostile).reason
    assert "http://h/p.png" not in reason and "![" not in reason
    assert len(reason) < 400


def test_an_answer_the_model_gives_from_other_sentences_when_asked_again_is_withheld() -> None:
    decision = decide("Embeds use an exclamation mark.", ONE_SUPPORTED, steady=False)
    assert (decision.status, decision.decided_by) == ("no-answer", "unsteady")
    assert "in another order" in decision.reason and not decision.keeps_links
    assert decide("Embeds use an exclamation mark.", ONE_SUPPORTED, steady=True).published
    assert decide("Embeds use an exclamation mark.", ONE_SUPPORTED, steady=None).published
    # A judge's "no" is asked first, a reply nothing supports before either.
    assert decide("x", ONE_SUPPORTED, judged="no", steady=False).decided_by == "judged-wrong"
    assert decide("x", NONE_SUPPORTED, steady=False).decided_by == "nothing-supported"


def test_a_question_far_from_every_note_is_told_where_the_cut_off_comes_from() -> None:
    default = decide("x y z.", ONE_SUPPORTED, nearest_distance=0.7, cutoff=0.58)
    assert "beyond the 0.58 of `queries.max_distance`, so" in default.reason
    measured = decide(
        "x y z.",
        ONE_SUPPORTED,
        nearest_distance=0.41,
        cutoff=0.35,
        cutoff_from="measured for nomic-embed-text (`queries.max_distance` sets another)",
    )
    assert measured.decided_by == "too-far"
    assert (
        "cosine distance 0.41, beyond the 0.35 measured for nomic-embed-text "
        "(`queries.max_distance` sets another), so the reply is not published" in measured.reason
    )
