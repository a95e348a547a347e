"""Does an excerpt say what a sentence of the answer says? Lexical, explainable, strict.

Pure. A sentence is compared with the text that reached the model (an excerpt, or
the cited section) by:
- content words under the word index's own stemming (the caller hands in the
  tokenizer, so "embedding" in the answer meets "embeds" in the note as the index
  would): the share of the sentence's distinct content words found in the excerpt;
- numbers, which must appear in the excerpt exactly (`7 days` is not `30 days`);
- names (capitalised or mixed-case words not opening the sentence, `CloudFlare`,
  `AES-256`), which must appear in the excerpt; a missing name caps the verdict at weak.
Verdicts: supported (>= SUPPORTED_MIN_SHARE of the content words and numbers, or all
but one of three or more; no number or name missing), weak (>= WEAK_MIN_SHARE, or
supported but a name missing), unsupported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from askvault.core import units
from askvault.core.claims import text_sentences
from askvault.core.query import STOPWORDS, fold
from askvault.records import SupportVerdict

Tokenizer = Callable[[Sequence[str]], list[list[str]]]

SUPPORTED_MIN_SHARE = 0.7
WEAK_MIN_SHARE = 0.4
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?![\w])")
_NAME = re.compile(r"\b[^\W\d_]*[A-Z][\w-]*[A-Z0-9][\w-]*\b|\b[A-Z][a-z]+\b")
# Words an answer uses about the notes themselves, not about the world.
_META_WORDS = frozenset(
    """note notes excerpt excerpts provided mention mentions mentioned according say says
    state states stated also yes no can could may might should must just only use using
    used""".split()
)


@dataclass(frozen=True)
class Support:
    """How well one sentence is backed by one text: the verdict and why."""

    sentence: str
    verdict: SupportVerdict
    coverage: float
    span: str | None = None
    missing: tuple[str, ...] = ()
    opposite: bool = False  # the excerpt has the same words with the other polarity
    # The fewest consecutive sentences of the window that hold what was found: the words
    # of the note the claim rests on, copied from the excerpt (never from the reply).
    quote: str | None = None


def simple_tokens(texts: Sequence[str]) -> list[list[str]]:
    """A tokenizer without stemming (folded words), for callers without the word index."""
    return [_WORD.findall(fold(t)) for t in texts]


@dataclass(frozen=True)
class Window:
    """A few consecutive sentences of an evidence text (with its header's words)."""

    text: str
    tokens: frozenset[str]
    numbers: frozenset[str]
    compact: str  # casefolded, without white space: where code spans are looked for
    # The window's sentences (headings left out) with their own tokens, for the quote.
    sentences: tuple[str, ...] = ()
    sentence_tokens: tuple[frozenset[str], ...] = ()


@dataclass(frozen=True)
class Evidence:
    """A text the model saw, prepared once for many comparisons: cut into windows of
    WINDOW_SENTENCES consecutive sentences, so that a claim is backed by one place of the
    excerpt, not by words scattered over it ("the Standard plan ... 1 month")."""

    text: str
    windows: tuple[Window, ...]
    folded_words: frozenset[str] = frozenset()  # of the whole text and its header: names


WINDOW_SENTENCES = 3


def prepare_evidence(
    texts: Sequence[str],
    tokenize: Tokenizer,
    headers: Sequence[str] | None = None,
    pages: Sequence[str] | None = None,
) -> list[Evidence]:
    """Tokenize each text's sentences once (one tokenizer call for all of them).

    `headers` (one per text: the page title and heading the model saw above the excerpt)
    count in every window of their text. Names are looked for in every text of the same
    entry of `pages` (all the excerpts of one page the model saw).
    """
    headers = list(headers) if headers is not None else [""] * len(texts)
    sentences = [text_sentences(t) or [t] for t in texts]
    flat = [h for h in headers] + [x for group in sentences for x in group]
    tokens = tokenize([units.spaced(x) for x in flat]) if flat else []
    header_tokens, rest = tokens[: len(headers)], tokens[len(headers) :]
    out = []
    cursor = 0
    for text, header, head_tokens, group in zip(texts, headers, header_tokens, sentences):
        own = rest[cursor : cursor + len(group)]
        cursor += len(group)
        windows = []
        for i in range(max(1, len(group) - WINDOW_SENTENCES + 1)):
            kept = [
                (x, frozenset(ts))
                for x, ts in zip(group[i : i + WINDOW_SENTENCES], own[i : i + WINDOW_SENTENCES])
                if not x.startswith("#")
            ]
            part = " ".join(x for x, _ in kept) or " ".join(group[i : i + WINDOW_SENTENCES])
            words = frozenset(t for ts in own[i : i + WINDOW_SENTENCES] for t in ts)
            raw = " ".join(group[i : i + WINDOW_SENTENCES])
            windows.append(
                Window(
                    part,
                    words | frozenset(head_tokens),
                    _numbers(raw),
                    _compact(raw),
                    tuple(x for x, _ in kept),
                    tuple(ts for _, ts in kept),
                )
            )
        out.append(
            Evidence(
                text,
                tuple(windows),
                frozenset(_WORD.findall(fold(units.spaced(text) + " " + header))),
            )
        )
    if pages is not None:
        by_page: dict[str, set[str]] = {}
        for page, ev in zip(pages, out):
            by_page.setdefault(page, set()).update(ev.folded_words)
        out = [replace(ev, folded_words=frozenset(by_page[page])) for page, ev in zip(pages, out)]
    return out


def content_tokens(
    sentences: Sequence[str], tokenize: Tokenizer, *, given: str = ""
) -> list[list[str]]:
    """Each sentence's distinct content tokens (see `claim_contents`)."""
    return [tokens for tokens, _ in claim_contents(sentences, tokenize, given=given)]


def claim_contents(
    sentences: Sequence[str], tokenize: Tokenizer, *, given: str = ""
) -> list[tuple[list[str], bool]]:
    """Each sentence's distinct content tokens, and whether it only echoes `given`.

    Stopwords and meta words are dropped, and the words of `given` (the question) too when
    at least two others (or numbers) remain: echoing the question claims nothing, what the sentence adds
    to it must be in the excerpt. A sentence that adds less than that is an echo: judged on
    all its words, strictly (`The wifi password is stored in the excerpt.`).
    """
    if not sentences:
        return []
    words = sorted(STOPWORDS | _META_WORDS)
    stop_tokens, given_tokens, *rest = tokenize(
        [" ".join(words), units.spaced(given), *(units.spaced(s) for s in sentences)]
    )
    stop = set(stop_tokens) | set(words)
    asked = set(given_tokens)
    out = []
    for sentence, tokens in zip(sentences, rest):
        content = list(dict.fromkeys(t for t in tokens if t not in stop and not t.isdigit()))
        new = [t for t in content if t not in asked]
        if (
            len(new) + len(asked_items_only(sentence, given)) >= 2
        ):  # a number is news: "kept 7 days"
            out.append((new, False))
        else:
            out.append((content, bool(asked & set(content))))
    return out


# A yes or no, and the pieces of a negation as tokens come out ("can't": "can", "t"): the
# stance a restatement of a yes/no question takes, not words it adds.
_STANCE_TOKENS = frozenset(
    "yes no not never cannot t don doesn isn aren won didn wasn weren hasn haven couldn "
    "shouldn wouldn".split()
)


def restates(sentence: str, content: Sequence[str], asked: Collection[str], question: str) -> bool:
    """Whether a sentence (with its content tokens) only says the question again: besides
    a yes, a no or a negation, every content word is one of the question's `asked` tokens,
    and it holds no number or code the question does not ("Yes, there is a student
    discount on Sync." or "No, you are not doing something wrong." to the question they
    answer). One word more is an answer ("Compost heaps need air."), and so is a value."""
    return not asked_items_only(sentence, question) and set(content) - _STANCE_TOKENS <= set(asked)


def asked_items_only(sentence: str, question: str) -> tuple[str, ...]:
    """The sentence's numbers and code spans that the question does not hold: those it
    must find in the notes ("like 10 lines" taken from the question is no claim)."""
    given = set(exact_items(question)) if question else set()
    return tuple(i for i in exact_items(sentence) if i not in given)


def judge(
    sentence: str,
    content: Sequence[str],
    evidence: Evidence,
    *,
    lenient: bool = True,
    question: str = "",
) -> Support:
    """Compare one sentence (with its content tokens) with one evidence text: the verdict
    of its best window.

    Exact items - numbers and `code spans` - count as content too and must all be found in
    the window; when there is one and all are found, half the words suffice (the syntax or
    figure is the claim: "use the `task-todo:` operator"). A sentence of three or more
    content items may miss one of them (a paraphrase: "every 5 minutes" for "a minimum of
    5 minutes") and still be supported, unless `lenient` is off (an echo of the question).
    Names must appear in the excerpts of the page (a name taken from the question too: the
    page must be about it); a negation the question does not bring must agree with the
    window's.
    """
    exact = exact_items(sentence)
    # A number or code the question holds ("like 10 lines") counts where a window has it,
    # and is not required where one does not: saying it again claims nothing.
    given = frozenset(exact) - frozenset(asked_items_only(sentence, question))
    if not content and not exact:
        return Support(sentence, "unsupported", 0.0)
    missing_names = tuple(
        n
        for n in _names(sentence)
        if not all(p in evidence.folded_words for p in _WORD.findall(fold(n)))
    )
    check_polarity = not _negated(question)
    claimed = units.values(sentence)  # "100 euros" is not backed by "$100"
    best: Support | None = None
    for window in evidence.windows:
        needed = tuple(x for x in exact if x not in given or _exact_found(x, window))
        support = _judge_window(
            sentence,
            content,
            needed,
            missing_names,
            window,
            lenient,
            check_polarity,
            units.conflicting(claimed, window.text),
        )
        if best is None or (_RANK[support.verdict], support.coverage) > (
            _RANK[best.verdict],
            best.coverage,
        ):
            best = support
    return best or Support(sentence, "unsupported", 0.0)


_RANK = {"supported": 2, "weak": 1, "unsupported": 0}


def _judge_window(
    sentence: str,
    content: Sequence[str],
    exact: tuple[str, ...],
    missing_names: tuple[str, ...],
    window: Window,
    lenient: bool,
    check_polarity: bool,
    conflicts: tuple[str, ...] = (),
) -> Support:
    found = [t for t in content if t in window.tokens]
    # A value the window gives with another unit is as missing as one it does not give.
    missing_exact = tuple(x for x in exact if not _exact_found(x, window)) + conflicts
    items = len(content) + len(exact)
    hits = len(found) + len(exact) - len(missing_exact)
    share = hits / items
    verdict: SupportVerdict
    if missing_exact or share < WEAK_MIN_SHARE:
        verdict = "unsupported"
    elif (
        share >= SUPPORTED_MIN_SHARE
        or lenient
        and items >= 3
        and items - hits <= 1
        or exact
        and share >= EXACT_MIN_SHARE
    ) and not missing_names:
        verdict = "supported"
    else:
        verdict = "weak"
    span = window.text if verdict != "unsupported" else None
    quote = _quote(window, found, exact) if span is not None else None
    opposite = False
    if (
        span is not None
        and verdict == "supported"
        and check_polarity
        and (negates(sentence, found) != negates(span, found))
    ):
        # "You can recover the password" against "you cannot recover it": same words,
        # opposite claim.
        verdict, opposite = "weak", True
    return Support(
        sentence, verdict, round(share, 3), span, missing_exact + missing_names, opposite, quote
    )


def _quote(window: Window, found: Sequence[str], exact: Sequence[str]) -> str | None:
    """The fewest consecutive sentences of `window` that hold every found word and exact
    item the window's sentences hold (the header's words count in none)."""
    if not window.sentences:
        return None
    wanted_words = {t for t in found if any(t in ts for ts in window.sentence_tokens)}
    wanted_exact = [x for x in exact if any(_in_sentence(x, s) for s in window.sentences)]
    best: tuple[int, int] | None = None
    count = len(window.sentences)
    for first in range(count):
        for last in range(first, count):
            words = set().union(*window.sentence_tokens[first : last + 1])
            text = " ".join(window.sentences[first : last + 1])
            if wanted_words <= words and all(_in_sentence(x, text) for x in wanted_exact):
                if best is None or last - first < best[1] - best[0]:
                    best = (first, last)
                break
    if best is None:
        return window.text
    return " ".join(window.sentences[best[0] : best[1] + 1])


def _in_sentence(item: str, sentence: str) -> bool:
    if item.startswith("`"):
        return _compact(item.strip("`")) in _compact(sentence)
    return item in _numbers(sentence)


EXACT_MIN_SHARE = 0.5
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def exact_items(sentence: str) -> tuple[str, ...]:
    """Numbers outside code, and code spans: what must be found exactly."""
    codes = [c.strip() for c in _CODE_SPAN.findall(sentence) if c.strip()]
    outside = _CODE_SPAN.sub(" ", sentence)
    return tuple(dict.fromkeys([*sorted(_numbers(outside)), *(f"`{c}`" for c in codes)]))


def _exact_found(item: str, window: Window) -> bool:
    if item.startswith("`"):
        return _compact(item.strip("`")) in window.compact
    return item in window.numbers


def _compact(text: str) -> str:
    return "".join(text.casefold().split())


def best_judgement(
    sentence: str,
    content: Sequence[str],
    evidence: Sequence[Evidence],
    *,
    lenient: bool = True,
    question: str = "",
) -> tuple[int, Support] | None:
    """The evidence text that backs the sentence best, and how; None without evidence."""
    best: tuple[int, Support] | None = None
    for i, ev in enumerate(evidence):
        support = judge(sentence, content, ev, lenient=lenient, question=question)
        if best is None or (_RANK[support.verdict], support.coverage) > (
            _RANK[best[1].verdict],
            best[1].coverage,
        ):
            best = (i, support)
    return best


MIN_CLAIM_ITEMS = 2
# Words that name the shape of an answer, not what it says: "The setting is X. The key is
# X." say one thing twice (a small model echoing the prompt's list of what to give).
SHAPE_WORDS = frozenset(
    "setting settings key keys step steps name names number numbers answer option value "
    "way excerpt excerpts give gives given".split()
)


def said_items(sentence: str, content: Sequence[str], shape: Collection[str]) -> set[str]:
    """What a claim says, for telling a repeat: its content tokens and exact items, less
    `shape` (SHAPE_WORDS as the word index tokenizes them)."""
    return {t for t in content if t not in shape} | set(exact_items(sentence))


def is_claim(sentence: str, content: Sequence[str]) -> bool:
    """True when the sentence says something checkable: at least MIN_CLAIM_ITEMS content
    words and numbers ("For example:", "Yes." are not judged, neither backed nor flagged)."""
    return len(content) + len(exact_items(sentence)) >= MIN_CLAIM_ITEMS


def _numbers(text: str) -> frozenset[str]:
    """The numbers of `text`, also those written against their unit ("50mb")."""
    return frozenset(n.replace(",", "") for n in _NUMBER.findall(units.spaced(text)))


def _names(sentence: str) -> list[str]:
    """Capitalised words that are not the sentence's first word, and mixed-case words."""
    words = list(_NAME.finditer(sentence))
    first = _WORD.search(sentence)
    names = []
    for match in words:
        word = match.group(0)
        if first is not None and match.start() == first.start() and word[1:].islower():
            continue
        if fold(word) in STOPWORDS or fold(word) in _META_WORDS:
            continue
        names.append(word)
    return list(dict.fromkeys(names))


def unknown_subjects(
    sentences: Sequence[str], question: str, texts: Sequence[str]
) -> tuple[str, ...]:
    """Names the sentences share with the question that none of `texts` holds.

    A reply that names what was asked about ("the Excalidraw plugin", asked in lower case
    and written capitalised by the model) when no excerpt the model saw mentions it may be
    about something the notes do not cover, whatever else it copies from them; the caller
    asks the word index whether any note does. Only names of the question count: a name
    the reply brings alone caps that claim at weak instead.
    """
    asked = set(_WORD.findall(fold(units.spaced(question))))
    seen: set[str] = set()
    for text in texts:
        seen.update(_WORD.findall(fold(units.spaced(text))))
    out = []
    for sentence in sentences:
        for name in _names(sentence):
            parts = _WORD.findall(fold(name))
            if parts and all(p in asked for p in parts) and not all(p in seen for p in parts):
                out.append(name)
    return tuple(dict.fromkeys(out))


_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|neither|nor|cannot|without|unable|isn't|aren't|"
    r"doesn't|don't|didn't|can't|won't|wouldn't|shouldn't|couldn't|wasn't|weren't|"
    r"hasn't|haven't|non)\b|n't\b",
    re.IGNORECASE,
)


# How many words after a negation it reaches ("cannot be recovered", "is not supported yet").
NEGATION_SCOPE_WORDS = 4


def negates(text: str, tokens: Sequence[str]) -> bool:
    """True when a negation in `text` bears on one of `tokens` (index stems): one of the
    NEGATION_SCOPE_WORDS words after it starts like one of them. A "not" elsewhere in a
    long excerpt sentence says nothing about the claim."""
    stems = {t[:4] for t in tokens if len(t) >= 3}
    if not stems:
        return False
    words = _WORD.findall(fold(text.replace("’", "'")).replace("n't", " not"))
    for i, word in enumerate(words):
        if _NEGATION.fullmatch(word) or word in ("cannot", "can't"):
            if any(w[:4] in stems for w in words[i + 1 : i + 1 + NEGATION_SCOPE_WORDS]):
                return True
    return False


def _negated(text: str) -> bool:
    return _NEGATION.search(text.replace("’", "'")) is not None
