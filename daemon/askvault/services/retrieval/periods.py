"""A search narrowed to a period: the words of the query read (core/periods.py), or the
`--since`/`--until` bounds, turned into a filter on the notes' days (adapters/date_store.py).

The period's words are taken out of what is searched: "last week" is no subject of the
notes, and requiring those words would rank the notes that say "week" first. A query
with no period words is searched exactly as before (and dateparser is never loaded).
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime

from askvault.adapters import date_store
from askvault.adapters.db import Connection
from askvault.core.periods import Period, find_period, period_from_bounds
from askvault.errors import AskvaultError
from askvault.records import PeriodRequest, PeriodScope, SearchFilters


def scope_search(
    conn: Connection,
    query: str,
    filters: SearchFilters | None,
    request: PeriodRequest | None,
) -> tuple[SearchFilters | None, PeriodScope | None]:
    """The filters narrowed to the period `request` finds (with `query`'s words when it
    has no bounds), and that period; (filters, None) when there is none. Raises
    AskvaultError for a bound that is no date."""
    request = request or PeriodRequest()
    now = request.now or datetime.now()
    period = read_period(query, request, now)
    if period is None:
        return filters, None
    since, until = period.bounds()
    base = filters or SearchFilters()
    narrowed = dataclasses.replace(base, since=since, until=until)
    notes = date_store.notes_in_period(conn, since, until, include_derived=base.include_derived)
    searched = without_words(query, period.words) if not (request.since or request.until) else query
    return narrowed, PeriodScope(period.words, since, until, notes, searched)


def read_period(query: str, request: PeriodRequest, now: datetime) -> Period | None:
    """The period of explicit bounds, else of the words of `request.words` (the first
    text that names one) or of the query (if asked), else None."""
    if request.since or request.until:
        try:
            return period_from_bounds(request.since, request.until, now)
        except ValueError as exc:
            raise AskvaultError(
                str(exc), "give a date such as 2024-01-05, 2024-01 or 2023"
            ) from None
    if not request.from_words:
        return None
    for text in request.words or (query,):
        period = find_period(text, now)
        if period is not None:
            return period
    return None


def without_words(query: str, words: str) -> str:
    """`query` without the period's words (and a preposition left hanging before them);
    the query itself when nothing would be left."""
    if not words:
        return query
    pattern = re.compile(r"\s*".join(re.escape(w) for w in words.split()), re.IGNORECASE)
    rest = pattern.sub(" ", query, count=1)
    rest = re.sub(
        r"\b(?:in|from|of|on|during|for|im|vom|von|en|de|du|des|del|da|dal|della|van)\s*(?=[?.!,]|$)",
        "",
        rest.strip(),
        flags=re.IGNORECASE,
    )
    rest = re.sub(r"\s+([?.!,;:])", r"\1", " ".join(rest.split()))
    return rest if re.search(r"\w", rest) else query


def period_line(scope: PeriodScope) -> str:
    """What the answer note says of the period: the words, the days, the notes in it."""
    notes = f"{scope.notes} note" + ("" if scope.notes == 1 else "s")
    return f"Searched the notes of “{scope.words}” ({scope.describe()}): {notes} fell in it."


def empty_period_reason(scope: PeriodScope) -> str:
    """Why a question about a period with no notes gets no answer."""
    return (
        f"No note of your vault falls in “{scope.words}” ({scope.describe()}), so there is "
        "nothing to answer from. A note's day is its daily-note name, a date in its file "
        "name, its `date:` or `created:` property, else its file time (`askvault status`)."
    )
