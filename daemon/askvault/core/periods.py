"""The period a question asks about ("last week", "in March", "since 2024-01-05").

Pure: `now` is handed in. Dates themselves are dateparser's (its locale data gives the
month names and the relative phrases of every language, its parser reads the absolute
dates); this module finds where a question speaks of time and turns what it finds into
an inclusive range of days: the week, month or year a phrase names, the words that bound
a range (since, before, between ... and ...), "the last 3 days", early/mid/late. Only
the languages question notes support are read (those of core/abstention.py). A question
with no such words has no period. dateparser and the locale data of the nine languages
are loaded at the first question a process reads (about 0.1 s, once), never at import
(docs/decisions.md, "Periods: dateparser with askvault's range words").
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any, Literal, cast

LANGUAGES = ("en", "de", "fr", "es", "pt", "it", "nl", "zh", "ja")
_CJK = ("zh", "ja")
Unit = Literal["day", "week", "month", "year"]
_UNITS: tuple[Unit, ...] = ("day", "week", "month", "year")

# What bounds a range, per language: the word before a date ("since 2024"), or the pair
# around two dates ("between June and August"). dateparser has no such words. CJK
# languages put them after the date (2023年以来) or between two (3月から5月まで).
_SINCE = {
    "en": r"since|from|after|starting",
    "de": r"seit|ab|nach",
    "fr": r"depuis|après|à partir d[eu']",
    "es": r"desde|después de",
    "pt": r"desde|depois de|a partir de",
    "it": r"da|dal|dalla|dopo|dall'",
    "nl": r"sinds|na|vanaf",
}
_UNTIL = {
    "en": r"before|until|till|up to|by",
    "de": r"vor|bis",
    "fr": r"avant|jusqu'à|jusqu'au|jusqu'en",
    "es": r"antes de|hasta",
    "pt": r"antes de|até",
    "it": r"prima di|prima del|fino a|fino al",
    "nl": r"voor|tot",
}
# Words that start and join a range of two dates: (opening word or '', joining word).
_BETWEEN = {
    "en": (r"between|from", r"and|to|until|till|through|-"),
    "de": (r"zwischen|von|vom", r"und|bis|-"),
    "fr": (r"entre|de|du", r"et|à|au|-"),
    "es": (r"entre|de|desde", r"y|a|al|hasta|-"),
    "pt": (r"entre|de|desde", r"e|a|até|-"),
    "it": (r"tra|fra|da|dal", r"e|a|al|-"),
    "nl": (r"tussen|van", r"en|tot|-"),
    "zh": (r"从|自", r"到|至|-|~"),
    "ja": (r"", r"から|-|~|〜"),
}
_CJK_AFTER = {"since": r"以来|以后|之后|以降|から|起", "until": r"之前|以前|まで|前"}
# "the last 3 days": the words around a count and a unit (the unit words are dateparser's).
_LAST_N = {
    "en": r"(?:last|past|previous)",
    "de": r"(?:letzten|vergangenen)",
    "fr": r"(?:derniers|dernières)",  # after the count: "les 3 derniers jours"
    "es": r"(?:últimos|últimas|pasados|pasadas)",
    "pt": r"(?:últimos|últimas|passados|passadas)",
    "it": r"(?:ultimi|ultime|scorsi|scorse)",
    "nl": r"(?:afgelopen|laatste|voorbije)",
    "zh": r"(?:最近|过去|過去)",
    "ja": r"(?:過去|直近|この)",
}
_PART = {  # early / mid / late, before the date (after it in CJK)
    "en": {
        "early": "early|beginning of|start of",
        "mid": "mid|mid-|middle of",
        "late": "late|end of",
    },
    "de": {"early": "anfang|beginn", "mid": "mitte", "late": "ende"},
    "fr": {"early": "début|debut", "mid": "mi-|milieu", "late": "fin"},
    "es": {
        "early": "principios de|inicios de",
        "mid": "mediados de",
        "late": "finales de|fines de",
    },
    "pt": {"early": "início de|inicio de", "mid": "meados de", "late": "final de|fim de"},
    "it": {"early": "inizio|inizio di", "mid": "metà|metà di", "late": "fine|fine di"},
    "nl": {"early": "begin", "mid": "half|midden", "late": "eind|einde|eind van"},
    "zh": {"early": "初", "mid": "中", "late": "底|末"},
    "ja": {"early": "初め|上旬|初", "mid": "中旬|半ば", "late": "下旬|末"},
}
# Phrases dateparser's locales lack, in the same form as theirs ('<n> <unit> ago').
_EXTRA_RELATIVE = {
    "en": {
        "1 week ago": ["previous week", "past week"],
        "1 month ago": ["previous month"],
        "1 year ago": ["previous year"],
    },
    "de": {
        "1 week ago": [
            "vorige woche",
            "vergangene woche",
            "letzten woche",
            "vergangenen woche",
            "vorigen woche",
        ],
        "1 month ago": ["vorigen monat", "vergangenen monat", "letztem monat"],
        "1 year ago": ["voriges jahr", "vergangenes jahr", "letzten jahr", "vorigen jahr"],
        "0 week ago": ["dieser woche"],
        "0 month ago": ["diesem monat"],
        "0 year ago": ["diesem jahr"],
    },
    "fr": {
        "1 week ago": ["semaine dernière", "semaine passée"],
        "1 month ago": ["mois dernier", "mois passé"],
        "1 year ago": ["année dernière", "an dernier", "année passée"],
        "0 month ago": ["ce mois"],
    },
    "es": {
        "1 week ago": ["semana pasada"],
        "1 month ago": ["mes pasado"],
        "1 year ago": ["año pasado"],
    },
    "pt": {"1 month ago": ["mês passado"], "0 week ago": ["nesta semana"]},
    "it": {
        "1 week ago": ["settimana passata"],
        "1 month ago": ["mese passato"],
        "1 year ago": ["anno passato"],
        "0 year ago": ["questo anno"],
    },
    "nl": {
        "1 week ago": ["afgelopen week"],
        "1 month ago": ["afgelopen maand"],
        "1 year ago": ["afgelopen jaar"],
    },
    "zh": {
        "1 week ago": ["上星期", "上週"],
        "0 week ago": ["这周", "這週", "本星期"],
        "1 month ago": ["上月"],
    },
    "ja": {},
}
_NUMERIC = (
    r"\d{4}-\d{1,2}-\d{1,2}|\d{4}/\d{1,2}/\d{1,2}|\d{1,2}\.\d{1,2}\.\d{4}"
    r"|\d{4}年(?:\d{1,2}月(?:\d{1,2}日)?)?|\d{1,2}月(?:\d{1,2}日)?|\d{4}-\d{2}(?!\d)"
    r"|(?:19|20)\d{2}(?!\d)"
)
_RELATIVE_KEY = re.compile(r"^(?:(\d+) (day|week|month|year) ago|in (\d+) (day|week|month|year))$")


@dataclass(frozen=True)
class Period:
    """An inclusive range of days (None: open on that side) and the words that named it."""

    since: date | None
    until: date | None
    words: str

    def describe(self) -> str:
        """The range as a reader sees it: `2023-07-03 to 2023-07-09`, `since 2024-01-05`."""
        if self.since and self.until:
            if self.since == self.until:
                return self.since.isoformat()
            return f"{self.since.isoformat()} to {self.until.isoformat()}"
        if self.since:
            return f"since {self.since.isoformat()}"
        if self.until:
            return f"until {self.until.isoformat()}"
        return "any time"

    def bounds(self) -> tuple[str | None, str | None]:
        """(since, until) as ISO days, the form the index compares."""
        return (
            self.since.isoformat() if self.since else None,
            self.until.isoformat() if self.until else None,
        )


@dataclass(frozen=True)
class _Term:
    """One time expression found in the question: its place, language and days."""

    start: int
    end: int
    lang: str
    first: date
    last: date
    has_year: bool


def find_period(question: str, now: datetime) -> Period | None:
    """The period `question` asks about, or None when it names none. `now` anchors
    relative words ("last week") and years left out ("in March": the last March that
    has begun)."""
    text = question.lower()
    if not _may_name_time(text):
        return None
    best: Period | None = None
    for lang in LANGUAGES:
        terms = _terms(text, lang, now)
        if not terms:
            continue
        period = _combine(text, lang, terms, now)
        if period and (best is None or len(period.words) > len(best.words)):
            best = period
    if best is None:
        return None
    start = text.find(best.words)
    if not _anchored(best.words) and _dates_an_event(text, start, best, now):
        # "slides at a meeting tomorrow": a time to come dates what the user will do, not
        # notes already written, unless it is tied to notes ("my plan for next week").
        return None
    if not _anchored(best.words) and not _about_notes_of(text, start, len(best.words)):
        # "I deleted a note yesterday, how do I get it back?", "I bought Publish 3 days
        # ago", "what will Obsidian call my note for today": a relative time that dates an
        # event, not the notes asked about.
        return None
    words = question[start : start + len(best.words)] if start >= 0 else best.words
    return Period(best.since, best.until, " ".join(words.split()))


def _about_notes_of(text: str, start: int, length: int) -> bool:
    """Whether a relative time (`text[start:start+length]`) names the notes asked about: the
    question is about what was written ("what did I write last week"), the time belongs to
    a thing ("the plan from 2 weeks ago", "notas de ayer", "先週のノート"), or the query is
    a search of words with no question or person in it ("sourdough starter last week")."""
    if start < 0:
        return True
    before, after = text[:start], text[start + length :]
    return bool(
        _WRITING.search(text)
        or _BELONGS.search(before)
        or after.lstrip().startswith(("の", "的"))
        or not _ASKING.search(before + " " + after)
    )


# A preposition (and article) that ties a time to what comes before it.
_BELONGS = re.compile(
    r"(?:^|\W)(?:from|of|since|during|over|in|within|de|des|du|da|das|do|dos|della|del|dei|"
    r"delle|degli|di|dal|von|vom|seit|aus|van|sinds|uit)"
    r"(?:\s+(?:the|la|le|les|el|los|las|il|lo|der|den|dem|des|het|de|a|o|os|as))?\s*$",
    re.IGNORECASE,
)
# What makes a query a question or a story rather than a search of words: a person or a
# question word, in the question notes' languages (Chinese and Japanese rely on the rules
# above).
_ASKING = re.compile(
    r"\b(?:i|i'm|i've|i'd|me|my|we|our|you|your|how|what|why|when|where|which|who|can|"
    r"could|do|does|did|is|are|was|were|should|will|would|has|have|had|"
    r"ich|mein|meine|wir|wie|was|warum|wann|wo|welche[rsn]?|kann|habe|"
    r"je|j'ai|mon|ma|mes|comment|pourquoi|quand|où|quel(?:le)?s?|"
    r"yo|mi|mis|cómo|qué|cuándo|dónde|puedo|"
    r"eu|meu|minha|como|quando|onde|posso|"
    r"io|mio|mia|come|perché|dove|posso|"
    r"ik|mijn|hoe|wat|waarom|wanneer|waar|kan)\b",
    re.IGNORECASE,
)


# Words that make a question about what was written, in the question notes' languages.
_WRITING = re.compile(
    r"\b(?:(?:my|our|the)\s+notes|notes\s+(?:from|of|since)|wr[io]te|written|writing|"
    r"jott?ed|noted\s+down|diary|diaries|entries|logged|roundups?|meetings?|"
    r"notizen|geschrieben|schrieb|tagebuch|eintr[aä]ge|besprechungen|"
    r"mes\s+notes|[ée]crit(?:e|es|s)?|[ée]crivais|entr[ée]es|r[ée]unions|"
    r"mis\s+notas|escrib[íi]|escrito|diario|entradas|reuniones|"
    r"minhas\s+notas|escrevi|di[aá]rio|reuni[õo]es|"
    r"scritto|scrissi|appunti|riunioni|"
    r"notities|schreef|geschreven|dagboek|vergaderingen)\b"
    r"|笔记|筆記|日记|日記|写了|寫了|会议|會議|書いた|日誌|メモ",
    re.IGNORECASE,
)


def _dates_an_event(text: str, start: int, period: Period, now: datetime) -> bool:
    """Whether a relative time (at `text[start:]`) lies wholly after today and nothing ties
    it to notes: no preposition of belonging or "for" before it ("notes for tomorrow",
    "the plan from next week" are periods; "a meeting tomorrow" is not)."""
    if period.since is None or period.since <= now.date() or start < 0:
        return False
    before = text[:start]
    return not (_BELONGS.search(before) or _FOR.search(before))


_FOR = re.compile(
    r"(?:^|\W)(?:for|für|pour|para|per|voor)(?:\s+(?:the|la|le|el|il|die|de))?\s*$",
    re.IGNORECASE,
)

# A date the question gives as a value, not as the time of the notes it asks about: one
# quoted or in code ('Monday 3 March', `2024-03-15`), one after a word that gives an
# example or a target ("dates like 31.12.2024", "turn that into 2024-12-31", "i want
# 2024-03-15 in my property"), a number that starts a compound ("a 2000-word target"),
# and today's date as a thing ("fill in today's date"). Such questions are about how
# dates are written (templates, properties, the clipper's filters), and narrowing them
# to notes of that day found nothing to answer from.
_QUOTED = re.compile(
    r"`[^`\n]+`|(?<!\w)'[^'\n]+'(?!\w)|\"[^\"\n]+\"|“[^”\n]+”|‘[^’\n]+’|「[^」\n]+」|『[^』\n]+』"
)
_VALUE_BEFORE = re.compile(
    r"(?:^|\W)(?:like|as|into|than|instead\s+of|rather\s+than|e\.g\.|i\.e\.|such\s+as|want|"
    r"wants|shows?|displays?|reads?|becomes?|gives?)\s*[:,]?\s*$",
    re.IGNORECASE,
)
_VALUE_AFTER = re.compile(r"(?:(?<=\d)-[^\W\d_]|(?:'s|’s)?\s+date\b)", re.IGNORECASE)


def _is_value(text: str, start: int, end: int) -> bool:
    """Whether the date at `text[start:end]` is a value the question gives (see
    `_QUOTED`), not a time it asks about."""
    if any(m.start() <= start and end <= m.end() for m in _QUOTED.finditer(text)):
        return True
    return bool(_VALUE_BEFORE.search(text[:start]) or _VALUE_AFTER.match(text, end))


def _anchored(words: str) -> bool:
    """True when the period's words name the calendar (a year, a date, a month name), not
    only a time relative to now."""
    if re.search(_NUMERIC, words):
        return True
    lowered = words.lower()
    return any(
        re.search(rf"(?<!\w){re.escape(month)}(?!\w)", lowered)
        or (lang in _CJK and month in lowered)
        for lang in LANGUAGES
        for month in _vocabulary(lang)["months"]
        if month not in _NOT_MONTHS
    )


# Abbreviations of a month in some language that are words of a relative time in another
# ("3 days ago": "ago" is August in Spanish, Italian and Portuguese).
_NOT_MONTHS = frozenset({"ago"})


def period_from_bounds(since: str | None, until: str | None, now: datetime) -> Period | None:
    """The period of `--since` / `--until` values (a date, `2024-01`, `2023`, or words
    such as `last week`): from the first day of `since` to the last day of `until`.
    Raises ValueError naming a value that is no date."""
    if not since and not until:
        return None
    first = _bound(since, now, "since")[0] if since else None
    last = _bound(until, now, "until")[1] if until else None
    if first and last and first > last:
        raise ValueError(f"since {first.isoformat()} is after until {last.isoformat()}")
    words = " ".join(
        p for p in (f"since {since}" if since else "", f"until {until}" if until else "") if p
    )
    return Period(first, last, words)


def _bound(value: str, now: datetime, name: str) -> tuple[date, date]:
    text = value.strip().lower()
    if re.fullmatch(r"\d{4}", text):  # any year, where a question's words need 19xx/20xx
        return date(int(text), 1, 1), date(int(text), 12, 31)
    for lang in LANGUAGES:
        for term in _terms(text, lang, now):
            if term.start == 0 and term.end >= len(text.rstrip(".")):
                return term.first, term.last
    raise ValueError(f"{name}: {value!r} is not a date (try 2024-01-05, 2024-01 or 'last week')")


# --- finding the expressions ---------------------------------------------------------


def _may_name_time(text: str) -> bool:
    """A cheap first look: a digit, or a word of some language's time vocabulary."""
    return bool(re.search(r"\d", text)) or bool(_trigger().search(text))


@lru_cache(maxsize=1)
def _trigger() -> re.Pattern[str]:
    words: set[str] = set()
    for lang in LANGUAGES:
        vocab = _vocabulary(lang)
        words.update(vocab["relative"])
        words.update(vocab["months"])
        words.update(vocab["units"])
    return _alternation(words, cjk=True)


@lru_cache(maxsize=None)
def _vocabulary(lang: str) -> dict[str, Any]:
    """Month names, relative phrases and unit words of `lang`, from dateparser's locale."""
    from dateparser.languages.loader import default_loader

    info = default_loader.get_locale(lang).info
    return {
        "months": _month_words(info, lang),
        "relative": _relative_words(info, lang),
        "units": _unit_words(info, lang),
    }


def _month_words(info: dict[str, Any], lang: str) -> dict[str, int]:
    """Each month name (and abbreviation) of the locale, to its number 1..12."""
    months: dict[str, int] = {}
    for number, name in enumerate(calendar.month_name[1:], start=1):
        for word in info.get(name.lower(), []):
            word = word.lower().rstrip(".")
            if len(word) >= 3 or lang in _CJK:
                months[word] = number
    return months


def _relative_words(info: dict[str, Any], lang: str) -> dict[str, tuple[int, Unit]]:
    """Each relative phrase of the locale ("yesterday", "last month") to (units back, unit)."""
    relative: dict[str, tuple[int, Unit]] = {}
    phrases: dict[str, list[str]] = dict(info.get("relative-type", {}))
    for key, extra in _EXTRA_RELATIVE.get(lang, {}).items():
        phrases[key] = [*phrases.get(key, []), *extra]
    for key, values in phrases.items():
        match = _RELATIVE_KEY.match(key)
        if not match:
            continue
        if match.group(1):
            back, unit = int(match.group(1)), match.group(2)
        else:
            back, unit = -int(match.group(3)), match.group(4)
        for value in values:
            unit = cast(Unit, unit)
            value = value.lower()
            if len(value) >= 3 or lang in _CJK or value in ("hoy", "ieri", "hier"):
                relative[value] = (back, unit)
    return relative


def _unit_words(info: dict[str, Any], lang: str) -> dict[str, Unit]:
    """Each word of the locale for a unit of time (day, week, month, year) to that unit."""
    units: dict[str, Unit] = {}
    for unit in _UNITS:
        for word in info.get(unit, []):
            word = word.lower()
            if len(word) >= 3 or lang in _CJK:
                units[word] = unit
    return units


def _alternation(words: Iterable[str], *, cjk: bool) -> re.Pattern[str]:
    ordered = sorted(set(words), key=lambda w: (-len(w), w))
    body = "|".join(re.escape(w) for w in ordered)
    if cjk:
        # Latin words need word edges; CJK words have none.
        return re.compile(rf"(?<![\w])(?:{body})(?![\w])|(?:{body})(?=[^\x00-\x7f]|$)")
    return re.compile(rf"(?<![\w'])(?:{body})(?![\w])")


@lru_cache(maxsize=None)
def _patterns(lang: str) -> dict[str, re.Pattern[str]]:
    vocab = _vocabulary(lang)
    edge_l, edge_r = ("", "") if lang in _CJK else (r"(?<![\w'])", r"(?![\w])")
    rel = "|".join(re.escape(w) for w in sorted(vocab["relative"], key=len, reverse=True))
    month = "|".join(re.escape(w) for w in sorted(vocab["months"], key=len, reverse=True))
    unit = "|".join(re.escape(w) for w in sorted(vocab["units"], key=len, reverse=True))
    ago = _ago(lang)
    spaced = r"\s*" if lang in _CJK else r"\s+"
    patterns = {
        "relative": re.compile(f"{edge_l}(?:{rel}){edge_r}") if rel else None,
        # "20 may 2023", "may 20, 2023", "march 2023", "march", "2023-05-20", "3月"
        "absolute": re.compile(
            rf"{edge_l}(?:(?:\d{{1,2}}(?:st|nd|rd|th|\.|er|º)?\s+(?:de\s+|of\s+)?)?(?:{month})"
            rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s+(?:de\s+|of\s+)?\d{{4}})?{edge_r}"
            rf"|{_NUMERIC})"
        )
        if month
        else re.compile(_NUMERIC),
        "last_n": re.compile(
            rf"{edge_l}{_LAST_N[lang]}{spaced}(\d+){spaced}({unit}){edge_r}"
            if lang != "fr"
            else rf"{edge_l}(\d+){spaced}{_LAST_N[lang]}{spaced}({unit}){edge_r}"
        ),
        "ago": re.compile(ago.replace("UNIT", unit)) if ago else None,
    }
    return {k: v for k, v in patterns.items() if v is not None}


def _ago(lang: str) -> str:
    """'3 days ago' in `lang` (UNIT stands for the unit words)."""
    return {
        "en": r"(?<![\w])(\d+)\s+(UNIT)\s+ago(?![\w])",
        "de": r"(?<![\w])vor\s+(\d+)\s+(UNIT)(?![\w])",
        "fr": r"(?<![\w])il\s+y\s+a\s+(\d+)\s+(UNIT)(?![\w])",
        "es": r"(?<![\w])hace\s+(\d+)\s+(UNIT)(?![\w])",
        "pt": r"(?<![\w])há\s+(\d+)\s+(UNIT)(?![\w])",
        "it": r"(?<![\w])(\d+)\s+(UNIT)\s+fa(?![\w])",
        "nl": r"(?<![\w])(\d+)\s+(UNIT)\s+geleden(?![\w])",
        "zh": r"(\d+)\s*(UNIT)前",
        "ja": r"(\d+)\s*(UNIT)前",
    }.get(lang, "")


def _terms(text: str, lang: str, now: datetime) -> list[_Term]:
    """Every time expression of `lang` in `text`, longest first where they overlap."""
    found: list[_Term] = []
    taken: list[tuple[int, int]] = []
    patterns = _patterns(lang)
    today = now.date()
    vocab = _vocabulary(lang)

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e in taken)

    for kind in ("last_n", "ago", "relative", "absolute"):
        pattern = patterns.get(kind)
        if pattern is None:
            continue
        for match in pattern.finditer(text):
            a, b = match.span()
            if a == b or not free(a, b):
                continue
            days = _days(kind, match, lang, vocab, today, now)
            if days is None:
                continue
            if kind == "absolute" and not _is_date_context(text, match, lang):
                continue
            if _is_value(text, a, b):
                continue
            found.append(
                _Term(a, b, lang, days[0], days[1], bool(re.search(r"\d{4}", match.group(0))))
            )
            taken.append((a, b))
    return sorted(found, key=lambda t: t.start)


def _days(
    kind: str, match: re.Match[str], lang: str, vocab: dict[str, Any], today: date, now: datetime
) -> tuple[date, date] | None:
    if kind == "relative":
        back, unit = vocab["relative"][match.group(0)]
        return _unit_range(_shift(today, unit, -back), unit)
    if kind == "last_n":
        count, unit = int(match.group(1)), vocab["units"][match.group(2)]
        return _shift(today, unit, -count), today
    if kind == "ago":
        count, unit = int(match.group(1)), vocab["units"][match.group(2)]
        return _unit_range(_shift(today, unit, -count), unit)
    return _parse_absolute(match.group(0), lang, now)


def _is_date_context(text: str, match: re.Match[str], lang: str) -> bool:
    """A month name alone ("May I ...", "march on") or a year alone ("the 2020 election",
    "windows 2000") is a date only after a word that introduces one (in, of, since,
    between, early ...); a month with a number, a day and a CJK date always are."""
    words = match.group(0)
    if re.search(r"\d", words) and not re.fullmatch(r"\d{4}", words):
        return True
    if lang in _CJK:  # a year is 2023年 there (matched as such), never the digits alone
        return not re.fullmatch(r"\d{4}", words)
    before = text[: match.start()].rstrip().rsplit(None, 1)
    word = before[-1] if before else ""
    intro = {
        "en": "in|of|since|from|after|before|until|till|between|and|to|during|through|early|mid|late|by",
        "de": "im|in|seit|ab|nach|vor|bis|zwischen|und|anfang|mitte|ende|von|vom",
        "fr": "en|de|du|depuis|après|avant|entre|et|à|au|début|mi|fin",
        "es": "en|de|desde|después|antes|hasta|entre|y|a|principios|mediados|finales",
        "pt": "em|de|desde|depois|antes|até|entre|e|a|início|meados|final|fim",
        "it": "a|in|di|da|dal|dopo|prima|fino|tra|fra|e|inizio|metà|fine|nel",
        "nl": "in|sinds|na|voor|tot|tussen|en|van|begin|half|eind|vanaf",
    }.get(lang)
    if intro is None:
        return True
    if word == "a" and lang in ("es", "pt", "it"):
        # "a 2012 toyota" is English's article; "de 2022 a 2023" ends a range.
        rest = before[0] if len(before) > 1 else ""
        return bool(re.search(r"\d\W*$", rest))
    return bool(re.fullmatch(intro, word))


def _parse_absolute(words: str, lang: str, now: datetime) -> tuple[date, date] | None:
    """The days of an absolute date (a day, a month or a year), read by dateparser."""
    iso = re.fullmatch(r"(\d{4})-(\d{2})", words)
    if iso:  # dateparser reads 2023-05 as a day
        year, number = int(iso.group(1)), int(iso.group(2))
        return (_unit_range(date(year, number, 1), "month")) if 1 <= number <= 12 else None
    ymd = re.fullmatch(r"(\d{4})[-/](\d{1,2})[-/](\d{1,2})", words)
    if ymd:
        try:
            found = date(int(ymd.group(1)), int(ymd.group(2)), int(ymd.group(3)))
        except ValueError:
            return None
        return found, found
    if re.fullmatch(r"\d{4}", words):
        return date(int(words), 1, 1), date(int(words), 12, 31)
    month = _month_of(words, lang, now)
    if month is not None:
        return month
    parsed = _parser(lang, now).get_date_data(words)
    if parsed.date_obj is None:
        return None
    day = parsed.date_obj.date()
    period = parsed.period if parsed.period in _UNITS else "day"
    return _unit_range(day, period)  # type: ignore[arg-type]


def _month_of(words: str, lang: str, now: datetime) -> tuple[date, date] | None:
    """A month name with or without its year ("march", "märz 2023", "marzo de 2023"):
    read here, as dateparser would (the last such month begun, when no year is given),
    at a fiftieth of its cost."""
    match = re.fullmatch(r"(\D+?)(?:,?\s+(?:de\s+|of\s+)?(\d{4}))?", words)
    if not match:
        return None
    number = _vocabulary(lang)["months"].get(match.group(1).strip())
    if number is None:
        return None
    if match.group(2):
        year = int(match.group(2))
    else:
        year = now.year if number <= now.month else now.year - 1
    return _unit_range(date(year, number, 1), "month")


_PARSERS: dict[tuple[str, datetime], Any] = {}


def _parser(lang: str, now: datetime) -> Any:
    from dateparser.date import DateDataParser

    key = (lang, now)
    if key not in _PARSERS:
        if len(_PARSERS) > 64:
            _PARSERS.clear()
        _PARSERS[key] = DateDataParser(
            languages=[lang],
            settings={
                "RELATIVE_BASE": now.replace(tzinfo=None),
                "PREFER_DATES_FROM": "past",
                "PREFER_DAY_OF_MONTH": "first",
                "RETURN_TIME_AS_PERIOD": False,
            },
        )
    return _PARSERS[key]


# --- from expressions to a period ----------------------------------------------------


def _combine(text: str, lang: str, terms: list[_Term], now: datetime) -> Period | None:
    """The period the question's expressions make together, with the words that made it."""
    first = terms[0]
    if len(terms) >= 2:
        pair = _range_of_two(text, lang, terms[0], terms[1])
        if pair:
            return pair
    since: date | None = first.first
    until: date | None = first.last
    start, end = first.start, first.end
    part = _part(text, lang, first)
    if part:
        since, until, start, end = part
    bound = _bound_word(text, lang, first, start, end)
    if bound:
        kind, start, end = bound
        if kind == "since":
            after = _is_after(text, lang, start)
            since, until = (first.last + timedelta(days=1)) if after else since, None
        else:
            before = _is_before(text, lang, start)
            since, until = None, (first.first - timedelta(days=1)) if before else until
    elif len(terms) >= 2:
        # Several dates and no range words: the span that holds them all.
        since = min(t.first for t in terms)
        until = max(t.last for t in terms)
        end = terms[-1].end
    return Period(since, until, text[start:end].strip(" ,.?!"))


def _range_of_two(text: str, lang: str, a: _Term, b: _Term) -> Period | None:
    opening, joining = _BETWEEN[lang]
    between = text[a.end : b.start].strip()
    if not re.fullmatch(rf"(?:{joining})", between):
        return None
    start = a.start
    if opening:
        before = re.search(rf"(?<![\w])(?:{opening})\s*$", text[: a.start])
        if not before and between not in ("-", "~", "〜", "to", "to the", "bis", "까지"):
            if lang not in _CJK and joining and between in ("and", "und", "et", "y", "e", "en"):
                return None
        if before:
            start = before.start()
    first = a.first
    if not a.has_year and b.has_year and a.first.year != b.first.year:
        first = _with_year(a.first, b.first.year)
    end = b.end
    after = re.match(rf"\s*(?:{_CJK_AFTER['until']})", text[b.end :]) if lang in _CJK else None
    if after:
        end = b.end + after.end()
    return Period(first, b.last, text[start:end].strip(" ,.?!"))


def _with_year(day: date, year: int) -> date:
    try:
        return day.replace(year=year)
    except ValueError:  # 29 February
        return day.replace(year=year, day=28)


def _part(text: str, lang: str, term: _Term) -> tuple[date, date, int, int] | None:
    """Early, mid or late of a month or a year: its first, middle or last third."""
    span = (term.last - term.first).days + 1
    if span < 28:
        return None
    for name, words in _PART[lang].items():
        if lang in _CJK:
            match = re.match(rf"(?:{words})", text[term.end :])
            found = (term.start, term.end + match.end()) if match else None
        else:
            match = re.search(rf"(?<![\w])(?:{words})\s*$", text[: term.start])
            found = (match.start(), term.end) if match else None
        if found:
            first, last = _third(term.first, term.last, name)
            return first, last, found[0], found[1]
    return None


def _third(first: date, last: date, name: str) -> tuple[date, date]:
    """The early, mid or late third of a month (days 1-10, 11-20, 21-end) or of a longer
    range (whole months: January-April, May-August, September-December of a year)."""
    if first.month == last.month and first.year == last.year:
        cuts = [first, first.replace(day=11), first.replace(day=21), last + timedelta(days=1)]
    else:
        months = (last.year - first.year) * 12 + last.month - first.month + 1
        step = max(1, months // 3)
        cuts = [
            first,
            _shift(first, "month", step),
            _shift(first, "month", 2 * step),
            last + timedelta(days=1),
        ]
    index = ("early", "mid", "late").index(name)
    return cuts[index], cuts[index + 1] - timedelta(days=1)


def _bound_word(
    text: str, lang: str, term: _Term, start: int, end: int
) -> tuple[str, int, int] | None:
    """("since" or "until", start, end) when a bounding word stands at the expression."""
    if lang in _CJK:
        for kind, words in _CJK_AFTER.items():
            match = re.match(rf"\s*(?:{words})", text[end:])
            if match:
                return kind, start, end + match.end()
        opening = re.search(r"(?:从|自)\s*$", text[:start])
        return ("since", opening.start(), end) if opening else None
    for kind, words in (("since", _SINCE[lang]), ("until", _UNTIL[lang])):
        match = re.search(rf"(?<![\w])(?:{words})\s*$", text[:start])
        if match:
            if kind == "since" and match.group(0).strip() == "from" and lang == "en":
                continue  # "notes from last week" names the week itself
            if (
                kind == "since"
                and lang in ("fr", "es", "pt", "it")
                and match.group(0).strip() in ("de", "da", "dal")
            ):
                continue
            return kind, match.start(), end
    return None


def _is_after(text: str, lang: str, start: int) -> bool:
    words = {
        "en": "after",
        "de": "nach",
        "fr": "après",
        "es": "después de",
        "pt": "depois de",
        "it": "dopo",
        "nl": "na",
    }.get(lang)
    return bool(words and re.match(rf"(?:{words})(?![\w])", text[start:]))


def _is_before(text: str, lang: str, start: int) -> bool:
    words = {
        "en": "before",
        "de": "vor",
        "fr": "avant",
        "es": "antes de",
        "pt": "antes de",
        "it": "prima di|prima del",
        "nl": "voor",
    }.get(lang)
    return bool(words and re.match(rf"(?:{words})(?![\w])", text[start:]))


# --- calendar arithmetic -------------------------------------------------------------


def _shift(day: date, unit: Unit, count: int) -> date:
    """`day` moved by `count` units (months and years keep the day where it exists)."""
    if unit == "day":
        return day + timedelta(days=count)
    if unit == "week":
        return day + timedelta(weeks=count)
    months = count * (12 if unit == "year" else 1)
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


def _unit_range(day: date, unit: Unit) -> tuple[date, date]:
    """The day, ISO week (Monday to Sunday), month or year that holds `day`."""
    if unit == "day":
        return day, day
    if unit == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(days=6)
    if unit == "month":
        return day.replace(day=1), day.replace(day=calendar.monthrange(day.year, day.month)[1])
    return date(day.year, 1, 1), date(day.year, 12, 31)
