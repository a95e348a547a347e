"""The day a note belongs to, for questions about a period (DESIGN §2).

Pure. In order: a daily note's name in the format of the vault's Daily notes settings
(`.obsidian/daily-notes.json`, moment.js tokens, default `YYYY-MM-DD`, under its folder),
a dated file name (`2023-05-20 Roundup.md`), a date property (`date`, `created`, or
those the settings name), then the file's modification time (local day). The index
keeps the day and where it came from (adapters/store.py), so a period is an SQL filter.
"""

from __future__ import annotations

import calendar
import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

DateSource = Literal["daily", "name", "property", "mtime"]
DATE_SOURCES: tuple[DateSource, ...] = ("daily", "name", "property", "mtime")
DEFAULT_DAILY_FORMAT = "YYYY-MM-DD"
DAILY_NOTES_JSON = ".obsidian/daily-notes.json"
DAILY_NOTES_MAX_BYTES = 64 * 1024
# A file name that starts with a day: 2023-05-20, 2023.05.20, 2023_05_20, 20230520.
_DATED_NAME = re.compile(r"^(\d{4})([-._]?)(\d{2})\2(\d{2})(?!\d)")
_ISO_DAY = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})")
_MONTHS = [m.lower() for m in calendar.month_name[1:]]
_MONTHS_SHORT = [m.lower() for m in calendar.month_abbr[1:]]
_WEEKDAYS = "|".join(d.lower() for d in [*calendar.day_name, *calendar.day_abbr])
# moment.js tokens, longest first, and the regex each becomes (named groups read back).
_TOKENS = (
    ("YYYY", r"(?P<year>\d{4})"),
    ("MMMM", r"(?P<month_name>" + "|".join(_MONTHS) + ")"),
    ("dddd", rf"(?:{_WEEKDAYS})"),
    ("MMM", r"(?P<month_abbr>" + "|".join(_MONTHS_SHORT) + ")"),
    ("ddd", rf"(?:{_WEEKDAYS})"),
    ("YY", r"(?P<year2>\d{2})"),
    ("MM", r"(?P<month>\d{2})"),
    ("Do", r"(?P<day>\d{1,2})(?:st|nd|rd|th)"),
    ("DD", r"(?P<day>\d{2})"),
    ("M", r"(?P<month>\d{1,2})"),
    ("D", r"(?P<day>\d{1,2})"),
)


@dataclass(frozen=True)
class DatingRules:
    """How the vault's notes are dated: the Daily notes format and folder, and the
    properties read for a date, first first."""

    daily_format: str = DEFAULT_DAILY_FORMAT
    daily_folder: str = ""
    properties: tuple[str, ...] = ("date", "created")

    def key(self) -> str:
        """A text that changes whenever the rules do (kept beside each note's date)."""
        return json.dumps([self.daily_format, self.daily_folder, list(self.properties)])


def read_daily_notes_config(raw: bytes | None) -> tuple[str, str, str | None]:
    """(format, folder, problem) of the bytes of `.obsidian/daily-notes.json`: Obsidian's
    defaults when it is missing, or empty values; a problem when it cannot be read."""
    if raw is None:
        return DEFAULT_DAILY_FORMAT, "", None
    try:
        config = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        return (
            DEFAULT_DAILY_FORMAT,
            "",
            f"{DAILY_NOTES_JSON}: not valid JSON ({exc}); default format used",
        )
    if not isinstance(config, dict):
        return (
            DEFAULT_DAILY_FORMAT,
            "",
            f"{DAILY_NOTES_JSON}: not a JSON object; default format used",
        )
    fmt = config.get("format")
    folder = config.get("folder")
    fmt = fmt.strip() if isinstance(fmt, str) and fmt.strip() else DEFAULT_DAILY_FORMAT
    folder = folder.strip().strip("/") if isinstance(folder, str) else ""
    return fmt, folder, None


def note_day(
    path: str, frontmatter: dict[str, Any], mtime_ns: int, rules: DatingRules
) -> tuple[date, DateSource]:
    """The day of the note at vault-relative `path`, and where it came from."""
    daily = daily_note_day(path, rules.daily_format, rules.daily_folder)
    if daily:
        return daily, "daily"
    name = path.rsplit("/", 1)[-1]
    match = _DATED_NAME.match(name)
    if match:
        day = _day(int(match.group(1)), int(match.group(3)), int(match.group(4)))
        if day:
            return day, "name"
    lowered = {str(k).lower(): v for k, v in frontmatter.items()}
    for prop in rules.properties:
        day = property_day(lowered.get(prop.lower()))
        if day:
            return day, "property"
    return datetime.fromtimestamp(mtime_ns / 1e9).date(), "mtime"


def daily_note_day(path: str, fmt: str, folder: str) -> date | None:
    """The day of a daily note: `path` is `<folder>/<fmt>.md` (a format may hold `/`,
    for notes filed by year or month), else None."""
    if not path.lower().endswith(".md"):
        return None
    stem = path[:-3]
    if folder:
        prefix = folder.strip("/") + "/"
        if not stem.startswith(prefix):
            return None
        stem = stem[len(prefix) :]
    match = _format_regex(fmt).fullmatch(stem.lower())
    if not match:
        return None
    parts = match.groupdict()
    year = int(parts["year"]) if parts.get("year") else None
    if year is None and parts.get("year2"):
        year = 2000 + int(parts["year2"])
    if parts.get("month"):
        month = int(parts["month"])
    elif parts.get("month_name"):
        month = _MONTHS.index(parts["month_name"]) + 1
    elif parts.get("month_abbr"):
        month = _MONTHS_SHORT.index(parts["month_abbr"]) + 1
    else:
        return None
    if year is None or not parts.get("day"):
        return None
    return _day(year, month, int(parts["day"]))


def property_day(value: Any) -> date | None:
    """The day of a date property's value: a YAML date, `2023-05-20`, an ISO time, or the
    first such value of a list; None for anything else."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, list) and value:
        return property_day(value[0])
    if isinstance(value, str):
        match = _ISO_DAY.match(value)
        if match:
            return _day(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    return None


_FORMATS: dict[str, re.Pattern[str]] = {}


def _format_regex(fmt: str) -> re.Pattern[str]:
    """The regex of a moment.js format (`[...]` is literal text; a token used twice must
    match the same way, which a backreference would need: the second is free)."""
    if fmt in _FORMATS:
        return _FORMATS[fmt]
    out: list[str] = []
    seen: set[str] = set()
    i = 0
    while i < len(fmt):
        if fmt[i] == "[":
            end = fmt.find("]", i)
            end = len(fmt) if end < 0 else end
            out.append(re.escape(fmt[i + 1 : end].lower()))
            i = end + 1
            continue
        for token, regex in _TOKENS:
            if fmt.startswith(token, i):
                names = re.findall(r"\?P<(\w+)>", regex)
                if any(n in seen for n in names):
                    regex = re.sub(r"\?P<\w+>", "?:", regex)
                seen.update(names)
                out.append(regex)
                i += len(token)
                break
        else:
            out.append(re.escape(fmt[i].lower()))
            i += 1
    pattern = re.compile("".join(out))
    _FORMATS[fmt] = pattern
    return pattern


def _day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None
