"""Citation checking of an answer: which wikilinks it has, where they lead, what backs them.

Pure: the caller reads the cited notes (fresh, after generation) and hands in their
parsed form, the excerpts that reached the model, and the word index's tokenizer.
Link states (DESIGN §3): `resolved` (to a note, and to the heading or block when one
is named), `pending` (no such note, but a review candidate in queries/ has that slug),
`broken` (anything else, including a `#Heading` or `#^block` missing from the resolved
note). Broken links are rendered as plain text.

Support is checked per claim (core/claims.py says which words each link cites), and
for every claim, cited or not (core/support.py says how): against the excerpts of the
cited page that reached the model. A claim no cited excerpt supports but another
excerpt does gets that excerpt's link, marked as added by askvault; a claim nothing
supports is flagged. Sentences that say the notes lack the answer are refusals, not
claims (core/abstention.py).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from askvault.core.abstention import is_refusal
from askvault.core.claims import CitedLink, Claim, link_spans, split_claims, strip_links
from askvault.core.links import (
    LinkIndex,
    heading_matches,
    normalize_name,
    resolve_link,
    unique_targets,
)
from askvault.core.support import (
    Evidence,
    Support,
    Tokenizer,
    best_judgement,
    claim_contents,
    content_tokens,
    is_claim,
    prepare_evidence,
    simple_tokens,
)
from askvault.records import CitationState, Link, ParsedNote, SupportVerdict

__all__ = [
    "Citation",
    "CitationReport",
    "ClaimCheck",
    "Excerpt",
    "Support",
    "annotate_answer",
    "check_citations",
    "check_support",
    "link_spans",
    "link_target_text",
    "render_broken_as_text",
    "section_text",
    "slug",
    "strip_links",
]

_SLUG = re.compile(r"[^\w]+")
FLAG_MARKER = "⚠️"
_RANK = {"supported": 2, "weak": 1, "unsupported": 0}


@dataclass(frozen=True)
class Excerpt:
    """Text that reached the model: its page, heading, and the link that cites it."""

    path: str
    title: str
    heading: str | None
    text: str
    cite_as: str  # `[[Page#Heading]]`


@dataclass(frozen=True)
class Citation:
    """One unique wikilink of an answer and what became of it."""

    link: Link
    state: CitationState
    path: str | None = None
    heading: str | None = None
    reason: str = ""
    supports: tuple[Support, ...] = ()
    added: bool = False  # put in by askvault for a claim the model left uncited
    grounded: bool = True  # the page's text reached the model

    @property
    def target(self) -> str:
        """The link as written, without label: `A`, `A#Heading`, `A#^block`."""
        return link_target_text(self.link)

    @property
    def support(self) -> SupportVerdict | None:
        """The best verdict over the citing sentences, or None when not checked."""
        order: tuple[SupportVerdict, ...] = ("supported", "weak", "unsupported")
        verdicts = [s.verdict for s in self.supports]
        return next((v for v in order if v in verdicts), None)

    @property
    def published(self) -> bool:
        """True when the link stays a link in the answer: it resolves and backs a sentence
        the model saw it for (or askvault added it), or it is pending. A link that backs
        nothing is shown as plain text, so the answer adds no false edge to the graph."""
        if self.state == "pending":
            return True
        return self.state == "resolved" and (
            self.added or (self.grounded and self.support == "supported")
        )


@dataclass(frozen=True)
class ClaimCheck:
    """One claim of the answer, judged: the text compared, the verdict, what backs it."""

    sentence: str
    verdict: SupportVerdict
    coverage: float
    cited: tuple[str, ...] = ()  # targets the model cited for it
    source: str | None = None  # the link whose excerpt backs it best
    added: str | None = None  # the link askvault added, when it did
    span: str | None = None
    reason: str = ""
    anchor: int = 0

    @property
    def flagged(self) -> bool:
        """True when the claim is shown with a marker: nothing the model saw supports it."""
        return self.verdict != "supported"


@dataclass(frozen=True)
class CitationReport:
    """The answer's citations in first-occurrence order, or why they could not be collected."""

    citations: tuple[Citation, ...] = ()
    error: str | None = None
    claims: tuple[ClaimCheck, ...] = ()
    refusals: int = 0

    def count(self, state: CitationState) -> int:
        """How many citations are in `state` (links askvault added included)."""
        return sum(1 for c in self.citations if c.state == state)

    @property
    def model_citations(self) -> tuple[Citation, ...]:
        """The links the model wrote itself."""
        return tuple(c for c in self.citations if not c.added)

    @property
    def unsupported(self) -> int:
        """Citations (resolved or pending) that back none of the sentences they cite."""
        return sum(1 for c in self.citations if c.state != "broken" and c.support != "supported")

    @property
    def supported_claims(self) -> int:
        """Claims that an excerpt the model saw supports."""
        return sum(1 for c in self.claims if not c.flagged)

    @property
    def flagged_claims(self) -> tuple[ClaimCheck, ...]:
        """Claims published with a marker."""
        return tuple(c for c in self.claims if c.flagged)


def link_target_text(link: Link) -> str:
    """`A`, `A#Heading` or `A#^block` for a link."""
    text = link.target
    if link.heading:
        text += f"#{link.heading}"
    if link.block:
        text += f"#^{link.block}"
    return text


def slug(name: str) -> str:
    """A name reduced to lower-case words joined by `-` (how pending candidates are matched)."""
    base = name.rsplit("/", 1)[-1]
    base = re.sub(r"\.md$", "", base, flags=re.IGNORECASE)
    return _SLUG.sub("-", normalize_name(base)).strip("-")


def _key(link: Link) -> tuple[str, str | None, str | None]:
    return (normalize_name(link.target), link.heading, link.block)


def check_citations(
    answer: str,
    index: LinkIndex,
    notes: Mapping[str, ParsedNote],
    pending_slugs: Collection[str] = (),
    *,
    excerpts: Sequence[Excerpt] | None = None,
    tokenize: Tokenizer = simple_tokens,
    question: str = "",
) -> CitationReport:
    """Extract, resolve and check the answer's citations, and judge every claim.

    `notes` holds a fresh parse of every note the links may resolve to (missing entries
    count as unreadable: broken). `pending_slugs` are `slug()`s of the review candidates
    in queries/. `excerpts` are the texts that reached the model: claims are judged
    against them (None: against the cited notes' text, for callers without a prompt).
    """
    claims = split_claims(answer)
    judged = claim_contents([c.judged for c in claims], tokenize, given=question)
    # Whether a sentence says anything at all does not depend on the question.
    sizes = [len(c) for c in content_tokens([c.judged for c in claims], tokenize)]
    shown = list(excerpts or ())
    evidence = prepare_evidence(
        [e.text for e in shown],
        tokenize,
        [_header(e.title, e.heading) for e in shown],
        [e.path for e in shown],
    )
    resolved: dict[tuple[str, str | None, str | None], Citation] = {}
    link_evidence: dict[tuple[str, str | None, str | None], list[Evidence]] = {}
    for link in unique_targets(c.link for claim in claims for c in claim.links):
        citation, texts = _resolve(
            link, index, notes, pending_slugs, shown, evidence, tokenize, excerpts is None
        )
        resolved[_key(link)] = citation
        link_evidence[_key(link)] = texts
    for span in link_spans(answer):  # links in no claim (a heading, a table header) too
        if not span.link.embed and _key(span.link) not in resolved:
            citation, texts = _resolve(
                span.link, index, notes, pending_slugs, shown, evidence, tokenize, excerpts is None
            )
            resolved[_key(span.link)] = citation
            link_evidence[_key(span.link)] = texts
    supports: dict[tuple[str, str | None, str | None], list[Support]] = {k: [] for k in resolved}
    checks: list[ClaimCheck] = []
    added: dict[str, Citation] = {}
    added_supports: dict[str, list[Support]] = {}
    refusals = 0
    for claim, (content, echo), size in zip(claims, judged, sizes):
        if is_refusal(claim.sentence):
            refusals += 1
            continue
        if not is_claim(claim.judged, ["_"] * size):
            continue
        check = _judge_claim(
            claim, content, not echo, question, resolved, link_evidence, supports, shown, evidence
        )
        if check.added:
            if check.added not in added:
                added[check.added] = _added_citation(check.added, index, shown)
            added_supports.setdefault(check.added, []).append(
                Support(check.sentence, check.verdict, check.coverage, check.span)
            )
        checks.append(check)
    ordered = [_with_supports(c, supports[_key(c.link)]) for c in _in_order(answer, resolved)]
    ordered += [_with_supports(c, added_supports[t]) for t, c in added.items()]
    return CitationReport(tuple(ordered), None, tuple(checks), refusals)


def _header(title: str, heading: str | None) -> str:
    # The excerpt's header (page and heading) reached the model too.
    return f"{title} {heading or ''}".strip()


def _in_order(
    answer: str, resolved: Mapping[tuple[str, str | None, str | None], Citation]
) -> list[Citation]:
    seen: list[Citation] = []
    keys: set[tuple[str, str | None, str | None]] = set()
    for span in link_spans(answer):
        key = _key(span.link)
        if not span.link.embed and key in resolved and key not in keys:
            keys.add(key)
            seen.append(resolved[key])
    return seen


def _with_supports(citation: Citation, supports: list[Support]) -> Citation:
    unique = list({s.sentence: s for s in supports}.values())
    return Citation(
        citation.link,
        citation.state,
        citation.path,
        citation.heading,
        citation.reason,
        tuple(unique),
        citation.added,
        citation.grounded,
    )


def _resolve(
    link: Link,
    index: LinkIndex,
    notes: Mapping[str, ParsedNote],
    pending_slugs: Collection[str],
    shown: Sequence[Excerpt],
    evidence: Sequence[Evidence],
    tokenize: Tokenizer,
    use_note_text: bool,
) -> tuple[Citation, list[Evidence]]:
    """The link's state, and the texts its claims are judged against."""
    path = resolve_link(link.target, index) if link.target else None
    if path is None:
        if link.target and slug(link.target) in set(pending_slugs):
            return Citation(
                link,
                "pending",
                reason="a review candidate in queries/ has this name",
                grounded=False,
            ), []
        why = "same-note link: an answer has no headings" if not link.target else "no such note"
        return Citation(link, "broken", reason=why, grounded=False), []
    note = notes.get(path)
    if note is None:
        return Citation(
            link, "broken", path=path, reason=f"{path} could not be read", grounded=False
        ), []
    heading_text: str | None = None
    section = note.body
    if link.heading:
        found = heading_matches(link.heading, note.headings)
        if found is None:
            return Citation(
                link,
                "broken",
                path=path,
                reason=f"no heading {link.heading!r} in {path}",
                grounded=False,
            ), []
        heading_text = found.text
        section = section_text(note, found.line)
    if link.block and link.block.casefold() not in {b.casefold() for b in note.block_ids}:
        return Citation(
            link, "broken", path=path, reason=f"no block ^{link.block} in {path}", grounded=False
        ), []
    if use_note_text:
        text = section if section.strip() else note.body
        return (
            Citation(link, "resolved", path=path, heading=heading_text),
            prepare_evidence([text], tokenize, [_header(note.title, heading_text)]),
        )
    mine = [i for i, e in enumerate(shown) if e.path == path]
    if heading_text:
        wanted = normalize_name(heading_text)
        under = [
            i for i in mine if (h := shown[i].heading) is not None and normalize_name(h) == wanted
        ]
        mine = under or mine
    if not mine:
        return Citation(
            link,
            "resolved",
            path=path,
            heading=heading_text,
            reason="its text was not among the excerpts given to the model",
            grounded=False,
        ), []
    return Citation(link, "resolved", path=path, heading=heading_text), [evidence[i] for i in mine]


def _judge_claim(
    claim: Claim,
    content: list[str],
    lenient: bool,
    question: str,
    resolved: Mapping[tuple[str, str | None, str | None], Citation],
    link_evidence: Mapping[tuple[str, str | None, str | None], list[Evidence]],
    supports: dict[tuple[str, str | None, str | None], list[Support]],
    shown: Sequence[Excerpt],
    evidence: Sequence[Evidence],
) -> ClaimCheck:
    """The claim against its cited excerpts; else against every excerpt (a link is added)."""
    sentence = claim.judged
    cited = tuple(dict.fromkeys(link_target_text(c.link) for c in claim.links))
    best: Support | None = None
    source = None
    for cl in claim.links:
        key = _key(cl.link)
        found = best_judgement(
            sentence, content, link_evidence.get(key, []), lenient=lenient, question=question
        )
        citation = resolved[key]
        support = (
            found[1] if found else Support(sentence, "unsupported", 0.0, missing=(), span=None)
        )
        supports[key].append(support)
        if best is None or (_RANK[support.verdict], support.coverage) > (
            _RANK[best.verdict],
            best.coverage,
        ):
            best, source = support, link_target_text(citation.link)
    if best is not None and best.verdict == "supported":
        return ClaimCheck(
            sentence,
            "supported",
            best.coverage,
            cited,
            source,
            None,
            best.span,
            anchor=claim.anchor,
        )
    other = best_judgement(sentence, content, evidence, lenient=lenient, question=question)
    if other is not None and other[1].verdict == "supported":
        excerpt = shown[other[0]]
        link = excerpt.cite_as[2:-2]
        return ClaimCheck(
            sentence,
            "supported",
            other[1].coverage,
            cited,
            link,
            link,
            other[1].span,
            reason=_added_reason(cited),
            anchor=claim.anchor,
        )
    if best is None:
        best = other[1] if other else Support(sentence, "unsupported", 0.0)
        source = shown[other[0]].cite_as[2:-2] if other and best.verdict != "unsupported" else None
    reason = _flag_reason(claim, resolved, best)
    return ClaimCheck(
        sentence, best.verdict, best.coverage, cited, source, None, best.span, reason, claim.anchor
    )


def _added_reason(cited: tuple[str, ...]) -> str:
    if cited:
        return "the cited page does not say this; link added by askvault"
    return "uncited by the model; link added by askvault"


def _flag_reason(
    claim: Claim,
    resolved: Mapping[tuple[str, str | None, str | None], Citation],
    best: Support,
) -> str:
    states = [resolved[_key(c.link)] for c in claim.links]
    missing = f" ({', '.join(best.missing)} not in the excerpt)" if best.missing else ""
    if best.opposite:
        missing = " (the excerpt seems to say the opposite)"
    if states and all(not c.grounded for c in states):
        return (
            "the cited page's text was not given to the model"
            if any(c.state == "resolved" for c in states)
            else "the cited link is broken"
        )
    if best.verdict == "weak":
        return "only partly found in the excerpts" + missing
    return "no excerpt given to the model says this" + missing


def _added_citation(target: str, index: LinkIndex, shown: Sequence[Excerpt]) -> Citation:
    page, _, heading = target.partition("#")
    excerpt = next(e for e in shown if e.cite_as == f"[[{target}]]")
    link = Link(target=page, heading=heading or None, raw=f"[[{target}]]")
    return Citation(link, "resolved", path=excerpt.path, heading=excerpt.heading, added=True)


def check_support(sentence: str, note_text: str, tokenize: Tokenizer = simple_tokens) -> Support:
    """Compare one sentence with one text: supported, weak or unsupported, with the span."""
    (content,) = content_tokens([sentence], tokenize)
    found = best_judgement(sentence, content, prepare_evidence([note_text], tokenize))
    return found[1] if found else Support(sentence, "unsupported", 0.0)


def section_text(note: ParsedNote, heading_line: int) -> str:
    """The body lines from the heading at file line `heading_line` to the next one not deeper."""
    lines = note.body.split("\n")
    level = next((h.level for h in note.headings if h.line == heading_line), 6)
    end_line = next(
        (h.line for h in note.headings if h.line > heading_line and h.level <= level), None
    )
    first = heading_line - note.body_start_line
    last = (end_line - note.body_start_line) if end_line else len(lines)
    return "\n".join(lines[max(first, 0) : last])


def render_broken_as_text(answer: str, report: CitationReport) -> str:
    """The answer with every link that is not published (broken, or backing nothing)
    replaced by its plain text (label, else target), and every embed shown as code."""
    return annotate_answer(answer, report, add_links=False, flag=False)


def _as_text(span: CitedLink) -> str:
    """A broken link as text: an embed keeps its syntax as code (the model was showing how
    to write one), a link becomes its label or target."""
    if span.link.embed:
        return f"`{span.link.raw}`" if "`" not in span.link.raw else span.link.raw.lstrip("!")
    return span.link.label or link_target_text(span.link)


def annotate_answer(
    answer: str,
    report: CitationReport,
    *,
    add_links: bool = True,
    flag: bool = True,
    keep_links: bool = True,
) -> str:
    """The answer as published: links that are not `published` as plain text, embeds as
    code (an answer never transcludes), the links askvault added (after their claims), and
    a marker after each claim nothing the model saw supports. With `keep_links` False
    (a reply that is not published as an answer) every link is plain text and none is
    added: the note then adds no edge to the graph."""
    broken = {_key(c.link) for c in report.citations if not c.published}
    edits: list[tuple[int, int, str]] = []
    for span in link_spans(answer):
        if span.link.embed:
            # An answer never transcludes a note: an embed is shown as the syntax it is.
            edits.append((span.start, span.end, _as_text(span)))
        elif _key(span.link) in broken or not keep_links:
            edits.append((span.start, span.end, _as_text(span)))
    for check in report.claims:
        if add_links and keep_links and check.added:
            edits.append((check.anchor, check.anchor, f" [[{check.added}]]"))
        elif flag and check.flagged:
            edits.append((check.anchor, check.anchor, f" {FLAG_MARKER}"))
    out = answer
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + text + out[end:]
    return out
