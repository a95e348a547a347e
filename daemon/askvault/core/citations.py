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
from dataclasses import dataclass, replace
from functools import cached_property

from askvault.core.abstention import is_refusal
from askvault.core.claims import CitedLink, Claim, link_spans, split_claims, strip_links
from askvault.core.links import (
    LinkIndex,
    heading_matches,
    link_words,
    normalize_name,
    resolve_link,
    unique_targets,
)
from askvault.core.qualifiers import platform_mismatch, value_mismatch
from askvault.core.stance import NoteStance, asks_yes_or_no, note_stance, reply_says_yes
from askvault.core.support import (
    SHAPE_WORDS,
    Evidence,
    Support,
    Tokenizer,
    best_judgement,
    claim_contents,
    content_tokens,
    is_claim,
    prepare_evidence,
    restates,
    said_items,
    simple_tokens,
)
from askvault.records import CitationState, Link, ParsedNote, SupportVerdict

__all__ = [
    "Citation",
    "CitationReport",
    "ClaimCheck",
    "Excerpt",
    "QuoteNote",
    "Support",
    "annotate_answer",
    "check_citations",
    "check_support",
    "link_spans",
    "link_target_text",
    "quote_notes",
    "quote_text",
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

    @cached_property
    def support(self) -> SupportVerdict | None:
        """The best verdict over the citing sentences, or None when not checked (computed
        once: a link a long reply repeats has thousands of them)."""
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
    # The words of the note it rests on (a supported claim): copied from the excerpt.
    quote: str | None = None
    start: int = 0  # where the claim's words start in the answer (a marker goes there)
    # The start offsets of the links the model put on this claim, and of those among them
    # whose page supports it (a link is published where it backs its claim).
    link_starts: tuple[int, ...] = ()
    backed_by: tuple[int, ...] = ()
    # It only says the question again, with a yes or no at most ("Yes, there is a student
    # discount on Sync."): it is not what answers the question (see CitationReport.lead).
    echo: bool = False

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
    # Sentences that only say again what an earlier one said ("The setting is X. The key
    # is X."): (start, end) in the answer, left out of what is published.
    repeats: tuple[tuple[int, int], ...] = ()
    # The excerpt sentence that says the opposite of the reply's yes or no (core/stance.py).
    reversed_by: str | None = None

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

    @property
    def lead(self) -> ClaimCheck | None:
        """The claim that answers the question: the reply's first claim that does more than
        say the question again (None when every claim only echoes it). What follows it
        explains or adds to it; a reply is an answer only when this claim is backed."""
        return next((c for c in self.claims if not c.echo), None)


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
    pending_slugs = frozenset(pending_slugs)  # looked up once per link
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
    reversed_by: str | None = None
    stance = _question_stance(question, tokenize, evidence)
    said: set[str] = set()
    shape = set(SHAPE_WORDS) | set(tokenize([" ".join(sorted(SHAPE_WORDS))])[0])
    repeated: dict[int, list[bool]] = {}  # sentence start -> whether each claim repeats
    (asked,) = tokenize([question])
    for claim, (content, echo), size in zip(claims, judged, sizes):
        if is_refusal(claim.sentence):
            refusals += 1
            continue
        if not is_claim(claim.judged, ["_"] * size):
            continue
        items = said_items(claim.judged, content, shape)
        repeated.setdefault(claim.sentence_start, []).append(bool(items) and items <= said)
        said |= items
        if repeated[claim.sentence_start][-1]:
            continue
        check = _judge_claim(
            claim, content, not echo, question, resolved, link_evidence, supports, shown, evidence
        )
        check = replace(check, echo=echo and restates(claim.judged, content, asked, question))
        if stance is not None and not checks:  # the reply's first claim: its yes or no
            check, reversed_by = _with_stance(check, claim, stance, shown)
        if check.added:
            if check.added not in added:
                added[check.added] = _added_citation(check.added, index, shown)
            added_supports.setdefault(check.added, []).append(
                Support(check.sentence, check.verdict, check.coverage, check.span)
            )
        checks.append(check)
    checks = _as_asked(checks, question)
    ordered = [_with_supports(c, supports[_key(c.link)]) for c in _in_order(answer, resolved)]
    ordered += [_with_supports(c, added_supports[t]) for t, c in added.items()]
    return CitationReport(
        tuple(ordered), None, tuple(checks), refusals, _repeats(claims, repeated), reversed_by
    )


def _as_asked(checks: list[ClaimCheck], question: str) -> list[ClaimCheck]:
    """Supported claims that do not answer the question as asked flagged: about another
    platform than the one asked (per claim), or, for a price, no amount of money in any
    of them (core/qualifiers.py)."""
    if not question:
        return checks
    out = []
    for check in checks:
        if check.verdict == "supported":
            backing = f"{check.source or ''}: {check.quote or check.span or ''}"
            reason = platform_mismatch(question, check.sentence, backing)
            if reason:
                check = _flag(check, reason)
        out.append(check)
    reason = value_mismatch(question, [c.sentence for c in out if c.verdict == "supported"])
    if reason:
        out = [_flag(c, reason) if c.verdict == "supported" else c for c in out]
    return out


def _flag(check: ClaimCheck, reason: str) -> ClaimCheck:
    """`check` flagged for `reason`: it backs nothing, and no link is added for it."""
    return replace(
        check, verdict="unsupported", added=None, backed_by=(), quote=None, reason=reason
    )


def _question_stance(
    question: str, tokenize: Tokenizer, evidence: Sequence[Evidence]
) -> NoteStance | None:
    """What the excerpts say about a yes/no question (None for any other question)."""
    if not question or not asks_yes_or_no(question) or not evidence:
        return None
    (words,) = content_tokens([question], tokenize)
    return note_stance(words, evidence)


def _with_stance(
    check: ClaimCheck, claim: Claim, stance: NoteStance, shown: Sequence[Excerpt]
) -> tuple[ClaimCheck, str | None]:
    """The first claim against what the notes say of the yes/no question: a yes that the
    notes refuse in so many words is flagged (and reported); a no that agrees with such a
    refusal is supported by that sentence."""
    says_yes = reply_says_yes(claim.sentence)
    if says_yes is None:
        return check, None
    if says_yes and stance.refuses:
        flagged = replace(
            check,
            verdict="unsupported",
            added=None,
            backed_by=(),
            quote=None,
            span=stance.sentence,
            reason="the excerpt says the opposite",
        )
        return flagged, stance.sentence
    if check.verdict == "supported" or says_yes or not stance.refuses:
        # Only a no is backed this way, by a sentence that refuses in so many words: a
        # sentence that shares the question's words and has no negation is no "yes" (on
        # the fresh held-out set, three such promotions published three wrong yeses).
        return check, None
    link = shown[stance.evidence].cite_as[2:-2]
    cites = tuple(c.start for c in claim.links if link_target_text(c.link) == link)
    promoted = replace(
        check,
        verdict="supported",
        source=link,
        added=None if cites else link,
        backed_by=cites,
        span=stance.sentence,
        quote=stance.sentence,
        reason="" if cites else _added_reason(check.cited),
        echo=False,  # the no the notes say in so many words: it is the answer
    )
    return promoted, None


def _repeats(
    claims: Sequence[Claim], repeated: Mapping[int, Sequence[bool]]
) -> tuple[tuple[int, int], ...]:
    """The sentences every checked claim of which repeats an earlier one, with the links
    that close them."""
    ends: dict[int, int] = {}  # sentence start -> the end of its last claim or link
    for c in claims:
        ends[c.sentence_start] = max(ends.get(c.sentence_start, 0), c.anchor, c.sentence_end)
    return tuple((start, ends[start]) for start, flags in repeated.items() if flags and all(flags))


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
        if link.target and slug(link.target) in pending_slugs:
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
    starts = tuple(c.start for c in claim.links)
    best: Support | None = None
    source = None
    backed: list[int] = []
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
        if support.verdict == "supported" and citation.grounded:
            backed.append(cl.start)
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
            quote=best.quote,
            backed_by=tuple(backed),
            anchor=claim.anchor,
            start=claim.start,
            link_starts=starts,
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
            quote=other[1].quote,
            anchor=claim.anchor,
            start=claim.start,
            link_starts=starts,
        )
    if best is None:
        best = other[1] if other else Support(sentence, "unsupported", 0.0)
        source = shown[other[0]].cite_as[2:-2] if other and best.verdict != "unsupported" else None
    reason = _flag_reason(claim, resolved, best)
    return ClaimCheck(
        sentence,
        best.verdict,
        best.coverage,
        cited,
        source,
        None,
        best.span,
        reason,
        anchor=claim.anchor,
        start=claim.start,
        link_starts=starts,
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
    dropped or shown as its text, and every embed shown as code."""
    return annotate_answer(answer, report, add_links=False, flag=False)


@dataclass(frozen=True)
class QuoteNote:
    """A footnote of a published answer: the words of the note a claim rests on."""

    number: int
    quote: str
    source: str  # `Page#Heading`, the link it was found under


def quote_notes(report: CitationReport) -> tuple[QuoteNote, ...]:
    """One footnote per distinct (quote, source) of the supported claims, in answer order."""
    notes: dict[tuple[str, str], QuoteNote] = {}
    for check in report.claims:
        key = _quote_key(check)
        if key is not None and key not in notes:
            notes[key] = QuoteNote(len(notes) + 1, key[0], key[1])
    return tuple(notes.values())


def _quote_key(check: ClaimCheck) -> tuple[str, str] | None:
    if check.verdict != "supported" or not check.quote or not check.source:
        return None
    return (check.quote, check.source)


def quote_text(text: str) -> str:
    """A note's sentence as a quote: links as their text (a quote adds no graph edge),
    embeds as code and images as their alt text (a quote never transcludes or fetches),
    block ids and callout markers dropped ("[!warning] Individual password protection ..."
    quotes the sentence, not the box's syntax)."""
    text = _CALLOUT_MARK.sub("", _IMAGE.sub(lambda m: m.group(1), text))
    out = []
    cursor = 0
    for span in link_spans(text):
        out.append(text[cursor : span.start])
        out.append(_as_code(span) if span.link.embed else link_words(span.link))
        cursor = span.end
    out.append(text[cursor:])
    return " ".join(_BLOCK_ID.sub("", "".join(out)).split())


_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
# A callout's type marker where a quoted sentence starts: `[!note]`, `[!tip]-`, `[!faq]+`.
_CALLOUT_MARK = re.compile(r"(?:^|(?<=\n))[ \t>]*\[![\w-]+\][+-]?[ \t]*")
_BLOCK_ID = re.compile(r"(?<!\S)\^[A-Za-z0-9-]+(?=\s|$)")
# Between two links of one group: white space, commas and "and".
_LINK_GLUE = re.compile(r"^(?:[\s,;]|and\b|&)*$", re.IGNORECASE)
# Matched at a link's end, what says it closes a claim; before its start, what says the
# sentence reads it as a word, and what says it opens a line. Each looks only at the few
# characters beside the link (a long reply has thousands of links: no scan of the text
# before each).
_CLOSES_CLAIM = re.compile(r"[ \t]*(?:$|\n|[.,;!?)\]]|!?\[\[)")
_LINE_OPENING = re.compile(r"[ \t]*(?:>[ \t]*)*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?")
_OPENING_CHARS = frozenset(" \t>-*+.)0123456789")


def _as_code(span: CitedLink) -> str:
    """An embed as the syntax it is (the model was showing how to write one)."""
    return f"`{span.link.raw}`" if "`" not in span.link.raw else span.link.raw.lstrip("!")


# Words after which a link is the noun the sentence needs, even where it closes the claim:
# "add the property to your [[Properties]]." reads "your Properties", not "your".
_WANTS_A_NOUN = frozenset(
    """a an the your my our their its his her this that these those of in into to from with
    for on by via use using see open called named""".split()
)
_LAST_WORD = re.compile(r"(\w+)[ \t]*$")


def _unlinked(answer: str, span: CitedLink) -> tuple[int, int, str]:
    """The edit that takes a link out of the published text: a link in citation position
    (closing a claim, beside other links, after a full stop) goes, with the space before
    it; one the sentence reads as a word (after a word, not closing the claim, or after a
    word that wants a noun: `_WANTS_A_NOUN`), or one that opens a line, becomes its text."""
    before = _LAST_WORD.search(answer, max(0, span.start - 40), span.start)
    reads_as_word = _word_before(answer, span.start) and (
        not _CLOSES_CLAIM.match(answer, span.end)
        or (before is not None and before.group(1).casefold() in _WANTS_A_NOUN)
    )
    if reads_as_word or _opens_line(answer, span.start) or span.link.label:
        return (span.start, span.end, link_words(span.link))
    start, end = span.start, span.end
    for mark in ("**", "__", "*", "_"):  # emphasis around nothing but the link goes too
        if answer[start - len(mark) : start] == mark and answer[end : end + len(mark)] == mark:
            start, end = start - len(mark), end + len(mark)
            break
    while start > 0 and answer[start - 1] in " \t":
        start -= 1
    return (start, end, "")


def _word_before(text: str, end: int) -> bool:
    """Whether text[:end] ends (or ends before a last line break) with a word, then closing
    emphasis, code, brackets and spaces (`\\w[*_`)\\]]*[ \\t]*$`), or with a word, spaces
    and an opening emphasis ("under **[[Settings]] → Files & Links**")."""
    for stop in (end, end - 1) if text[end - 1 : end] == "\n" else (end,):
        pos = stop
        while pos > 0 and text[pos - 1] in " \t":
            pos -= 1
        run = pos
        while run > 0 and text[run - 1] in "*_`)]":
            run -= 1
        if "_" in text[run:pos] or (run > 0 and _is_word_char(text[run - 1])):
            return True
        if pos == stop and run < pos and set(text[run:pos]) <= {"*"}:  # "word **[[Link]]"
            gap = run
            while gap > 0 and text[gap - 1] in " \t":
                gap -= 1
            if gap < run and gap > 0 and _is_word_char(text[gap - 1]):
                return True
    return False


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _opens_line(text: str, end: int) -> bool:
    """Whether text[:end] after its last line break holds only spaces, quote markers and
    a list marker (or ends with the line break itself)."""
    if end == 0 or text[end - 1] == "\n":
        return True
    start = end
    while start > 0 and text[start - 1] in _OPENING_CHARS:
        start -= 1
    if start > 0 and text[start - 1] != "\n":
        return False
    return _LINE_OPENING.fullmatch(text, start, end) is not None


def _spaces_after(text: str, end: int) -> int:
    """How many spaces (not line breaks) follow `end`."""
    pos = end
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    return pos - end


def _marker_position(answer: str, start: int) -> int:
    """Where a claim's visible words begin: after the spaces and the punctuation a link
    split left before them."""
    pos = start
    while pos < len(answer) and answer[pos] in " \t,;:)":
        pos += 1
    return pos


def annotate_answer(
    answer: str,
    report: CitationReport,
    *,
    add_links: bool = True,
    flag: bool = True,
    keep_links: bool = True,
    quotes: bool = False,
) -> str:
    """The answer as published.

    - A link stays where it backs the claim it closes (or is pending); elsewhere it is
      taken out, or shown as its text where the sentence reads it as a word (a broken or
      unsupported link is never published as a link); the same link twice in a row once,
      and claims that end at one place get one added link and footnote there.
    - An embed is shown as code: an answer never transcludes.
    - The links askvault added go after their claims; with `quotes`, a footnote `[^n]`
      after each supported claim points to the words of the note it rests on
      (`quote_notes`).
    - A marker opens each claim nothing the model saw supports.
    With `keep_links` False (a reply that is not published as an answer) every link is
    taken out and none is added: the note then adds no edge to the graph."""
    by_key = {_key(c.link): c for c in report.citations}
    backed = {start for check in report.claims for start in check.backed_by}
    in_claims = {start for check in report.claims for start in check.link_starts}
    # A repeated sentence goes with the space before it (a sentence starts there), or, at
    # the start of a line, with the spaces after it.
    edits: list[tuple[int, int, str]] = [
        (
            start,
            end + (_spaces_after(answer, end) if answer[start - 1 : start] in ("", "\n") else 0),
            "",
        )
        for start, end in report.repeats
    ]
    last_kept: CitedLink | None = None
    for span in link_spans(answer):
        if span.link.embed:
            edits.append((span.start, span.end, _as_code(span)))
            continue
        citation = by_key.get(_key(span.link))
        if citation is None or not keep_links:
            keep = False
        elif citation.state == "pending":
            keep = True
        elif span.start in in_claims:
            keep = span.start in backed
        else:
            keep = citation.published
        repeated = (
            last_kept is not None
            and _key(last_kept.link) == _key(span.link)
            and _LINK_GLUE.match(answer[last_kept.end : span.start]) is not None
        )
        if keep and not repeated:
            last_kept = span
            continue
        edits.append(_unlinked(answer, span))
    numbers = {(n.quote, n.source): n.number for n in quote_notes(report)} if quotes else {}
    edits += _claim_marks(
        answer, report, numbers, add_links=add_links and keep_links, footnotes=keep_links, flag=flag
    )
    return _apply(answer, edits)


def _claim_marks(
    answer: str,
    report: CitationReport,
    numbers: dict[tuple[str, str], int],
    *,
    add_links: bool,
    footnotes: bool,
    flag: bool,
) -> list[tuple[int, int, str]]:
    """The insertions after each claim: the link askvault added, its footnote (`numbers`:
    the quote's footnote by quote and source) or, for a claim nothing supports, the flag
    opening it. Claims that end at one place get one added link and footnote there."""
    edits: list[tuple[int, int, str]] = []
    placed: set[tuple[int, str]] = set()
    for check in report.claims:
        marks: list[str] = []
        if add_links and check.added:
            marks.append(f" [[{check.added}]]")
        key = _quote_key(check)
        if footnotes and key in numbers:
            marks.append(f"[^{numbers[key]}]")
        elif flag and check.flagged:
            at = _marker_position(answer, check.start)
            edits.append((at, at, f"{FLAG_MARKER} "))
        for mark in marks:
            if (check.anchor, mark) not in placed:
                placed.add((check.anchor, mark))
                edits.append((check.anchor, check.anchor, mark))
    return edits


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, replacement) applied; insertions at one place keep
    their order, and come before a replacement that starts there."""
    out: list[str] = []
    cursor = 0
    ordered = sorted(enumerate(edits), key=lambda e: (e[1][0], e[1][1] != e[1][0], e[0]))
    for _, (start, end, replacement) in ordered:
        if start < cursor:  # overlaps an edit already applied
            continue
        out.append(text[cursor:start])
        out.append(replacement)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)
