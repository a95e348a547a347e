"""The answer note (DESIGN §3): golden files for scripted replies, and the other states.

Regenerate the golden files with `UPDATE_GOLDEN=1 pytest tests/core/test_answer_note.py`
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from askvault.core.answer_note import (
    NONE_RECOGNIZED,
    UNAVAILABLE,
    AnswerNote,
    LedgerEntry,
    Passage,
    SupportingPage,
    mark_stale,
    render_answer_body,
    render_answer_note,
    render_sources,
    stale_pages_of,
)
from askvault.core.citations import (
    CitationReport,
    Excerpt,
    annotate_answer,
    check_citations,
    slug,
)
from askvault.core.links import build_link_index
from askvault.core.notes import parse_note

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

NOTES = {
    "Embeds.md": (
        "---\naliases: [Transclusion]\nsources: ['[[_sources/Embeds paper]]']\n---\n# Embeds\n\n"
        "An embed shows another note inline.\n\n## Block references\n\n"
        "Link a block with a caret id. ^block-1\n"
    ),
    "Links.md": "# Links\n\nWikilinks connect notes.\n",
}

REPLIES = {
    "resolved": "An embed shows another note inline [[Embeds]].",
    "alias": "An embed shows another note inline [[Transclusion]].",
    "heading": "Link a block with a caret id [[Embeds#Block references]].",
    "block": "Link a block with a caret id [[Embeds#^block-1]].",
    "broken": "Wikilinks connect notes [[Links]], and embeds are magic [[Magic Embeds]].",
    "pending": "This was asked before [[How do embeds work]].",
    "code_span": "Write `[[Embeds]]` to link; wikilinks connect notes.",
    "escaped": "Write \\[[Embeds]] literally; wikilinks connect notes.",
    "label": "Wikilinks connect notes [[Links|the links page]].",
    "no_link": "Wikilinks connect notes.",
}


def _note_for(reply: str) -> AnswerNote:
    index = build_link_index((p, parse_note(p, t).aliases) for p, t in NOTES.items())
    notes = {p: parse_note(p, t) for p, t in NOTES.items()}
    excerpts = [Excerpt(p, n.title, None, n.body, f"[[{n.title}]]") for p, n in notes.items()]
    report = check_citations(
        reply, index, notes, {slug("How do embeds work.md")}, excerpts=excerpts
    )
    cited = list(
        dict.fromkeys(c.path for c in report.citations if c.path and c.state == "resolved")
    )
    ledger = tuple(
        LedgerEntry(f"[[{p[:-3]}]]", ("raw/embeds-paper.pdf",) if p == "Embeds.md" else ())
        for p in cited
    )
    return AnswerNote(
        question="How do embeds work?",
        status="answered",
        asked="2025-01-02T10:00:00+00:00",
        answered="2025-01-02T10:00:05+00:00",
        model="llama3.2",
        embed_model="nomic-embed-text",
        sources=tuple(f"[[{p[:-3]}]]" for p in cited),
        answer=annotate_answer(reply, report),
        supporting=tuple(
            SupportingPage(f"[[{p[:-3]}]]", "ranked #1 of 2 by retrieval") for p in cited
        ),
        caveats=tuple(
            f"The link to `{c.target}` is broken ({c.reason}); it is not a link here."
            for c in report.citations
            if c.state == "broken"
        ),
        ledger=ledger,
        report=report,
        trace=(
            "2 page(s) retrieved; 2 sent to the model (~40 of 5000 tokens)",
            "1. [[Embeds]] score 0.0323 (fts 0.0164 + vector 0.0159)",
            "time: retrieval 3 ms, generation 120 ms, citations 1 ms",
        ),
        index_as_of="2025-01-02T09:59:00+00:00",
    )


def _assert_golden(name: str, text: str) -> None:
    path = GOLDEN / f"answer_{name}.md"
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("case", sorted(REPLIES))
def test_answer_note_matches_golden(case: str) -> None:
    _assert_golden(case, render_answer_note(_note_for(REPLIES[case])))


def test_broken_link_is_never_published_as_a_link() -> None:
    text = render_answer_note(_note_for(REPLIES["broken"]))
    assert "[[Magic Embeds]]" not in text
    assert "⚠️ and embeds are magic." in text
    assert "citations_broken: 1" in text and "citations_resolved: 1" in text


def test_no_link_answer_says_none_recognized_and_gets_the_link_its_excerpt_supports() -> None:
    text = render_answer_note(_note_for(REPLIES["no_link"]))
    assert NONE_RECOGNIZED in text
    assert "Wikilinks connect notes. [[Links]]" in text
    assert "link added by askvault" in text
    assert "## Sources\n\n1. [[Links]]" in text


def test_unavailable_report_gives_the_reason_and_is_never_an_empty_report() -> None:
    note = AnswerNote("q?", "answered", "t", answer="a", report=CitationReport(error="boom"))
    assert f"{UNAVAILABLE} (boom)" in render_answer_note(note)
    assert f"{UNAVAILABLE} (not computed)" in render_answer_note(AnswerNote("q?", "answered", "t"))


def test_sections_come_in_design_order() -> None:
    text = render_answer_note(_note_for(REPLIES["broken"]))
    order = [
        "---\nquestion:",
        "> [!question]",
        "Wikilinks connect",
        "### Supporting pages",
        "### Caveats",
        "## Sources",
        "## Citation report",
        "Retrieval trace",
    ]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)


def test_frontmatter_keys_in_order_and_quoted() -> None:
    note = _note_for(REPLIES["resolved"])
    text = render_answer_note(note.__class__(**{**note.__dict__, "question": 'Say "hi": #1?'}))
    head = text.split("\n---\n", 1)[0]
    keys = [line.split(":", 1)[0] for line in head.splitlines()[1:] if not line.startswith("  ")]
    assert keys == [
        "question",
        "status",
        "asked",
        "answered",
        "model",
        "embed_model",
        "sources",
        "citations_resolved",
        "citations_broken",
        "citations_unsupported",
        "index_as_of",
    ]
    assert 'question: "Say \\"hi\\": #1?"' in head


def test_caveats_are_omitted_when_there_are_none() -> None:
    assert "### Caveats" not in render_answer_note(_note_for(REPLIES["resolved"]))


def test_waiting_note_says_why_and_labels_passages_as_extractive() -> None:
    note = AnswerNote(
        "How do embeds work?",
        "waiting",
        "2025-01-02T10:00:00+00:00",
        reason="Ollama is not reachable at http://127.0.0.1:11434",
        passages=(Passage("[[Embeds]]", "Embeds", "An embed shows another note inline."),),
        sources=("[[Embeds]]",),
    )
    text = render_answer_note(note)
    _assert_golden("waiting", text)
    assert "status: waiting" in text and "not reachable" in text
    assert "## Best passages found (extractive, not an answer)" in text
    assert "## Citation report" not in text


def test_failed_note_says_why() -> None:
    note = AnswerNote(
        "",
        "failed",
        "2025-01-02T10:00:00+00:00",
        reason="invalid question options: folders: '../x' is outside the vault",
    )
    text = render_answer_note(note)
    _assert_golden("failed", text)
    assert "status: failed" in text and "> [!failure]" in text and "outside the vault" in text


def test_mark_stale_sets_status_and_names_changed_pages() -> None:
    text = render_answer_note(_note_for(REPLIES["resolved"]))
    stale = mark_stale(text, ["[[Embeds]]"])
    _assert_golden("stale", stale)
    assert "status: stale" in stale and "status: answered" not in stale
    assert (
        stale.index("> [!question]")
        < stale.index("> [!warning] Stale answer")
        < stale.index("An embed shows")
    )
    again = mark_stale(stale, stale_pages_of(stale) + ["[[Links]]"])
    assert again.count("[!warning] Stale answer") == 1
    assert "written: [[Embeds]], [[Links]]." in again


def test_mark_stale_leaves_text_without_frontmatter_alone() -> None:
    assert mark_stale("just text\n", ["[[A]]"]) == "just text\n"


def test_answer_status_reads_back_only_the_statuses_askvault_writes() -> None:
    from askvault.core.answer_note import ANSWER_STATUSES, answer_status

    assert set(ANSWER_STATUSES) == {
        "answering",
        "answered",
        "no-answer",
        "waiting",
        "failed",
        "stale",
    }
    assert all(answer_status(status) == status for status in ANSWER_STATUSES)
    assert answer_status("problem") is None and answer_status("") is None


def test_a_sources_entry_without_raw_files_names_the_page_alone() -> None:
    """No "(no raw source resolved)": when a page names no raw file there is nothing to say."""
    text = render_sources(
        [
            LedgerEntry("[[Embeds]]", ("raw/embeds.pdf",)),
            LedgerEntry("[[Links]]", ()),
        ]
    )
    assert text.splitlines()[2:] == ["1. [[Embeds]] — `raw/embeds.pdf`", "2. [[Links]]"]
    assert "resolved" not in text


def _body(**fields: object) -> str:
    """The body (below the question) of a note with `fields`."""
    base: dict[str, object] = {"question": "Q?", "status": "answered", "asked": "2025-01-02"}
    return render_answer_body(AnswerNote(**{**base, **fields}))  # type: ignore[arg-type]


def test_the_notices_come_first_stale_options_period_whatever_the_status() -> None:
    notices = {
        "stale_pages": ("[[Embeds]]",),
        "options": ("ask_folders: Garden",),
        "period": "Searched the notes of last week.",
    }
    for status in ("answering", "answered", "no-answer", "waiting", "failed"):
        body = _body(status=status, reason="why", **notices)
        marks = ["> [!warning] Stale answer", "> [!note] Question options", "> [!note] Period"]
        at = [body.index(mark) for mark in marks]
        assert at == sorted(at) and at[0] == 0, status
    assert not _body(status="answered").startswith(">"), "no notice, no callout"


def test_an_answering_note_says_so_and_shows_no_report() -> None:
    body = _body(status="answering")
    assert body.startswith("> [!info] Answering\n")
    assert "## Citation report" not in body and "## Sources" not in body


def test_an_empty_reply_is_said_to_be_empty_and_not_left_blank() -> None:
    body = _body(status="answered", answer="  \n")
    assert body.startswith("(the model returned an empty answer)\n\n## Sources")


def test_a_no_answer_with_a_reason_and_no_reply_says_why_then_the_closest_passages() -> None:
    passage = Passage("[[Embeds]]", None, "An embed shows another note inline.")
    body = _body(status="no-answer", reason="no note is close enough", passages=(passage,))
    assert body.startswith("> [!failure] No answer in your notes\n> no note is close enough")
    assert "unverified reply" not in body
    assert body.index("Closest passages found (not an answer)") < body.index("## Sources")


def test_a_no_answer_reply_nothing_checked_is_shown_as_the_model_wrote_it() -> None:
    """A refusal in the model's words (no claim to check, no reason of askvault's)."""
    body = _body(status="no-answer", answer="The notes do not say.")
    assert body.startswith("The notes do not say.\n\n## Sources")


def test_quote_footnotes_are_added_only_to_an_answered_note() -> None:
    note = _note_for(REPLIES["resolved"])
    quoted = annotate_answer(REPLIES["resolved"], note.report, quotes=True)  # type: ignore[arg-type]
    assert "[^1]" in quoted
    answered = render_answer_body(AnswerNote(**{**note.__dict__, "answer": quoted}))
    assert "\n[^1]: “An embed shows another note inline.” — [[Embeds]]" in answered
    no_answer = render_answer_body(
        AnswerNote(**{**note.__dict__, "answer": quoted, "status": "no-answer", "report": None})
    )
    assert "\n[^1]: “" not in no_answer
