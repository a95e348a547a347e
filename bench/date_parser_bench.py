"""Which date parser reads the period of a question best, and at what cost (issue 23).

Each candidate gets the question (and a fixed "now"), and is scored on the period it
gives: its first and last day must be the expected ones (a question with no period must
give none). Candidates, where installed (pip install dateparser parsedatetime
recognizers-text-suite; the last needs emoji<1):

- `dateparser` alone: `search.search_dates`, the first date found, and the unit its
  `DateDataParser` reports (day, week, month, year) as the period;
- `parsedatetime`: `Calendar.nlp`, the first date found, as a day;
- `recognizers-text` (Microsoft Recognizers Text, Python port): its date range or date;
- `askvault` (core/periods.py): dateparser's locale data and parser, with the range words.

Prints, per candidate: right / total, import seconds (a fresh interpreter), median and
max milliseconds per question (after a first call).

    python bench/date_parser_bench.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from datetime import date, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "daemon"))

NOW = datetime(2023, 7, 15, 12, 0)  # a Saturday
Expected = tuple[str | None, str | None] | None
# (question, language, expected (since, until) or None)
QUESTIONS: list[tuple[str, str, Expected]] = [
    ("what did I write last week about Canvas?", "en", ("2023-07-03", "2023-07-09")),
    ("notes from yesterday", "en", ("2023-07-14", "2023-07-14")),
    ("what happened in March", "en", ("2023-03-01", "2023-03-31")),
    ("since 2024-01-05 what changed", "en", ("2024-01-05", None)),
    ("between June and August 2022 what plugins", "en", ("2022-06-01", "2022-08-31")),
    ("my notes from the last 3 days", "en", ("2023-07-12", "2023-07-15")),
    ("what did the roundups say about Canvas in late 2022?", "en", ("2022-09-01", "2022-12-31")),
    ("the roundups from May 2023", "en", ("2023-05-01", "2023-05-31")),
    ("what did I write on 2023-05-20", "en", ("2023-05-20", "2023-05-20")),
    ("what did I write this month", "en", ("2023-07-01", "2023-07-31")),
    ("plans from last month", "en", ("2023-06-01", "2023-06-30")),
    ("my goals of last year", "en", ("2022-01-01", "2022-12-31")),
    ("Canvas before 2023", "en", (None, "2022-12-31")),
    ("from March to May 2023", "en", ("2023-03-01", "2023-05-31")),
    ("notes of 2022", "en", ("2022-01-01", "2022-12-31")),
    ("what changed in the past 2 weeks", "en", ("2023-07-01", "2023-07-15")),
    ("what did I do today", "en", ("2023-07-15", "2023-07-15")),
    ("the roundups of early 2022", "en", ("2022-01-01", "2022-04-30")),
    ("Was habe ich letzte Woche über Canvas geschrieben?", "de", ("2023-07-03", "2023-07-09")),
    ("Notizen von gestern", "de", ("2023-07-14", "2023-07-14")),
    ("seit März 2023", "de", ("2023-03-01", None)),
    ("Zwischen Juni und August 2022", "de", ("2022-06-01", "2022-08-31")),
    ("notes de la semaine dernière", "fr", ("2023-07-03", "2023-07-09")),
    ("les notes des 3 derniers jours", "fr", ("2023-07-12", "2023-07-15")),
    ("notas de ayer", "es", ("2023-07-14", "2023-07-14")),
    ("notas de marzo de 2023", "es", ("2023-03-01", "2023-03-31")),
    ("notas da semana passada", "pt", ("2023-07-03", "2023-07-09")),
    ("note della settimana scorsa", "it", ("2023-07-03", "2023-07-09")),
    ("notities van vorige week", "nl", ("2023-07-03", "2023-07-09")),
    ("昨天的笔记", "zh", ("2023-07-14", "2023-07-14")),
    ("2022年3月的笔记", "zh", ("2022-03-01", "2022-03-31")),
    ("先週のノート", "ja", ("2023-07-03", "2023-07-09")),
    ("What can I do with Canvas?", "en", None),
    ("How do I make a second brain?", "en", None),
    ("May I embed a PDF?", "en", None),
    ("march on with templates", "en", None),
    ("How to sync now?", "en", None),
    ("What is a daily note?", "en", None),
    ("the 10 best plugins", "en", None),
    ("Wie funktionieren Einbettungen?", "de", None),
]


def _unit_range(day: date, unit: str) -> tuple[str, str]:
    import calendar

    if unit == "week":
        monday = day - timedelta(days=day.weekday())
        return monday.isoformat(), (monday + timedelta(days=6)).isoformat()
    if unit == "month":
        last = calendar.monthrange(day.year, day.month)[1]
        return day.replace(day=1).isoformat(), day.replace(day=last).isoformat()
    if unit == "year":
        return f"{day.year}-01-01", f"{day.year}-12-31"
    return day.isoformat(), day.isoformat()


def run_dateparser(question: str, lang: str) -> Expected:
    from dateparser.date import DateDataParser
    from dateparser.search import search_dates

    settings = {"RELATIVE_BASE": NOW, "PREFER_DATES_FROM": "past"}
    found = search_dates(question, settings=settings)  # type: ignore[arg-type]
    if not found:
        return None
    words, when = found[0]
    data = DateDataParser(settings=settings).get_date_data(words)  # type: ignore[arg-type]
    return _unit_range(when.date(), data.period or "day")


def run_parsedatetime(question: str, lang: str) -> Expected:
    import parsedatetime

    found = parsedatetime.Calendar().nlp(question, sourceTime=NOW)
    if not found:
        return None
    day = found[0][0].date()
    return day.isoformat(), day.isoformat()


def run_recognizers(question: str, lang: str) -> Expected:
    from recognizers_date_time import Culture, recognize_datetime

    cultures = {
        "en": Culture.English,
        "fr": Culture.French,
        "es": Culture.Spanish,
        "pt": Culture.Portuguese,
        "it": Culture.Italian,
        "nl": Culture.Dutch,
        "zh": Culture.Chinese,
        "ja": Culture.Japanese,
    }
    if lang not in cultures:
        return None
    for found in recognize_datetime(question, cultures[lang], reference=NOW):
        for value in (found.resolution or {}).get("values", []):
            if value.get("type") == "daterange":
                end = value.get("end")
                last = (date.fromisoformat(end) - timedelta(days=1)).isoformat() if end else None
                return value.get("start"), last
            if value.get("type") == "date":
                return value["value"], value["value"]
    return None


def run_askvault(question: str, lang: str) -> Expected:
    from askvault.core.periods import find_period

    period = find_period(question, NOW)
    return period.bounds() if period else None


CANDIDATES = {
    "dateparser": ("dateparser", run_dateparser),
    "parsedatetime": ("parsedatetime", run_parsedatetime),
    "recognizers-text": ("recognizers_date_time", run_recognizers),
    "askvault (dateparser + range words)": ("askvault.core.periods", run_askvault),
}


def import_seconds(module: str) -> float | None:
    code = f"import sys, time; sys.path.insert(0, {str(REPO / 'daemon')!r}); t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return float(done.stdout) if done.returncode == 0 else None


def main() -> None:
    rows = []
    for name, (module, run) in CANDIDATES.items():
        seconds = import_seconds(module)
        if seconds is None:
            print(f"{name}: not installed, skipped")
            continue
        run(QUESTIONS[0][0], QUESTIONS[0][1])  # the first call loads the locale data
        right, times, wrong = 0, [], []
        for question, lang, expected in QUESTIONS:
            started = time.perf_counter()
            try:
                got = run(question, lang)
            except Exception as exc:  # a candidate's own failure counts as wrong
                got = ("error", repr(exc))  # type: ignore[assignment]
            times.append(time.perf_counter() - started)
            if got == expected:
                right += 1
            else:
                wrong.append((question, got))
        rows.append(
            {
                "candidate": name,
                "right": f"{right}/{len(QUESTIONS)}",
                "import_s": round(seconds, 3),
                "median_ms": round(1000 * statistics.median(times), 2),
                "max_ms": round(1000 * max(times), 1),
            }
        )
        print(json.dumps(rows[-1], ensure_ascii=False))
        for question, got in wrong[:8]:
            print("   wrong:", question, "->", got)


if __name__ == "__main__":
    main()
