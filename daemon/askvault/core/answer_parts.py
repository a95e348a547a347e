"""The parts of an answer note built from an answer's values: supporting pages, caveats,
passages, the retrieval trace, the cited pages' wikilinks.

Pure: the evidence pack, the prompt plan and the citation report in, `answer_note`'s
values out (core/answer_note.py renders them). The ledger's raw source paths need the
vault's files, so the answer path finds them and hands them in.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from askvault.core.abstention import GATE_MIN_SHARE, Cutoff, gate_applies
from askvault.core.answer_note import LedgerEntry, Passage, SupportingPage
from askvault.core.citations import CitationReport
from askvault.core.links import page_link
from askvault.core.prompt import PromptPlan
from askvault.records import ContextPack

PASSAGES_SHOWN = 5
PASSAGE_MAX_CHARS = 600


def cited_paths(report: CitationReport) -> list[str]:
    """The paths of the pages the published answer links to, in first-citation order."""
    return list(
        dict.fromkeys(
            c.path for c in report.citations if c.state == "resolved" and c.published and c.path
        )
    )


def page_wikilink(path: str, duplicates: Collection[str] = frozenset()) -> str:
    """`[[name]]` for a vault path; `[[folder/name]]` when its file name is in `duplicates`
    (see `search_store.duplicate_basenames`), as search and the excerpts write it."""
    return page_link(path, None, set(duplicates))


def wikilink_of(pack: ContextPack, path: str, duplicates: Collection[str]) -> str:
    """The page's wikilink as the pack wrote it, else one made from its path."""
    page = next((p for p in pack.pages if p.path == path), None)
    return page.wikilink if page else page_wikilink(path, duplicates)


def supporting_pages(
    pack: ContextPack,
    report: CitationReport,
    grounding: Sequence[str],
    duplicates: Collection[str],
) -> tuple[SupportingPage, ...]:
    """One line per cited page, highest-ranked first, saying why it matters."""
    ranks = {p.path: i for i, p in enumerate(pack.pages)}
    cited = cited_paths(report)
    lines = []
    for path in sorted(cited, key=lambda p: (ranks.get(p, len(ranks)), cited.index(p))):
        page = next((p for p in pack.pages if p.path == path), None)
        verdicts = [c.support for c in report.citations if c.path == path and c.support]
        backed = f"; cited sentences {', '.join(dict.fromkeys(verdicts))}" if verdicts else ""
        if page is None or path not in grounding:
            why = "cited, but its text was not among the excerpts given to the model"
        else:
            headings = [c.heading for c in page.chunks if c.heading]
            where = f" (excerpt under “{headings[0]}”)" if headings else ""
            why = f"ranked #{ranks[path] + 1} of {len(pack.pages)} by retrieval{where}"
        lines.append(SupportingPage(wikilink_of(pack, path, duplicates), why + backed))
    return tuple(lines)


def ledger_entries(
    pack: ContextPack,
    report: CitationReport,
    raw_sources: Mapping[str, Sequence[str]],
    duplicates: Collection[str],
) -> tuple[LedgerEntry, ...]:
    """The `## Sources` entries: each cited page with the raw files found for it."""
    return tuple(
        LedgerEntry(wikilink_of(pack, path, duplicates), tuple(raw_sources.get(path, ())))
        for path in cited_paths(report)
    )


def caveats(
    pack: ContextPack,
    report: CitationReport,
    warnings: Sequence[str],
    status: str,
    unverified: str = "",
) -> tuple[str, ...]:
    """Gaps and doubts worth a line: unreadable pages, degraded search, links shown as
    text and why, links askvault added, an answer that cites nothing, an answer that could
    not be checked for meaning (`unverified`: why)."""
    found = list(warnings)
    if unverified:
        found.append(f"The answer could not be checked for meaning ({unverified}).")
    if pack.degraded:
        found.append(f"Search ran in degraded mode: {pack.degraded}")
    if report.error:
        found.append(f"Citations could not be checked: {report.error}")
    for c in report.citations:
        if c.state == "broken":
            found.append(f"The link to `{c.target}` is broken ({c.reason}); it is not a link here.")
        elif c.state == "resolved" and not c.grounded:
            found.append(
                f"`{c.target}` was cited but its text was not given to the model; "
                "it is not a link here."
            )
        elif c.state == "resolved" and c.support != "supported" and not c.added:
            found.append(
                f"`{c.target}` does not say what the sentence citing it says; it is not a link here."
            )
    added = [c for c in report.claims if c.added]
    if added:
        found.append(
            f"askvault added {len(added)} citation(s) the model left out "
            "(marked in the citation report)."
        )
    if status == "answered" and not report.error and not report.citations:
        found.append("The answer cites no page: treat it with care.")
    return tuple(dict.fromkeys(found))


def passages(pack: ContextPack) -> tuple[Passage, ...]:
    """The best chunk of each of the first pages, shown when there is no answer."""
    shown = []
    for page in pack.pages:
        for chunk in page.chunks[:1]:
            text = chunk.text.strip()
            if len(text) > PASSAGE_MAX_CHARS:
                text = text[: PASSAGE_MAX_CHARS - 1].rstrip() + "…"
            # A quoted `![[embed]]` would transclude the other note into this one.
            shown.append(Passage(page.wikilink, chunk.heading, text.replace("![[", "\\![[")))
        if len(shown) >= PASSAGES_SHOWN:
            break
    return tuple(shown)


def trace_lines(
    pack: ContextPack,
    plan: PromptPlan,
    timings: Mapping[str, float],
    counted_tokens: int | None = None,
    *,
    cutoff: Cutoff | None = None,
) -> tuple[str, ...]:
    """The retrieval trace: pages, excerpts and tokens sent, the nearest distance and the
    cut-off in force, channels, time per stage."""
    prompt = f"prompt ~{plan.prompt_tokens} tokens" + (
        f" ({counted_tokens} counted by the model)" if counted_tokens else ""
    )
    lines = [
        f"{len(pack.pages)} page(s) retrieved; {len(plan.grounding)} sent to the model in "
        f"{len(plan.excerpts)} excerpt(s) (~{plan.used_tokens} of {plan.budget_tokens} "
        f"excerpt tokens, {plan.dropped_chunks} more left out); {prompt}"
    ]
    if pack.degraded:
        lines.append(f"degraded: {pack.degraded}")
    nearest = pack.trace.get("nearest_distance")
    if nearest is not None:
        gate = ""
        if cutoff is not None:
            gate = (
                f"; cut-off {cutoff.value:.2f}, {cutoff.detail}"
                if cutoff.value is not None
                else f"; no cut-off ({cutoff.detail})"
            )
        lines.append(f"nearest passage at cosine distance {nearest:.3f}{gate}")
    share, weight = pack.trace.get("vector_share"), pack.trace.get("vector_weight")
    if share is not None and weight is not None and share < 1.0:
        waits = (
            ""
            if gate_applies(share)
            else f"; the distance cut-off waits for {GATE_MIN_SHARE:.0%} of them"
        )
        lines.append(
            f"vectors for {share * 100:.1f}% of the chunks so far: the vector channel at "
            f"{weight:.2f} of its weight{waits}"
        )
    for i, page in enumerate(pack.pages, 1):
        channels = " + ".join(f"{name} {points:.4f}" for name, points in page.matched)
        sent = "" if page.path in plan.grounding else " (not sent)"
        # Plain names, not links: retrieved pages that were not cited add no graph edges.
        lines.append(
            f"{i}. {page.wikilink[2:-2] if page.wikilink.startswith('[[') else page.title}"
            f"{sent} score {page.score:.4f}" + (f" ({channels})" if channels else "")
        )
    stages = ", ".join(
        f"{k.removesuffix('_s').replace('_', ' ')} {v * 1000:.0f} ms" for k, v in timings.items()
    )
    if stages:
        lines.append(f"time: {stages}")
    return tuple(lines)
