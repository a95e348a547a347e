"""core/decision.py: every reason a checked reply is or is not published, in order."""

from __future__ import annotations

from askvault.core.citations import CitationReport, ClaimCheck
from askvault.core.decision import decide, off_thread

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
        cutoff=0.31,
        cutoff_from="measured for nomic-embed-text (`queries.max_distance` sets another)",
    )
    assert measured.decided_by == "too-far"
    assert (
        "cosine distance 0.41, beyond the 0.31 measured for nomic-embed-text "
        "(`queries.max_distance` sets another), so the reply is not published" in measured.reason
    )


# -- the claim that answers ------------------------------------------------------------------

UNSUPPORTED = ClaimCheck("The plus sign embeds a whole vault.", "unsupported", 0.2)
ECHO = ClaimCheck("Yes, there is a student discount on Sync.", "weak", 0.4, echo=True)
BACKED = ClaimCheck("Students get 40% off Sync.", "supported", 1.0)


def test_a_reply_whose_answering_claim_is_not_backed_is_a_no_answer_naming_it() -> None:
    """The first claim answers ("100 GB"), a later one only adds to it: the later one being
    backed does not make the answer right."""
    lead = ClaimCheck("The storage limit for one Publish site is 100 GB.", "unsupported", 0.3)
    report = CitationReport(
        claims=(lead, ClaimCheck("This includes version history.", "supported", 1.0))
    )
    decision = decide("The storage limit for one Publish site is 100 GB. This ...", report)
    assert (decision.status, decision.decided_by) == ("no-answer", "answer-unsupported")
    assert "“The storage limit for one Publish site is 100 GB.”" in decision.reason
    assert not decision.keeps_links


def test_a_restating_yes_is_passed_over_and_the_claim_after_it_answers() -> None:
    report = CitationReport(claims=(ECHO, BACKED))
    assert report.lead is BACKED
    assert decide("Yes, ... Students get 40% off Sync.", report).decided_by == "supported"
    unsupported_after = CitationReport(claims=(ECHO, UNSUPPORTED, BACKED))
    assert decide("Yes, ...", unsupported_after).decided_by == "answer-unsupported"


def test_a_weak_answering_claim_is_published_with_its_marker() -> None:
    """Its words partly found (a paraphrase of the note: "the built-in web browser blocks
    ads" for "Web viewer blocks ads"): read blind, such leads were right more often than
    wrong, so only an unsupported one withholds the reply."""
    report = CitationReport(claims=(WEAK, SUPPORTED))
    assert decide("x", report).decided_by == "supported"


def test_a_reply_that_only_says_the_question_again_is_a_no_answer() -> None:
    echo_backed = ClaimCheck("Search only in file names.", "supported", 1.0, echo=True)
    report = CitationReport(claims=(echo_backed,))
    assert report.lead is None
    decision = decide("Yes, search only in file names.", report)
    assert (decision.status, decision.decided_by) == ("no-answer", "answer-unsupported")
    assert "only says the question again" in decision.reason


def test_the_more_telling_reasons_come_before_the_answering_claim() -> None:
    """Far from every note, or about a subject no note mentions: those say more to the user
    than "the first claim is not backed", so they decide first."""
    report = CitationReport(claims=(UNSUPPORTED, SUPPORTED))
    assert decide("x", report, nearest_distance=0.9, cutoff=0.5).decided_by == "too-far"
    assert decide("x", report, unknown_subjects=("Excalidraw",)).decided_by == "unknown-subject"
    assert decide("x", report).decided_by == "answer-unsupported"


def test_the_distance_withholds_nothing_while_most_chunks_have_no_vector() -> None:
    report = CitationReport(claims=(SUPPORTED,))
    far = {"nearest_distance": 0.9, "cutoff": 0.5}
    assert decide("x", report, **far, vector_share=0.2).decided_by == "supported"
    assert decide("x", report, **far, vector_share=0.95).decided_by == "too-far"
    assert decide("x", report, **far).decided_by == "too-far"


def test_a_reply_that_begins_with_an_excerpts_number_is_a_pasted_excerpt() -> None:
    """The 1.5B model pastes a passage ("[3] You can open hidden sidebars ...") rather than
    answering; its words are the note's, so the claims are supported."""
    report = CitationReport(claims=(SUPPORTED,))
    for reply in (
        "[3] Embeds use an exclamation mark.",
        "  [1, 2] Embeds use an exclamation mark.",
        "[1] [4] Embeds use an exclamation mark.",
        'Excerpt [1] from [[Embed files]]: "Embeds use an exclamation mark."',
        "the excerpt [2] from [[Embed files]] says embeds use an exclamation mark.",
    ):
        decision = decide(reply, report)
        assert (decision.status, decision.decided_by) == ("no-answer", "pasted-excerpt"), reply
        assert "begins with an excerpt's number" in decision.reason
        assert not decision.keeps_links


def test_words_of_its_own_before_a_number_are_an_answer() -> None:
    report = CitationReport(claims=(SUPPORTED,))
    for reply in (
        "Embeds use an exclamation mark [3].",
        "The excerpt [1] states that embeds use an exclamation mark.",  # reported, not pasted
        "In [[Embed files]], embeds use an exclamation mark.",
        "[[Embed files]] Embeds use an exclamation mark.",  # a link, not the prompt's number
    ):
        assert decide(reply, report).decided_by == "supported", reply


def test_a_pasted_excerpt_comes_after_the_reasons_that_say_more() -> None:
    report = CitationReport(claims=(SUPPORTED,))
    assert decide("[3] I don't know.", report).decided_by == "refusal"
    assert decide("[3] Embeds ...", NONE_SUPPORTED).decided_by == "nothing-supported"
    assert decide("[3] x", report, unknown_subjects=("Kanban",)).decided_by == "unknown-subject"


def test_a_reply_most_of_whose_claims_are_not_backed_is_a_no_answer_saying_how_many() -> None:
    """Its lead found in the notes, but most of what it says is not: "To export a note to
    PDF, use the Exporter tool [backed]. It exports to PDF [not]. ...". Fewer than half of
    the claims supported withholds; half or more publishes."""
    report = CitationReport(claims=(SUPPORTED, WEAK, UNSUPPORTED))
    decision = decide("x", report)
    assert (decision.status, decision.decided_by) == ("no-answer", "mostly-unsupported")
    assert "only 1 of its 3 sentences" in decision.reason
    assert not decision.keeps_links
    half = CitationReport(claims=(SUPPORTED, WEAK))
    assert decide("x", half).decided_by == "supported"
    two_of_four = CitationReport(claims=(SUPPORTED, WEAK, SUPPORTED, UNSUPPORTED))
    assert decide("x", two_of_four).decided_by == "supported"
    two_of_five = CitationReport(claims=(SUPPORTED, WEAK, SUPPORTED, UNSUPPORTED, WEAK))
    two_backed = decide("x", two_of_five)
    assert two_backed.decided_by == "mostly-unsupported"
    assert "only 2 of its 5 sentences are" in two_backed.reason


def test_an_unsupported_lead_is_told_before_the_share_of_claims() -> None:
    """The sentence that answers, named, says more than a count."""
    report = CitationReport(claims=(UNSUPPORTED, SUPPORTED, WEAK))
    assert decide("x", report).decided_by == "answer-unsupported"


QUICK = "Plugins/Quick switcher.md"
ANDROID = "Obsidian/Obsidian for Android.md"


def test_a_follow_up_linking_only_to_pages_off_the_thread_is_withheld_naming_them() -> None:
    decision = off_thread([ANDROID, "Sync/Widgets [x].md"], [QUICK, "Plugins/Search.md"])
    assert decision is not None
    assert (decision.status, decision.decided_by) == ("no-answer", "off-thread")
    assert "“Obsidian for Android”, “Widgets [x]”" in decision.reason
    assert "new question" in decision.reason
    assert not decision.keeps_links  # withheld for a reason its claims do not show


def test_two_off_thread_pages_of_one_name_are_told_apart_by_their_folders() -> None:
    decision = off_thread(["Sync/Settings.md", "Publish/Settings.md", ANDROID], [QUICK])
    assert decision is not None
    assert "(“Sync/Settings”, “Publish/Settings”, “Obsidian for Android”)" in decision.reason


def test_one_page_on_the_thread_is_enough_whatever_its_place_among_the_links() -> None:
    assert off_thread([ANDROID, QUICK], ["Plugins/Search.md", QUICK]) is None


def test_the_thread_rule_needs_pages_on_both_sides() -> None:
    """Nothing cited (other reasons decide) or no thread pages known (an earlier search
    found nothing, a first question): the rule does not apply."""
    assert off_thread([], [QUICK]) is None
    assert off_thread([ANDROID], []) is None
