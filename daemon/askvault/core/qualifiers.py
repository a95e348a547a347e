"""What a question qualifies its ask by: the platform it is about, and the kind of value.

Pure. A lexical check finds a claim's words in the note, but not whether the note says
them of the case the question asks about. Two such mismatches are common with small
models and cheap to see in words:

- **Another platform.** "On Android, how do I open the quick switcher?" answered with
  "press `Ctrl+O` (or `Cmd+O` on macOS)"; "on Windows, can I make the window
  translucent?" answered "yes" from a sentence that says it "On MacOS". The platform
  the question asks about is the first one it names (the others are context: "on my
  phone ... on the laptop it's in the corner"); a supported claim whose own words, or
  whose quote from the note, are about an incompatible platform does not answer it.
  Mobile and desktop never mix; within the desktop family (Windows, macOS, Linux) only
  a claim that names one system against a quote that names another conflicts, since
  the notes often give the other system's key in passing ("(or `Cmd+O` on macOS)").
  A keyboard chord answers no question about mobile unless its note says mobile.
- **A price that is no amount of money.** "How much does the Standard plan cost a
  month?" answered "The monthly cost ... is 5 MB." from a plans table.

`platform_mismatch` (per claim) and `value_mismatch` (per reply: one claim with an amount
is enough) return the reason a supported claim is not backed for the question as asked,
or "" when nothing conflicts. Absence is never a conflict: a quote that names no
platform may well hold for the one asked.
"""

from __future__ import annotations

import re

MOBILE = "mobile"
DESKTOP = "desktop"  # any desktop system, named generically (laptop, PC, computer)
DESKTOP_FAMILY = frozenset({DESKTOP, "Windows", "macOS", "Linux"})

# Each platform's words. "Windows" is the system only when capitalised in a note, or,
# as users type, after "on/for/in/with/using" or before a word that makes it a machine;
# "pop-out windows" and "open two windows" are windows of the app.
_PLATFORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        MOBILE,
        re.compile(
            r"\b(?:mobile|phones?|smartphones?|iphones?|ipads?|ipados|android|ios|tablets?)\b",
            re.IGNORECASE,
        ),
    ),
    ("macOS", re.compile(r"\b(?:mac|macs|macos|mac\s+os|os\s+x|macbooks?|imacs?)\b", re.I)),
    ("Linux", re.compile(r"\b(?:linux|ubuntu|debian|fedora|flatpak)\b", re.IGNORECASE)),
    ("Windows", re.compile(r"(?<![Pp]op-out )(?<![Nn]ew )\bWindows\b")),
    (
        "Windows",
        re.compile(
            r"\b(?:on|for|in|with|using|under)\s+windows\b|"
            r"\bwindows\s+(?:\d+|pc|laptop|machine|computer|user|app|version)\b",
            re.IGNORECASE,
        ),
    ),
    (DESKTOP, re.compile(r"\b(?:desktop|laptops?|pcs?|computers?)\b", re.IGNORECASE)),
)

# A key chord: what a keyboard gives, not a phone.
_CHORD = re.compile(
    r"\b(?:ctrl|cmd|command|alt|option|opt|shift|meta|super)\s*\+\s*\S", re.IGNORECASE
)

# "How much does it cost", "what's the price of", "how expensive" (English; the other
# languages of the question notes are not checked).
_ASKS_PRICE = re.compile(
    r"\bhow\s+much\b.*\b(?:cost|costs|pay|charge|charged)\b|"
    r"\b(?:price|pricing|how\s+expensive)\b|\bwhat\s+(?:does|do|will)\b.*\bcost\b",
    re.IGNORECASE,
)
_MONEY = re.compile(
    r"[$€£¥]\s?\d|\d\s?[$€£¥]|\b\d[\d.,]*\s*(?:usd|eur|gbp|dollars?|euros?|pounds?|cents?)\b|"
    r"\b(?:usd|eur|gbp)\s?\d|\bfree\b|\bno\s+(?:cost|charge)\b",
    re.IGNORECASE,
)


def platforms(text: str) -> list[str]:
    """The platforms `text` names, in the order they first appear."""
    found: list[tuple[int, str]] = []
    for name, pattern in _PLATFORMS:
        match = pattern.search(text)
        if match:
            found.append((match.start(), name))
    out: list[str] = []
    for _, name in sorted(found):
        if name not in out:
            out.append(name)
    return out


def asked_platform(question: str) -> str | None:
    """The platform `question` asks about: the first it names (None: it names none)."""
    named = platforms(question)
    return named[0] if named else None


_ASIDE = re.compile(r"\([^()]*\)")


def _desktop_conflict(said: list[str], quote: str) -> bool:
    """A claim naming one desktop system against a quote naming only others, outside
    its asides: "Ctrl+W (Cmd+W on macOS)" holds for Windows too."""
    quoted = platforms(_ASIDE.sub(" ", quote))
    said_systems = [p for p in said if p in DESKTOP_FAMILY and p != DESKTOP]
    quoted_systems = [p for p in quoted if p in DESKTOP_FAMILY and p != DESKTOP]
    if not said_systems or not quoted_systems or DESKTOP in quoted:
        return False
    return not set(said_systems) & set(quoted_systems)


def _family(names: list[str]) -> set[str]:
    return {MOBILE if p == MOBILE else DESKTOP for p in names}


def platform_mismatch(question: str, claim: str, quote: str) -> str:
    """Why `claim`, backed by `quote`, is about another platform than `question` asks
    about ("" when nothing conflicts)."""
    asked = asked_platform(question)
    said = platforms(claim)
    quoted = platforms(quote)
    if asked is not None:
        if said and not _family([asked]) & _family(said):
            return f"said of {', '.join(said)}, and the question asks about {asked}"
        if not said and quoted and not _family([asked]) & _family(quoted):
            return f"the note says it of {', '.join(quoted)}, and the question asks about {asked}"
        if asked == MOBILE and MOBILE not in said + quoted and _CHORD.search(claim):
            return "a keyboard shortcut, and the question asks about mobile"
    if said and quoted and not _family(said) & _family(quoted):
        return f"said of {', '.join(said)}, and the note says it of {', '.join(quoted)}"
    if _desktop_conflict(said, quote):
        return f"said of {', '.join(said)}, and the note says it of {', '.join(quoted)}"
    return ""


def asks_price(question: str) -> bool:
    """Does `question` ask what something costs?"""
    return bool(_ASKS_PRICE.search(question))


def value_mismatch(question: str, claims: list[str]) -> str:
    """Why the supported `claims` of a reply do not give the kind of value `question`
    asks for ("" if one of them does, or the question asks for no particular kind)."""
    if claims and asks_price(question) and not any(_MONEY.search(c) for c in claims):
        return "the question asks for a price, and the reply gives no amount of money"
    return ""
