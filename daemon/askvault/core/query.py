"""User text -> safe full-text queries.

Nothing the user types is ever read as FTS5 syntax: every term is a quoted
string (`"` doubled inside), so `C++`, `sqlite-vec`, `title:`, `NEAR(`, `AND`
and unbalanced quotes are plain words. Terms are OR-ed: BM25 then ranks pages
holding more (and rarer) terms first, which suits questions in natural language.
The AND of the same terms (`require_all`) lets search rank only the chunks holding
every word when there are enough of them (services/retrieval/search.py).
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Scripts written without spaces between words; matched through the trigram index.
_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]+"
)
_WORD = re.compile(r"\w+")


@functools.cache
def _cjk_or_rest() -> re.Pattern[str]:
    # Only for text holding CJK; compiled on first use (~6 ms, not at every import).
    return re.compile(_CJK.pattern[:-1] + "|" + "[^" + _CJK.pattern[1:-2] + "]+")


MAX_QUERY_TERMS = 32

# Function words that match nearly every note; dropped unless nothing else is left.
STOPWORDS = frozenset(
    """a an and are as at be by can do does for from how i if in into is it its me my of on or
    our so than that the their them then there these this to was we were what when where which
    who why will with would you your""".split()
)


def fold(text: str) -> str:
    """Casefold and strip diacritics, as FTS5 `unicode61 remove_diacritics 2` does."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def query_terms(text: str) -> list[str]:
    """The searchable words of `text`, folded, in first-seen order, stopwords dropped
    (unless the query has nothing else). CJK runs are left to `cjk_grams`."""
    words = _WORD.findall(fold(_CJK.sub(" ", text)))
    unique = list(dict.fromkeys(words))
    content = [w for w in unique if w not in STOPWORDS]
    return (content or unique)[:MAX_QUERY_TERMS]


def quote_term(term: str) -> str:
    """One FTS5 string literal: the term in double quotes, inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def fts_match_expression(text: str, *, require_all: bool = False) -> str | None:
    """A MATCH expression for the word index: any of the words of `text` (OR), or, with
    `require_all`, every one of them (AND); None if `text` has no searchable word."""
    terms = query_terms(text)
    if not terms:
        return None
    return (" AND " if require_all else " OR ").join(quote_term(term) for term in terms)


def has_cjk(text: str) -> bool:
    """True if `text` holds CJK (or kana/hangul) characters."""
    return _CJK.search(text) is not None


def cjk_grams(text: str) -> tuple[list[str], list[str]]:
    """(trigrams, short runs) of the CJK parts of `text`.

    The trigram index matches substrings of three characters or more; a run of
    one or two characters (a common two-character word such as 東京) can only be
    found by a substring scan, so it is returned apart.
    """
    trigrams: list[str] = []
    short: list[str] = []
    for run in _CJK.findall(text):
        if len(run) < 3:
            short.append(run)
            continue
        trigrams.extend(run[i : i + 3] for i in range(len(run) - 2))
    return list(dict.fromkeys(trigrams))[:MAX_QUERY_TERMS], list(dict.fromkeys(short))


def trigram_match_expression(trigrams: list[str]) -> str | None:
    """A MATCH expression for the trigram index (OR of quoted trigrams), or None."""
    if not trigrams:
        return None
    return " OR ".join(quote_term(gram) for gram in trigrams)


def snippet(text: str, terms: list[str], width: int = 200) -> str:
    """About `width` characters of `text` around the first query term found, on one line."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    folded = fold(flat)
    # fold() can change lengths (ligatures); positions are only a hint, so clamp them.
    # The word index stems, so a hit may hold another form of the word: look for its root.
    hits = [
        pos
        for term in terms
        if term
        for pos in (folded.find(term), folded.find(_root(term)))
        if pos >= 0
    ]
    start = max(0, min(min(hits) - width // 4, len(flat) - width)) if hits else 0
    piece = flat[start : start + width].strip()
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(flat) else "")


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s")


def _root(term: str) -> str:
    """`term` without one common English suffix (a hint for placing snippets, not a stemmer)."""
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 4:
            return term[: -len(suffix)]
    return term


def bm25_tokens(text: str) -> list[str]:
    """Tokens for rank-bm25: folded words; each CJK character is a token of its own."""
    folded = fold(text)
    tokens: list[str] = []
    for piece in re.findall(r"\w+", folded):
        if _CJK.search(piece):
            tokens.extend(_cjk_or_rest().findall(piece))
        else:
            tokens.append(piece)
    return tokens
