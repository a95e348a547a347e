"""Citation checking: extraction per DESIGN §4, resolution, headings/blocks, pending, support."""

from __future__ import annotations

from askvault.core.citations import (
    CitationReport,
    Excerpt,
    annotate_answer,
    check_citations,
    check_support,
    link_spans,
    quote_notes,
    quote_text,
    render_broken_as_text,
    slug,
)
from askvault.core.links import build_link_index
from askvault.core.notes import parse_note

NOTES = {
    "Embeds.md": (
        "---\naliases: [Transclusion]\n---\n# Embeds\n\nAn embed shows another note inline "
        "inside the current note.\n\n## Block references\n\nLink a block with a caret id. "
        "^block-1\n"
    ),
    "folder/Deep Note.md": (
        "# Deep Note\n\n## Section one\n\nThe first section talks about sourdough bread.\n\n"
        "## Section two\n\nThe second section explains fermentation of rye.\n"
    ),
    "archive/Deep Note.md": "# Another deep note\n\nA longer path loses the tie.\n",
}


def _check(answer: str, pending: set[str] | None = None) -> CitationReport:
    index = build_link_index((path, parse_note(path, text).aliases) for path, text in NOTES.items())
    notes = {path: parse_note(path, text) for path, text in NOTES.items()}
    return check_citations(answer, index, notes, pending or set())


def test_plain_link_resolves_and_is_supported_by_verbatim_text() -> None:
    report = _check("An embed shows another note inline inside the current note [[Embeds]].")
    (c,) = report.citations
    assert (c.target, c.state, c.path, c.heading) == ("Embeds", "resolved", "Embeds.md", None)
    assert c.support == "supported"
    assert c.supports[0].sentence == "An embed shows another note inline inside the current note"
    assert c.supports[0].span == "An embed shows another note inline inside the current note."


def test_alias_resolves_to_its_note() -> None:
    (c,) = _check("Transclusion is an embed [[Transclusion]].").citations
    assert (c.state, c.path) == ("resolved", "Embeds.md")


def test_label_reports_the_target_not_the_label() -> None:
    (c,) = _check("See [[Embeds|the embeds page]].").citations
    assert c.target == "Embeds" and c.link.label == "the embeds page"


def test_heading_is_verified_and_named() -> None:
    report = _check("Rye ferments [[Deep Note#Section two]]. Nope [[Deep Note#Section nine]].")
    ok, bad = report.citations
    assert (ok.state, ok.path, ok.heading) == ("resolved", "folder/Deep Note.md", "Section two")
    assert bad.state == "broken" and "no heading 'Section nine'" in bad.reason


def test_support_is_checked_against_the_cited_section() -> None:
    (c,) = _check(
        "The first section talks about sourdough bread [[Deep Note#Section two]]."
    ).citations
    assert c.support == "unsupported"
    (c,) = _check(
        "The first section talks about sourdough bread [[Deep Note#Section one]]."
    ).citations
    assert c.support == "supported"


def test_block_is_verified() -> None:
    ok, bad = _check("Blocks [[Embeds#^block-1]] and [[Embeds#^nope]].").citations
    assert ok.state == "resolved" and ok.link.block == "block-1"
    assert bad.state == "broken" and "no block ^nope" in bad.reason


def test_missing_note_is_broken_and_rendered_as_plain_text() -> None:
    answer = (
        "Made up [[Nowhere]] and [[Nowhere|a label]]. An embed shows another note inline "
        "[[Embeds]]."
    )
    report = _check(answer)
    assert [c.state for c in report.citations] == ["broken", "resolved"]
    assert render_broken_as_text(answer, report) == (
        "Made up Nowhere and a label. An embed shows another note inline [[Embeds]]."
    )


def test_a_resolved_link_that_backs_nothing_it_cites_is_shown_as_plain_text() -> None:
    answer = "Rye ferments quickly in warm kitchens [[Embeds]]."
    report = _check(answer)
    (citation,) = report.citations
    assert citation.state == "resolved" and citation.support == "unsupported"
    assert not citation.published
    assert render_broken_as_text(answer, report) == "Rye ferments quickly in warm kitchens."


def test_pending_when_a_review_candidate_has_the_slug() -> None:
    (c,) = _check(
        "Asked before [[How do embeds work?]].", pending={slug("How do embeds work.md")}
    ).citations
    assert c.state == "pending"
    assert "[[How do embeds work?]]" in render_broken_as_text(
        "[[How do embeds work?]]", CitationReport((c,))
    )


def test_code_spans_fences_escapes_and_markdown_link_text_are_not_citations() -> None:
    answer = (
        "Inline `[[Embeds]]` and escaped \\[[Embeds]] and [a [[Embeds]] link](http://x).\n"
        "```\n[[Embeds]]\n```\n"
    )
    report = _check(answer)
    assert report.citations == ()
    assert link_spans(answer) == []


def test_each_link_reported_once_in_first_occurrence_order() -> None:
    report = _check("B [[Deep Note]]. A [[Embeds]]. B again [[deep note]]. [[Embeds|x]].")
    assert [c.target for c in report.citations] == ["Deep Note", "Embeds"]


def test_ties_go_to_the_shortest_path() -> None:
    (c,) = _check("Deep [[Deep Note]].").citations
    assert c.path == "folder/Deep Note.md"
    (c,) = _check("Deep [[archive/Deep Note]].").citations
    assert c.path == "archive/Deep Note.md"


def test_unreadable_note_is_broken() -> None:
    index = build_link_index([("Gone.md", ())])
    (c,) = check_citations("Fact [[Gone]].", index, {}, set()).citations
    assert c.state == "broken" and "could not be read" in c.reason


def test_same_note_link_in_an_answer_is_broken() -> None:
    (c,) = _check("See [[#Heading]].").citations
    assert c.state == "broken"


def test_citation_after_the_full_stop_cites_the_sentence_before() -> None:
    (c,) = _check(
        "An embed shows another note inline inside the current note. [[Embeds]]"
    ).citations
    assert c.support == "supported"


def test_support_verdicts_supported_weak_unsupported() -> None:
    note = "Sourdough bread needs a starter made of flour and water, fed daily for a week."
    assert (
        check_support("Sourdough bread needs a starter made of flour and water.", note).verdict
        == "supported"
    )
    weak = check_support("Bakers say the starter made of flour is fussy in winter months.", note)
    assert weak.verdict == "weak" and weak.span and "starter made of flour" in weak.span
    unsupported = check_support("Rye ferments quickly in warm kitchens.", note)
    assert unsupported.verdict == "unsupported" and unsupported.span is None


def test_support_of_an_empty_sentence_is_unsupported() -> None:
    assert check_support("", "text").verdict == "unsupported"
    assert check_support("Some words here.", "").verdict == "unsupported"


def test_slug_ignores_case_punctuation_and_extension() -> None:
    assert slug("queries/answers/How do Embeds work?.md") == slug("how do embeds work")


def test_a_mid_sentence_citation_covers_only_its_own_clause() -> None:
    report = _check(
        "An embed shows another note inline inside the current note [[Embeds]], "
        "and rye ferments [[Deep Note#Section two]]."
    )
    embeds, deep = report.citations
    assert (
        embeds.supports[0].sentence == "An embed shows another note inline inside the current note"
    )
    assert deep.supports[0].sentence == "and rye ferments"


def _excerpt(path: str, heading: str | None = None) -> Excerpt:
    note = parse_note(path, NOTES[path])
    text = note.body
    if heading:
        line = next(h.line for h in note.headings if h.text == heading)
        from askvault.core.citations import section_text

        text = section_text(note, line)
    cite = f"[[{note.title}#{heading}]]" if heading else f"[[{note.title}]]"
    return Excerpt(path, note.title, heading, text, cite)


def _check_with(answer: str, excerpts: list[Excerpt]) -> CitationReport:
    index = build_link_index((path, parse_note(path, text).aliases) for path, text in NOTES.items())
    notes = {path: parse_note(path, text) for path, text in NOTES.items()}
    return check_citations(answer, index, notes, set(), excerpts=excerpts)


def test_the_issue_reproduction_credits_each_sentence_to_its_own_link() -> None:
    answer = (
        "An embed shows another note inline. [[Embeds]] The first section talks about "
        "sourdough bread. [[Deep Note#Section one]]"
    )
    report = _check_with(
        answer, [_excerpt("Embeds.md"), _excerpt("folder/Deep Note.md", "Section one")]
    )
    embeds, deep = report.citations
    assert [s.sentence for s in embeds.supports] == ["An embed shows another note inline."]
    assert [s.sentence for s in deep.supports] == ["The first section talks about sourdough bread."]
    assert embeds.support == deep.support == "supported"
    assert report.supported_claims == 2 and not report.flagged_claims


def test_an_uncited_supported_sentence_gets_the_link_of_its_excerpt_marked_added() -> None:
    answer = "The second section explains fermentation of rye."
    report = _check_with(
        answer, [_excerpt("Embeds.md"), _excerpt("folder/Deep Note.md", "Section two")]
    )
    (check,) = report.claims
    assert check.added == "Deep Note#Section two" and check.verdict == "supported"
    (added,) = report.citations
    assert added.added and added.path == "folder/Deep Note.md"
    assert not report.model_citations
    assert annotate_answer(answer, report) == answer + " [[Deep Note#Section two]]"


def test_a_link_to_a_page_whose_text_never_reached_the_model_is_reported_and_flagged() -> None:
    answer = "The second section explains fermentation of rye [[Deep Note]]."
    report = _check_with(answer, [_excerpt("Embeds.md")])
    (citation,) = report.citations
    assert citation.state == "resolved" and not citation.grounded
    assert "not among the excerpts" in citation.reason
    (check,) = report.claims
    assert check.flagged and "not given to the model" in check.reason
    assert report.unsupported == 1
    assert annotate_answer(answer, report) == ("⚠️ The second section explains fermentation of rye.")


def test_a_wrong_link_whose_sentence_another_excerpt_supports_gets_the_right_one_added() -> None:
    answer = "The second section explains fermentation of rye [[Embeds]]."
    report = _check_with(
        answer, [_excerpt("Embeds.md"), _excerpt("folder/Deep Note.md", "Section two")]
    )
    (check,) = report.claims
    assert check.added == "Deep Note#Section two" and "does not say this" in check.reason
    embeds = report.citations[0]
    assert embeds.support == "unsupported" and report.unsupported == 1


def test_an_invented_fact_with_a_real_link_is_flagged_unsupported() -> None:
    answer = "The Wi-Fi password of my home network is [[Embeds]]: 192.168.178.1."
    report = _check_with(answer, [_excerpt("Embeds.md")])
    assert report.supported_claims == 0
    assert all(c.flagged for c in report.claims)
    assert "⚠️" in annotate_answer(answer, report)


def test_refusal_sentences_are_not_claims() -> None:
    report = _check_with("The notes do not contain the answer.", [_excerpt("Embeds.md")])
    assert report.claims == () and report.refusals == 1


def test_an_embed_in_an_answer_is_shown_as_code_and_never_transcludes() -> None:
    answer = "Write ![[Embeds]] to embed a note inline."
    report = _check_with(answer, [_excerpt("Embeds.md")])
    assert report.citations[:1] == () or all(not c.link.embed for c in report.citations)
    assert "`![[Embeds]]`" in annotate_answer(answer, report)


def test_a_link_the_sentence_reads_as_a_word_becomes_its_page_s_name_not_page_and_heading() -> None:
    answer = "See [[Nowhere#Some heading]] for the rest of it."
    assert render_broken_as_text(answer, _check(answer)) == "See Nowhere for the rest of it."


def test_a_link_that_opens_a_line_becomes_its_name() -> None:
    answer = "- [[Nowhere]]: rye ferments quickly."
    assert render_broken_as_text(answer, _check(answer)) == "- Nowhere: rye ferments quickly."


def test_a_link_beside_a_kept_link_goes_with_the_space_before_it() -> None:
    answer = (
        "The second section explains fermentation of rye [[Nowhere]] [[Deep Note#Section two]]."
    )
    report = _check_with(answer, [_excerpt("folder/Deep Note.md", "Section two")])
    assert annotate_answer(answer, report) == (
        "The second section explains fermentation of rye [[Deep Note#Section two]]."
    )


def test_a_link_is_kept_after_the_claim_it_backs_and_dropped_after_the_one_it_does_not() -> None:
    answer = (
        "The second section explains fermentation of rye [[Deep Note#Section two]]. "
        "It also covers baking times [[Deep Note#Section two]]."
    )
    report = _check_with(answer, [_excerpt("folder/Deep Note.md", "Section two")])
    assert annotate_answer(answer, report) == (
        "The second section explains fermentation of rye [[Deep Note#Section two]]. "
        "⚠️ It also covers baking times."
    )


def test_quotes_are_footnotes_numbered_once_per_quote_and_page() -> None:
    answer = (
        "The second section explains fermentation of rye [[Deep Note#Section two]]. "
        "Rye fermentation is covered by the second section [[Deep Note#Section two]]."
    )
    report = _check_with(answer, [_excerpt("folder/Deep Note.md", "Section two")])
    notes = quote_notes(report)
    assert [(n.number, n.source) for n in notes] == [(1, "Deep Note#Section two")]
    assert annotate_answer(answer, report, quotes=True).count("[^1]") == 2


def test_a_quote_shows_links_as_text_embeds_as_code_and_drops_block_ids() -> None:
    text = "Read [[Deep Note#Section two|the second part]] and ![[Embeds]] and ![x](http://h/p.png) ^abc-1"
    assert quote_text(text) == "Read the second part and `![[Embeds]]` and x"


def test_a_sentence_that_says_again_what_one_said_is_a_repeat_one_with_a_new_figure_is_not() -> (
    None
):
    answer = (
        "The second section explains fermentation of rye [[Deep Note#Section two]]. "
        "The step is: the second section explains rye fermentation. "
        "It takes 3 days in the second section."
    )
    report = _check_with(answer, [_excerpt("folder/Deep Note.md", "Section two")])
    assert [answer[s:e].strip() for s, e in report.repeats] == [
        "The step is: the second section explains rye fermentation."
    ]
    published = annotate_answer(answer, report)
    assert "The step is" not in published and "3 days" in published


def test_a_quote_drops_the_callout_marker_of_the_notes_sentence() -> None:
    # "> [!warning] Individual password protection ..." in the note: the quote is the
    # sentence, not the box's syntax.
    assert quote_text("[!warning] Individual notes cannot have a password.") == (
        "Individual notes cannot have a password."
    )
    assert quote_text("> [!tip]- Pin a tab to keep it open.") == "Pin a tab to keep it open."
    assert quote_text("Write [!note] to make a note callout.") == (
        "Write [!note] to make a note callout."
    )


def test_claims_that_end_at_one_link_get_its_footnote_once() -> None:
    # A link on a line of its own closes every claim above it: one added link and one
    # footnote there, not "[[L]][^1] [[L]][^1]".
    answer = (
        "The second section explains fermentation of rye. "
        "Rye fermentation is covered by the second section.\n\n[[Embeds]]"
    )
    report = _check_with(answer, [_excerpt("folder/Deep Note.md", "Section two")])
    assert len({c.anchor for c in report.claims}) == 1 and len(report.claims) == 2
    annotated = annotate_answer(answer, report, quotes=True)
    assert annotated.count("[[Deep Note#Section two]]") == 1
    assert annotated.count("[^1]") == 1


def test_a_link_after_a_word_that_wants_a_noun_stays_as_its_name_at_a_sentence_end() -> None:
    # "... described in [[Aliases]]." read "described in." once its link went.
    cases = {
        "Add the property to your [[Nowhere]].": "Add the property to your Nowhere.",
        "This is described in [[Nowhere#Some heading]].": "This is described in Nowhere.",
        "Follow the steps outlined in [[Nowhere]]": "Follow the steps outlined in Nowhere",
        # After any other word a link that closes the claim is a citation: it goes.
        "Rye ferments in three days [[Nowhere]].": "Rye ferments in three days.",
        "Press Ctrl+W [[Nowhere]].": "Press Ctrl+W.",
    }
    for answer, expected in cases.items():
        assert render_broken_as_text(answer, _check(answer)) == expected, answer


def test_a_link_inside_an_opening_emphasis_after_a_word_becomes_its_name() -> None:
    # "under **[[Settings]] → Files & Links**" read "under ** → Files & Links**".
    cases = {
        "Choose it under **[[Nowhere]] → Files & Links**.": (
            "Choose it under **Nowhere → Files & Links**."
        ),
        "Go to *[[Nowhere]] → About* and select it.": "Go to *Nowhere → About* and select it.",
        # After a full stop an emphasised link is still a citation of the sentence before:
        # it goes with its emphasis, which would be empty.
        "Rye ferments in three days. **[[Nowhere]]**": "Rye ferments in three days.",
        "Rye ferments in three days. *[[Nowhere]]*\n": "Rye ferments in three days.\n",
    }
    for answer, expected in cases.items():
        assert render_broken_as_text(answer, _check(answer)) == expected, answer
