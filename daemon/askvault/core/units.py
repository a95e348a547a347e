"""A number's unit: "100 euros" is not backed by a note's "$100", nor "5 GB" by "5 MB".

The support check finds a claim's numbers in the note's words; a number found with another
unit of the same kind (another currency, size, span of time) says something else. Only
units of one kind conflict: "30 days" and "30 notes" are different things the number check
already leaves alone, and a number the note gives with no unit (a table cell under a
"(USD)" header) is not contradicted by any.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# (kind, unit) for each way of writing one; matched case-insensitively, except the
# one-letter and all-caps storage units, which are matched as written.
_UNIT_WORDS: dict[str, tuple[str, str]] = {}
for _kind, _unit, _words in (
    ("money", "usd", "usd dollar dollars"),
    ("money", "eur", "eur euro euros"),
    ("money", "gbp", "gbp pound pounds"),
    ("money", "jpy", "jpy yen"),
    ("money", "inr", "inr rupee rupees"),
    ("size", "kb", "kb kib kilobyte kilobytes"),
    ("size", "mb", "mb mib megabyte megabytes"),
    ("size", "gb", "gb gib gigabyte gigabytes"),
    ("size", "tb", "tb tib terabyte terabytes"),
    ("time", "second", "second seconds sec secs"),
    ("time", "minute", "minute minutes min mins"),
    ("time", "hour", "hour hours hr hrs"),
    ("time", "day", "day days"),
    ("time", "week", "week weeks"),
    ("time", "month", "month months"),
    ("time", "year", "year years"),
):
    for _word in _words.split():
        _UNIT_WORDS[_word] = (_kind, _unit)

_SYMBOLS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr"}

_NUMBER = r"\d+(?:[.,]\d+)*"
# "$100", "US$ 8", "€8"; then "100 euros", "30-day", "5MB", "8 USD".
_BEFORE = re.compile(r"(?:US)?([$€£¥₹])\s?(" + _NUMBER + r")")
_AFTER = re.compile(r"(" + _NUMBER + r")(?:\s|-)?([A-Za-z]+)\b")


@dataclass(frozen=True)
class Value:
    """A number with its unit, as written in a text."""

    number: str
    kind: str
    unit: str
    text: str


# "50mb", "4GB", "10min": a number written together with its unit (the Help vault's "up to
# 50mb"); other letters after a number ("2FA", "1st", "x86") are not a unit.
_GLUED = re.compile(r"(?<![\w.])(" + _NUMBER + r")([A-Za-z]+)\b")


def spaced(text: str) -> str:
    """`text` with a space between a number and a unit written against it ("50mb" ->
    "50 mb"), so that "50 MB" and "up to 50mb" hold the same number and the same word."""
    return _GLUED.sub(lambda m: f"{m[1]} {m[2]}" if m[2].casefold() in _UNIT_WORDS else m[0], text)


def values(text: str) -> tuple[Value, ...]:
    """The numbers of `text` that carry a unit ("$100", "100 euros", "30-day", "5 MB")."""
    out: list[Value] = []
    for match in _BEFORE.finditer(text):
        out.append(Value(_plain(match.group(2)), "money", _SYMBOLS[match.group(1)], match[0]))
    for match in _AFTER.finditer(text):
        unit = _UNIT_WORDS.get(match.group(2).casefold())
        if unit is not None:
            out.append(Value(_plain(match.group(1)), unit[0], unit[1], match[0]))
    return tuple(out)


def conflicting(claimed: Sequence[Value], evidence: str) -> tuple[str, ...]:
    """The claimed values (`values` of a claim) that `evidence` gives only with another
    unit of the same kind, as written in the claim: "100 euros" against "$100"."""
    if not claimed:
        return ()
    given = values(evidence)
    out = []
    for value in claimed:
        same_number = [v for v in given if v.number == value.number and v.kind == value.kind]
        if same_number and all(v.unit != value.unit for v in same_number):
            out.append(value.text)
    return tuple(dict.fromkeys(out))


def _plain(number: str) -> str:
    return number.replace(",", "")
