"""The answer note as DESIGN §3 shapes it, and its waiting / failed / stale variants.

Pure: values in, Markdown out. The frontmatter uses flat keys with JSON-quoted
strings (valid YAML, and Obsidian shows them as properties).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import get_args

from askvault.core.citations import (
    FLAG_MARKER,
    Citation,
    CitationReport,
    ClaimCheck,
    quote_notes,
    quote_text,
)
from askvault.core.followup import inert_follow_up_lines
from askvault.core.inert import inert_line, neutralise
from askvault.records import AnswerStatus, QuestionOptions

NONE_RECOGNIZED = "Answer citations: none recognized (not a factual-support assessment)"
UNAVAILABLE = "Answer citations: unavailable"
_STATUS_LINE = re.compile(r"^status:.*$", re.MULTILINE)
_STALE_CALLOUT = re.compile(r"\n> \[!warning\] Stale answer\n(?:>.*\n)*")


@dataclass(frozen=True)
class LedgerEntry:
    """One `## Sources` entry: a cited page and the raw files its `sources:` lead to."""

    wikilink: str
    raw_paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class SupportingPage:
    """One `### Supporting pages` line."""

    wikilink: str
    why: str


@dataclass(frozen=True)
class Passage:
    """A passage shown, clearly labelled as extractive, when no answer could be generated."""

    wikilink: str
    heading: str | None
    text: str


ANSWER_STATUSES: tuple[AnswerStatus, ...] = get_args(AnswerStatus)


def answer_status(value: str) -> AnswerStatus | None:
    """`value` (an answer note's `status:`, as read back) as a status, None if askvault
    writes no such status."""
    return next((status for status in ANSWER_STATUSES if status == value), None)


@dataclass(frozen=True)
class AnswerNote:
    """Everything an answer note shows."""

    question: str
    status: AnswerStatus
    asked: str
    answered: str | None = None
    model: str = ""
    embed_model: str = ""
    sources: tuple[str, ...] = ()
    answer: str = ""
    supporting: tuple[SupportingPage, ...] = ()
    caveats: tuple[str, ...] = ()
    ledger: tuple[LedgerEntry, ...] = ()
    report: CitationReport | None = None
    trace: tuple[str, ...] = ()
    index_as_of: str | None = None
    reason: str = ""
    passages: tuple[Passage, ...] = ()
    stale_pages: tuple[str, ...] = ()
    extra_frontmatter: dict[str, str] = field(default_factory=dict)
    # The question's options that narrowed the search, and warnings about its option keys.
    options: tuple[str, ...] = ()
    # The period the question was read to ask about, its days and notes ('' if none).
    period: str = ""
    # The options the question was asked with, kept as its `ask_*` properties: what its
    # follow-ups are answered with (core/followup.py: carried_options).
    asked_with: QuestionOptions = field(default_factory=QuestionOptions)


def render_answer_note(note: AnswerNote) -> str:
    """The full Markdown text of the note."""
    head = [render_frontmatter(note), render_question_callout(note.question)]
    return "\n\n".join([*head, render_answer_body(note)])


def render_answer_body(note: AnswerNote) -> str:
    """What the note shows below its question: also a follow-up's turn (core/followup.py).
    A line of it that would read as a follow-up heading or a turn mark is made inert."""
    parts = _notice_parts(note)
    if note.status == "answering":
        parts.append(
            "> [!info] Answering\n> askvault is writing the answer; this note will be "
            "replaced when it is ready."
        )
    elif note.status == "waiting":
        parts.append(_waiting_body(note))
    elif note.status == "failed":
        parts.append(f"> [!failure] This question could not be answered\n{_quoted(note.reason)}")
    else:
        parts.extend(_answer_parts(note))
    if note.trace:
        parts.append("> [!info]- Retrieval trace\n" + "\n".join(f"> {t}" for t in note.trace))
    return inert_follow_up_lines("\n\n".join(p.rstrip("\n") for p in parts)) + "\n"


def _notice_parts(note: AnswerNote) -> list[str]:
    """The callouts above the answer, whatever its status: stale pages, the question's
    options, the period it was read to ask about."""
    parts: list[str] = []
    if note.stale_pages:
        parts.append(render_stale_callout(note.stale_pages))
    if note.options:
        parts.append("> [!note] Question options\n" + "\n".join(f"> {o}" for o in note.options))
    if note.period:
        parts.append("> [!note] Period\n" + _quoted(note.period))
    return parts


def _answer_parts(note: AnswerNote) -> list[str]:
    """An answered or no-answer note below its notices: the reply, its flagged claims, the
    closest passages (no-answer), supporting pages, caveats, sources, citation report."""
    parts = _reply_parts(note)
    flagged = note.report.flagged_claims if note.report is not None else ()
    if flagged and note.status != "no-answer":
        parts.append(render_flagged_callout(flagged))
    if note.status == "no-answer" and note.passages:
        parts.append(_passages_section(note, "Closest passages found (not an answer)"))
    if note.supporting:
        parts.append(
            "### Supporting pages\n"
            + "\n".join(f"- {p.wikilink} — {p.why}" for p in note.supporting)
        )
    if note.caveats:
        parts.append("### Caveats\n" + "\n".join(f"- {c}" for c in note.caveats))
    parts.append(render_sources(note.ledger))
    parts.append(render_citation_report(note.report))
    return parts


def _reply_parts(note: AnswerNote) -> list[str]:
    """The reply as published, with the footnotes of its quotes once answered; for a
    no-answer whose sentences were checked, or refused with no reply, the callout saying
    why it is not published instead."""
    if note.status == "no-answer" and (
        (note.report is not None and note.report.claims)
        or (note.reason and not note.answer.strip())
    ):
        return [_unverified_callout(note)]
    parts = [note.answer.strip() or "(the model returned an empty answer)"]
    if note.status == "answered" and note.report is not None:
        footnotes = render_quote_notes(note.report, note.answer)
        if footnotes:
            parts.append(footnotes)
    return parts


def render_frontmatter(note: AnswerNote) -> str:
    """The YAML frontmatter block, keys in the order of DESIGN §3."""
    report = note.report
    checked = report is not None and not report.error
    resolved = report.count("resolved") if report and checked else 0
    broken = report.count("broken") if report and checked else 0
    unsupported = report.unsupported if report and checked else 0
    lines = [
        "---",
        f"question: {_q(note.question)}",
        f"status: {note.status}",
        f"asked: {_q(note.asked)}",
        f"answered: {_q(note.answered) if note.answered else 'null'}",
        f"model: {_q(note.model)}",
        f"embed_model: {_q(note.embed_model)}",
    ]
    if note.sources:
        lines.append("sources:")
        lines += [f"  - {_q(s)}" for s in note.sources]
    else:
        lines.append("sources: []")
    lines += [
        f"citations_resolved: {resolved}",
        f"citations_broken: {broken}",
        f"citations_unsupported: {unsupported}",
        f"index_as_of: {_q(note.index_as_of) if note.index_as_of else 'null'}",
    ]
    lines += option_properties(note.asked_with)
    lines += [f"{k}: {_q(v)}" for k, v in note.extra_frontmatter.items()]
    lines.append("---")
    return "\n".join(lines)


def option_properties(options: QuestionOptions) -> list[str]:
    """The `ask_*` frontmatter lines of the options that are set, as a question note
    writes them (services/inbox/question_options.py reads them back)."""
    lines: list[str] = []
    for key, values in (("ask_folders", options.folders), ("ask_tags", options.tags)):
        if values:
            lines.append(f"{key}:")
            lines += [f"  - {_q(v)}" for v in values]
    if options.max_sources:
        lines.append(f"ask_max_sources: {options.max_sources}")
    for key, value in (
        ("ask_model", options.model),
        ("ask_language", options.language),
        ("ask_since", options.since),
        ("ask_until", options.until),
    ):
        if value:
            lines.append(f"{key}: {_q(value)}")
    return lines


def render_question_callout(question: str) -> str:
    """`> [!question]` with the question, every line quoted."""
    return "> [!question]\n" + _quoted(question.strip())


def render_stale_callout(pages: Sequence[str]) -> str:
    """The warning naming the cited pages that changed since the answer was written."""
    names = ", ".join(pages)
    return (
        "> [!warning] Stale answer\n"
        f"> These cited pages changed or were deleted after this answer was written: {names}.\n"
        "> Ask again to get a fresh answer."
    )


def render_sources(ledger: Sequence[LedgerEntry]) -> str:
    """`## Sources`: one numbered entry per cited page, with the raw files it names (its
    `sources:`) when it names any; nothing more when it names none (nothing to say)."""
    if not ledger:
        return "## Sources\n\nNo page was cited."
    lines = ["## Sources", ""]
    for n, entry in enumerate(ledger, 1):
        raw = ", ".join(f"`{p}`" for p in entry.raw_paths)
        lines.append(f"{n}. {entry.wikilink} — {raw}" if raw else f"{n}. {entry.wikilink}")
    return "\n".join(lines)


def render_citation_report(report: CitationReport | None) -> str:
    """`## Citation report`: one line per unique wikilink, or the fixed none/unavailable lines."""
    lines = ["## Citation report", ""]
    if report is None or report.error is not None:
        reason = report.error if report is not None and report.error else "not computed"
        lines.append(f"{UNAVAILABLE} ({reason})")
        return "\n".join(lines)
    model = report.model_citations
    if not model:
        lines.append(NONE_RECOGNIZED)
    else:
        lines.append(
            f"{report.count('resolved')} resolved, {report.count('pending')} pending, "
            f"{report.count('broken')} broken, {report.unsupported} not supporting their "
            "sentence."
        )
        lines.append("")
        lines += [citation_line(c) for c in model]
    if report.claims:
        lines += [
            "",
            f"Sentences checked against the excerpts the model saw: "
            f"{report.supported_claims} of {len(report.claims)} supported.",
        ]
        lines += [""] + [claim_line(c) for c in report.claims]
    return "\n".join(lines)


def claim_line(check: ClaimCheck) -> str:
    """One checked sentence: its verdict, what backs it (and whether askvault added the link)."""
    share = f"{check.coverage:.0%} of its words"
    if check.verdict == "supported":
        by = f"`{check.source}`" if check.source else "an excerpt"
        added = " — link added by askvault" if check.added else ""
        line = f'- **supported** by {by} ({share}){added}: "{_one_line(check.sentence, 200)}"'
    else:
        line = (
            f"- {FLAG_MARKER} **{check.verdict}** ({share}; {check.reason}): "
            f'"{_one_line(check.sentence, 200)}"'
        )
    if check.verdict == "supported" and check.quote:
        line += f'\n  - quote: "{_one_line(quote_text(check.quote), 200)}"'
    elif check.span:
        line += f'\n  - excerpt: "{_one_line(check.span, 160)}"'
    return line


def render_quote_notes(report: CitationReport, answer: str) -> str:
    """The footnotes of a published answer: for each `[^n]` of `answer`, the words of the
    note the claim rests on, copied from the excerpt by askvault, and the link to where
    they stand."""
    return "\n".join(
        f"[^{n.number}]: “{inert_line(quote_text(n.quote))}” — [[{n.source}]]"
        for n in quote_notes(report)
        if f"[^{n.number}]" in answer
    )


def render_flagged_callout(flagged: Sequence[ClaimCheck]) -> str:
    """The warning listing the sentences nothing the model saw supports (marked in the body)."""
    lines = [
        "> [!warning] Not found in your notes",
        f"> The sentences marked {FLAG_MARKER} are not supported by the excerpts the model "
        "was given; check them before relying on them:",
    ]
    lines += [f'> - "{_one_line(c.sentence, 200)}" ({c.verdict}: {c.reason})' for c in flagged]
    return "\n".join(lines)


def _unverified_callout(note: AnswerNote) -> str:
    """A no-answer whose reply said something: shown folded, flagged, never as the answer."""
    reply = note.answer.strip() or "(empty)"
    refused = (
        note.report is not None
        and note.report.supported_claims == 0
        and not any(c.verdict == "weak" for c in note.report.claims)
    )
    if note.reason and not note.answer.strip():
        return "> [!failure] No answer in your notes\n" + _quoted(note.reason)
    if note.reason:
        return (
            "> [!failure] No answer in your notes\n"
            + _quoted(note.reason)
            + "\n\n> [!quote]- The model's unverified reply\n"
            + _quoted(reply)
        )
    head = (
        "> [!failure] No answer in your notes\n> None of the model's sentences is supported "
        "by the excerpts it was given, so this is not published as an answer."
        if refused or note.report is None
        else "> [!failure] No answer in your notes\n> None of the model's sentences is supported "
        "by the excerpts it was given (some only partly), so this is not published as an "
        "answer."
    )
    return head + "\n\n> [!quote]- The model's unverified reply\n" + _quoted(reply)


def citation_line(citation: Citation) -> str:
    """One report line; the target is shown as code so a broken one is never a live link."""
    target = f"`{citation.target}`"
    if citation.state == "resolved":
        where = f"`{citation.path}`"
        if citation.heading:
            where += f" § {citation.heading}"
        if citation.link.block:
            where += f" ^{citation.link.block}"
        line = f"- {target} — **resolved** → {where}"
        if not citation.published:
            line += " — backs no sentence it cites; shown as plain text"
    elif citation.state == "pending":
        line = f"- {target} — **pending** ({citation.reason})"
    else:
        line = f"- {target} — **broken** ({citation.reason}); shown as plain text"
    if citation.reason and citation.state == "resolved":
        line += f" ({citation.reason})"
    for support in citation.supports:
        line += (
            f"\n  - {support.verdict} ({support.coverage:.0%} of its words): "
            f'"{_one_line(support.sentence, 200)}"'
        )
    return line


def _waiting_body(note: AnswerNote) -> str:
    parts = [
        "> [!warning] Waiting for Ollama\n"
        f"{_quoted(note.reason)}\n"
        "> askvault will retry by itself and replace this note with the answer."
    ]
    if note.passages:
        parts.append(_passages_section(note, "Best passages found (extractive, not an answer)"))
    else:
        parts.append("No passages were found in the index for this question.")
    return "\n\n".join(parts)


def _passages_section(note: AnswerNote, title: str) -> str:
    lines = [f"## {title}", ""]
    for p in note.passages:
        where = f"{p.wikilink}" + (f" — {p.heading}" if p.heading else "")
        lines.append(f"- {where}")
        text = neutralise(p.text.strip())  # a note's words: nothing in them loads
        lines += [f"  > {line}" if line.strip() else "  >" for line in text.split("\n")]
    return "\n".join(lines)


def mark_stale(note_text: str, pages: Sequence[str]) -> str:
    """Our own answer note with `status: stale` and a callout naming `pages` (replacing any)."""
    head, sep, body = note_text.partition("\n---\n")
    if not sep or not head.startswith("---"):
        return note_text
    head = _STATUS_LINE.sub("status: stale", head, count=1)
    body = _STALE_CALLOUT.sub("\n", body, count=1)
    callout = render_stale_callout(pages)
    match = re.search(r"^> \[!question\]\n(?:>.*\n)*", body, re.MULTILINE)
    if match:
        body = body[: match.end()] + "\n" + callout + "\n" + body[match.end() :]
    else:
        body = callout + "\n\n" + body
    body = re.sub(r"\n{3,}", "\n\n", body)
    return head + sep + body


def stale_pages_of(note_text: str) -> list[str]:
    """The pages named in an existing stale callout (to add newly changed ones)."""
    match = re.search(r"written: (.*)\.\n", note_text)
    return [p.strip() for p in match.group(1).split(", ")] if match else []


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in (text or "").split("\n"))


def _one_line(text: str, limit: int) -> str:
    # The model's sentences and the notes' words: inert, never cut inside a code span.
    return inert_line(text, limit)
