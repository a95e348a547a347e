"""Yes or no: does a reply's yes or no agree with what the notes say about the question?

Pure. Small models answer "Can I ...?" with "Yes, you can ..." whatever the page says,
and echo the question's words, so a lexical check finds the reply's words in an excerpt
that says the opposite ("Individual password protection ... is currently not supported").
For a yes/no question, the sentence of the excerpts that shares most of the question's
words is what the notes say about it; whether a negation bears on those words is its
stance. A reply that says the other thing reverses the page; one that says the same is
backed by that sentence, however its other words are put ("No, you cannot have nested
properties" against "Obsidian doesn't support nested properties").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from askvault.core.support import Evidence, negates

# A clause that asks yes or no opens with an auxiliary (English, German, French, Spanish,
# Italian, Portuguese, Dutch).
_ASKS = re.compile(
    r"^(?:can|could|is|are|was|were|does|do|did|will|would|should|shall|may|might|must|"
    r"has|have|had|am|kann|kannst|können|ist|sind|gibt|hat|haben|darf|soll|muss|wird|"
    r"est-ce|puis-je|peut-on|peux-je|peut|puedo|puede|se\s+puede|hay|es|posso|pode|"
    r"è|kan|is\s+het)\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[,;:?!.]\s*|\s+(?:and|but|or)\s+", re.IGNORECASE)
_YES = re.compile(r"^\W*(?:yes|yeah|yep|correct|ja|oui|sí|si|sim)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(?:no|nope|nein|non|não|nee)\b(?![-\w])", re.IGNORECASE)
# How much of the question the sentence must share to speak for the notes.
MIN_SHARED_WORDS = 2
MIN_SHARED_SHARE = 0.4
# A sentence that refuses speaks for the notes with this many of the question's words.
REFUSAL_SHARED_WORDS = 3


# What says "no" plainly: a small model's yes is the common error, and only a sentence
# that refuses in so many words can overrule it (a bare "not" near the words is too
# often about something else: "which don't use spaces to separate words").
_REFUSES = re.compile(
    r"\b(?:not\s+(?:currently\s+|yet\s+)?(?:supported|possible|able|available|allowed)|"
    r"(?:isn't|aren't|is\s+not|are\s+not)\s+(?:currently\s+|yet\s+)?"
    r"(?:supported|possible|available|allowed)|can't|cannot|can\s+not|unable\s+to|"
    r"no\s+way\s+to|(?:doesn't|don't|does\s+not|do\s+not)\s+(?:currently\s+|yet\s+)?support)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class NoteStance:
    """What the notes say about a yes/no question: the sentence, where it stands, whether
    it says yes (no negation bears on the question's words in it), and whether it says
    no in so many words ("... is not supported", "can't")."""

    sentence: str
    evidence: int  # the index of its text among the excerpts
    says_yes: bool
    shared: tuple[str, ...]
    refuses: bool = False


def asks_yes_or_no(question: str) -> bool:
    """True when a clause of `question` asks yes or no ("my tag has two words, can i use
    a space in it")."""
    return any(_ASKS.match(part.strip()) for part in _CLAUSE.split(question) if part.strip())


def reply_says_yes(sentence: str) -> bool | None:
    """True for a sentence that opens with yes, False with no, None otherwise."""
    if _YES.match(sentence):
        return True
    if _NO.match(sentence):
        return False
    return None


def note_stance(question_words: Collection[str], evidence: Sequence[Evidence]) -> NoteStance | None:
    """The excerpt sentence that speaks for the notes on `question_words` (the question's
    content tokens), and its stance on them: of the sentences sharing enough of them, one
    that refuses in so many words, else the one sharing the most. A refusal needs only
    REFUSAL_SHARED_WORDS of them, not the share: a page's "Individual password protection
    for published notes is currently not supported" answers a long "can i password protect
    only one page of my published site and leave the rest public", whose site-password
    sentence shares more words (docs/decisions.md, "A yes or no against what the notes say:
    the stance rule")."""
    wanted = set(question_words)
    if not wanted:
        return None
    best: NoteStance | None = None
    seen: set[str] = set()
    for index, ev in enumerate(evidence):
        for window in ev.windows:
            for sentence, tokens in zip(window.sentences, window.sentence_tokens):
                if sentence in seen:
                    continue
                seen.add(sentence)
                shared = sorted(wanted & tokens)
                enough = len(shared) >= MIN_SHARED_WORDS and (
                    len(shared) >= MIN_SHARED_SHARE * len(wanted)
                )
                refuses = bool(_REFUSES.search(sentence.replace("’", "'")))
                if not enough and not (refuses and len(shared) >= REFUSAL_SHARED_WORDS):
                    continue
                better = best is None or (refuses, len(shared)) > (best.refuses, len(best.shared))
                if better:
                    says_yes = not refuses and not negates(sentence, shared)
                    best = NoteStance(sentence, index, says_yes, tuple(shared), refuses)
    return best
