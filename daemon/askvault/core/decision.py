"""Whether a checked reply is published as an answer, and why not: every reason in one place.

Pure. The answer path gathers the evidence (the citation report, the nearest chunk's
distance and the cut-off in force, the question's subjects that no note mentions) and
`decide` turns it into a status and, when a reply is withheld for a reason its claims
do not show, the sentence that tells the user why. The reasons, in the order they are
asked (the first that holds decides):

- the report could not be computed: the model's own word is the only signal (a reply
  that refuses is a no-answer, anything else is published with the report's error);
- the reply refuses;
- its yes or no to a yes/no question is the opposite of what the notes say about it;
- none of its claims is supported by what the model saw;
- the question is far from every chunk of the vault (the cut-off in force: the setting
  `queries.max_distance`, the one measured for the model, or the vault's calibration),
  once nearly every chunk has a vector (`abstention.GATE_MIN_SHARE`);
- checked for meaning (`queries.verify = judge`), the passages its claims rest on do not
  answer the question as asked;
- asked again with the excerpts reversed (`queries.verify = again`), the second reply
  rests on none of the sentences the first does and gives other values;
- the reply names what the question asks about, and no note mentions it;
- the reply begins with an excerpt's number or a copied excerpt header, not with words
  of its own (`prompt.opens_with_citation`): it pastes a passage instead of answering;
- the claim that answers (its first that does more than say the question again) is
  unsupported (not merely weak), only what follows it is backed; or it has no such claim;
- fewer than half of its claims are supported: most of what it says is not in the notes;
- asked which question the reply answers (`core/own_question.py`), the model names one
  far from the user's: the reply answers something else (`another_question`, asked only
  of a reply that would otherwise be published); or, for a follow-up, one closer to an
  earlier question of the thread than to the follow-up: the reply answers that question
  again (`earlier_question`);
- for a follow-up, none of the pages the reply links to is among the pages the earlier
  turn's search found first (`off_thread`, the last reason of `decide`, so before the
  own-question check): it answers from notes the thread never reached, about something
  else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from askvault.core.abstention import gate_applies, is_no_answer, too_far
from askvault.core.answer_parts import cited_paths
from askvault.core.citations import CitationReport, quote_text
from askvault.core.inert import inert_line
from askvault.core.links import page_link
from askvault.core.prompt import opens_with_citation
from askvault.core.verification import Verdict
from askvault.records import AnswerOutcome

QUOTED_MAX_CHARS = 200  # a note's sentence quoted in a reason

# Why a reply was or was not published (the `ask --json` document's `decided_by`).
DecisionReason = Literal[
    "supported",  # answered: at least one claim is supported
    "unchecked",  # answered: the report could not be computed
    "refusal",  # no-answer: the reply says the notes lack it
    "nothing-supported",  # no-answer: no claim is supported by the excerpts
    "answer-unsupported",  # no-answer: the claim that answers is unsupported, only others are
    "too-far",  # no-answer: the question is far from every note
    "unknown-subject",  # no-answer: the reply is about what no note mentions
    "judged-wrong",  # no-answer: the passages do not answer the question as asked
    "reversed",  # no-answer: the reply's yes or no is the opposite of what the notes say
    "unsteady",  # no-answer: asked again, the model's answer rested on other sentences
    "pasted-excerpt",  # no-answer: the reply opens with an excerpt's number, not an answer
    "mostly-unsupported",  # no-answer: fewer than half of the reply's claims are supported
    "another-question",  # no-answer: the question the reply answers is not the one asked
    "earlier-question",  # no-answer: a follow-up's reply answers an earlier question again
    "off-thread",  # no-answer: a follow-up's reply links only to pages off the thread
]


@dataclass(frozen=True)
class Decision:
    """A reply's status, what decided it, and the user-facing reason when it is withheld
    for more than its claims show (then every link of the reply is shown as text)."""

    status: AnswerOutcome
    decided_by: DecisionReason
    reason: str = ""

    @property
    def published(self) -> bool:
        """True when the reply is the answer (status `answered`)."""
        return self.status == "answered"

    @property
    def keeps_links(self) -> bool:
        """False when the reply is withheld for a reason of its own: its links then add no
        edge to the graph, and no link is added to it."""
        return not self.reason


def decide(
    reply: str,
    report: CitationReport,
    *,
    nearest_distance: float | None = None,
    cutoff: float | None = None,
    cutoff_from: str = "of `queries.max_distance`",
    vector_share: float | None = None,
    unknown_subjects: Sequence[str] = (),
    judged: Verdict | None = None,
    steady: bool | None = None,
    thread_pages: Sequence[str] = (),
) -> Decision:
    """The status of a checked reply (see the module docstring for the reasons, in order).

    `cutoff_from` says where `cutoff` comes from (abstention.Cutoff.reason_words).
    `vector_share` is the share of chunks with a vector of the model searched: below
    abstention.GATE_MIN_SHARE the distance withholds nothing (`gate_applies`).
    `unknown_subjects` are the question's names the reply repeats that no excerpt and no
    note of the vault mentions (`support.unknown_subjects`, then the word index).
    `thread_pages` are a follow-up's thread's pages (`off_thread`; none for a first
    question)."""
    if report.error is not None:
        if is_no_answer(reply):
            return Decision("no-answer", "refusal")
        return Decision("answered", "unchecked")
    if is_no_answer(reply):
        return Decision("no-answer", "refusal")
    if report.reversed_by is not None:
        return Decision(
            "no-answer",
            "reversed",
            "Your notes say the opposite of the reply's yes or no: "
            f"“{inert_line(quote_text(report.reversed_by), QUOTED_MAX_CHARS)}”, so the reply is "
            "not published as an answer.",
        )
    if report.supported_claims == 0:
        return Decision("no-answer", "nothing-supported")
    if gate_applies(vector_share) and too_far(nearest_distance, cutoff):
        assert nearest_distance is not None and cutoff is not None  # too_far checked both
        return Decision(
            "no-answer",
            "too-far",
            f"Nothing in your notes is close to the question: the nearest passage is at "
            f"cosine distance {nearest_distance:.2f}, beyond the {cutoff:.2f} {cutoff_from}, "
            "so the reply is not published as an answer.",
        )
    if judged == "no":
        return Decision(
            "no-answer",
            "judged-wrong",
            "Checked for meaning, the passages of your notes that the reply rests on do not "
            "answer the question as asked, so the reply is not published as an answer.",
        )
    if steady is False:
        return Decision(
            "no-answer",
            "unsteady",
            "Asked again with the excerpts in another order, the model answered from other "
            "sentences of your notes, so the reply is not published as an answer.",
        )
    if unknown_subjects:
        named = ", ".join(f"“{n}”" for n in unknown_subjects)
        return Decision(
            "no-answer",
            "unknown-subject",
            f"Your notes do not cover what the question asks about: no note mentions "
            f"{named}, so the reply is not published as an answer.",
        )
    decision = _answering(reply, report)
    if decision.published:
        return off_thread(cited_paths(report), thread_pages) or decision
    return decision


def _answering(reply: str, report: CitationReport) -> Decision:
    """The last reasons, about how the reply answers: it begins by pasting an excerpt, it
    only says the question again, or the claim that answers is unsupported."""
    if opens_with_citation(reply):
        return Decision(
            "no-answer",
            "pasted-excerpt",
            "The reply begins with an excerpt's number, not with an answer: it copies a "
            "passage of your notes instead of answering the question, so it is not "
            "published as an answer.",
        )
    lead = report.lead
    if lead is None:
        return Decision(
            "no-answer",
            "answer-unsupported",
            "The reply only says the question again: none of its sentences answers it, so "
            "it is not published as an answer.",
        )
    if lead.verdict == "unsupported":  # a weak lead, its words partly found, is published
        return Decision(
            "no-answer",
            "answer-unsupported",
            f"What the reply answers, “{inert_line(lead.sentence.strip(), QUOTED_MAX_CHARS)}”, "
            "is not found in the passages of your notes the model saw (only what follows "
            "it is), so the reply is not published as an answer.",
        )
    backed, claims = report.supported_claims, len(report.claims)
    if 2 * backed < claims:
        return Decision(
            "no-answer",
            "mostly-unsupported",
            f"Most of what the reply says is not found in the passages of your notes the "
            f"model saw (only {backed} of its {claims} sentences "
            f"{'is' if backed == 1 else 'are'}), so it is not "
            "published as an answer.",
        )
    return Decision("answered", "supported")


def another_question(own_question: str) -> Decision:
    """The decision on a reply that would be published, when the question it answers (the
    model's `own_question`, from the reply alone) is far from the one asked."""
    return Decision(
        "no-answer",
        "another-question",
        "The reply reads as the answer to another question, "
        f"“{inert_line(own_question, QUOTED_MAX_CHARS)}”, not to the one asked, so it is "
        "not published as an answer.",
    )


def earlier_question(own_question: str) -> Decision:
    """The decision on a follow-up's reply that would be published, when the question it
    answers (the model's `own_question`) is closer to an earlier question of the thread
    than to the follow-up: it answers that question again, not the one asked now."""
    return Decision(
        "no-answer",
        "earlier-question",
        "The reply reads as the answer to an earlier question of this note, "
        f"“{inert_line(own_question, QUOTED_MAX_CHARS)}”, not to the follow-up, so it is "
        "not published as an answer.",
    )


def _page_names(paths: Sequence[str]) -> list[str]:
    """Each vault path named as askvault links it (`core.links.page_link`): its note's
    name, or its path without `.md` where two of them share a file name
    ("Sync/Settings", "Publish/Settings")."""
    files = [p.rsplit("/", 1)[-1].lower() for p in paths]
    shared = {name for name in files if files.count(name) > 1}
    return [page_link(p, None, shared)[2:-2] for p in paths]


def off_thread(cited: Sequence[str], thread_pages: Sequence[str]) -> Decision | None:
    """The decision on a follow-up's reply that would be published when none of the pages
    it links to (`cited`, vault paths) is among `thread_pages`, the pages the thread's
    earlier turn reached: it rests on notes the earlier question never led to ("what
    about on Android?" after the quick switcher, answered with the Android page's
    widgets), so it answers something else. None when the rule does not apply: nothing
    cited, no thread pages known (an earlier search found nothing), or a page on it."""
    if not cited or not thread_pages or set(cited) & set(thread_pages):
        return None
    named = ", ".join(f"“{inert_line(name, QUOTED_MAX_CHARS)}”" for name in _page_names(cited))
    return Decision(
        "no-answer",
        "off-thread",
        f"The reply rests only on notes the earlier question did not lead to ({named}): it "
        "reads as an answer about something else, not as a follow-up, so it is not "
        "published as an answer. Ask it as a new question if it is one.",
    )
