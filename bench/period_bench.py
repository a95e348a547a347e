"""Questions about a period: are the top-5 hits inside it, is the right note among them,
and what does the period cost a search (issue 23, part 2).

Two vaults, a fixed "now" (2023-07-05, a Wednesday):
- the Obsidian hub vault's Roundup notes (weekly, 2021-2023, dated by their file names)
  and every ninth other note of its `01 - Community` folder (dated by their file times,
  so outside every period asked about);
- a generated daily-notes vault: a year of daily notes named by a non-default Daily
  notes format (`.obsidian/daily-notes.json`: `YYYY/MM/DD.MM.YYYY` under `Journal/`),
  and meeting notes dated by a `date:` property, each on its own subject.

Per question: the period askvault read (compared with the one written here), the share
of top-5 hits whose day is inside the expected period, whether the expected note is in
the top 5; and the median latency of the dated search against the same question searched
with no period (its period words removed, `from_words=False`), warm, several runs.

    python bench/period_bench.py [--ollama http://127.0.0.1:11435] [--runs 7]

Embeddings: a running Ollama (or the minilm stand-in, model all-minilm) at --ollama; the
index is kept in bench/.cache/period/ so that a rerun embeds nothing. Without --ollama:
words only.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import time
from datetime import date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA, REPO, machine, require_shared  # noqa: E402
from askvault.adapters.db import connect  # noqa: E402
from askvault.app.clients import OllamaClients  # noqa: E402
from askvault.records import PeriodRequest  # noqa: E402
from askvault.services.index.index_pass import index_vault  # noqa: E402
from askvault.services.retrieval.search import search  # noqa: E402
from askvault.settings import load_settings  # noqa: E402

NOW = datetime(2023, 7, 5, 12, 0)
CACHE = REPO / "bench" / ".cache" / "period"
HUB = DATA / "vaults" / "obsidian-hub" / "01 - Community"
ROUNDUP = "Obsidian Roundup/"

# (question, expected since, expected until, the file-name start of the right note)
HUB_QUESTIONS = [
    (
        "what did the roundups say about Canvas in late 2022?",
        "2022-09-01",
        "2022-12-31",
        "2022-12-10",
    ),
    ("Whiteboard Canvas for mindmaps in December 2022", "2022-12-01", "2022-12-31", "2022-12-10"),
    ("use cases for Canvas in January 2023", "2023-01-01", "2023-01-31", "2023-01-14"),
    ("pretty canvas cards in March 2023", "2023-03-01", "2023-03-31", "2023-03-11"),
    ("Live Preview news in November 2021", "2021-11-01", "2021-11-30", "2021-11-13"),
    ("which themes were new in June 2021?", "2021-06-01", "2021-06-30", "2021-06-05"),
    ("Templater scripts in May 2021", "2021-05-01", "2021-05-31", "2021-05-22"),
    ("QuickAdd plugin news in June 2021", "2021-06-01", "2021-06-30", "2021-06-19"),
    ("Obsidian mobile and community events in July 2021", "2021-07-01", "2021-07-31", "2021-07-17"),
    ("time tracking with Toggl in August 2021", "2021-08-01", "2021-08-31", "2021-08-21"),
    (
        "the philosophies of tags, roundup of late August 2021",
        "2021-08-21",
        "2021-08-31",
        "2021-08-28",
    ),
    (
        "semantic search and recipe importing at the start of 2022",
        "2022-01-01",
        "2022-04-30",
        "2022-01-01",
    ),
    (
        "Dataview optimizations between January and February 2022",
        "2022-01-01",
        "2022-02-28",
        "2022-01-15",
    ),
    ("native callout boxes in March 2022", "2022-03-01", "2022-03-31", "2022-03-19"),
    ("Bionic reading and popout windows in July 2022", "2022-07-01", "2022-07-31", "2022-07-02"),
    ("Dataview to Mermaid in August 2022", "2022-08-01", "2022-08-31", "2022-08-13"),
    ("tabs and the new default theme in September 2022", "2022-09-01", "2022-09-30", "2022-09-03"),
    ("Obsidian out of beta in October 2022", "2022-10-01", "2022-10-31", "2022-10-15"),
    ("Zotero integration in October 2022", "2022-10-01", "2022-10-31", "2022-10-29"),
    ("stable diffusion and dashboards in November 2022", "2022-11-01", "2022-11-30", "2022-11-12"),
    (
        "AI integrations between December 2022 and January 2023",
        "2022-12-01",
        "2023-01-31",
        "2022-12-17",
    ),
    (
        "natural language search and the new CEO in February 2023",
        "2023-02-01",
        "2023-02-28",
        "2023-02-11",
    ),
    ("LLM-based additions for writers in March 2023", "2023-03-01", "2023-03-31", "2023-03-18"),
    ("GPT tips and atomic notes advice in May 2023", "2023-05-01", "2023-05-31", "2023-05-06"),
    ("pretty callouts and developer plugins last month", "2023-06-01", "2023-06-30", "2023-06-10"),
    ("new branding and LLM vs PKM since June 2023", "2023-06-01", None, "2023-06-03"),
    ("the roundup about the hiatus this month", "2023-07-01", "2023-07-31", "2023-07-01"),
    ("Obsidian October winners before 2022", None, "2021-12-31", "2021-12-03"),
    ("RSS tips in April 2021", "2021-04-01", "2021-04-30", "2021-04-17"),
    ("Gems of the Year in December 2021", "2021-12-01", "2021-12-31", "2021-12-18"),
]
TOPICS = [
    "garden tomatoes",
    "piano practice",
    "tax return",
    "bicycle repair",
    "sourdough bread",
    "chess opening",
    "roof leak",
    "passport renewal",
    "marathon training",
    "guitar strings",
    "dentist visit",
    "car insurance",
    "birthday party",
    "camping trip",
    "book club",
    "pottery class",
    "server migration",
    "kitchen paint",
    "job interview",
    "violin lesson",
    "french verbs",
    "yoga retreat",
    "budget review",
    "printer toner",
    "dog vaccination",
]


def build_daily_vault(root: Path) -> list[tuple[str, str, str | None, str]]:
    """A year of daily notes (2022-07-01 to 2023-07-05) and meeting notes, and the
    questions about them."""
    if root.exists():
        shutil.rmtree(root)
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "daily-notes.json").write_text(
        json.dumps({"format": "YYYY/MM/DD.MM.YYYY", "folder": "Journal"}), encoding="utf-8"
    )
    rng = random.Random(23)
    day = date(2022, 7, 1)
    topic_day: dict[str, date] = {}
    while day <= NOW.date():
        topic = rng.choice(TOPICS)
        topic_day[topic] = day
        folder = root / "Journal" / f"{day:%Y}" / f"{day:%m}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{day:%d.%m.%Y}.md").write_text(
            f"# {day:%A %d %B %Y}\n\nToday: {topic}. Notes about the {topic} and what to do "
            f"next about the {topic}.\n\n- mood: fine\n",
            encoding="utf-8",
        )
        day += timedelta(days=1)
    meetings = root / "Meetings"
    meetings.mkdir()
    for n, topic in enumerate(TOPICS):
        when = date(2023, 1, 9) + timedelta(days=7 * n)
        (meetings / f"Meeting about {topic}.md").write_text(
            f"---\ndate: {when.isoformat()}\n---\n# Meeting about {topic}\n\n"
            f"We discussed the {topic} plan with the team.\n",
            encoding="utf-8",
        )
    questions: list[tuple[str, str, str | None, str]] = []
    # Meetings: dated by property, asked by month, week, or range.
    for n, topic in enumerate(TOPICS[:10]):
        when = date(2023, 1, 9) + timedelta(days=7 * n)
        phrasing = [
            (
                f"what did we decide in the meeting about {topic} in {when:%B %Y}?",
                when.replace(day=1),
                _month_end(when),
            ),
            (
                f"meeting on the {topic} between {when:%B} and {_month_end(when) + timedelta(days=1):%B %Y}",
                when.replace(day=1),
                _month_end(_month_end(when) + timedelta(days=1)),
            ),
        ][n % 2]
        questions.append(
            (
                phrasing[0],
                phrasing[1].isoformat(),
                phrasing[2].isoformat(),
                f"Meetings/Meeting about {topic}.md",
            )
        )
    # Daily notes: relative words and days, in several languages.
    relative = [
        ("my notes from yesterday", date(2023, 7, 4), date(2023, 7, 4)),
        ("what did I write last week", date(2023, 6, 26), date(2023, 7, 2)),
        ("my notes from the last 3 days", date(2023, 7, 2), date(2023, 7, 5)),
        ("Was habe ich gestern geschrieben?", date(2023, 7, 4), date(2023, 7, 4)),
        ("qu'ai-je écrit la semaine dernière ?", date(2023, 6, 26), date(2023, 7, 2)),
        ("¿qué escribí ayer?", date(2023, 7, 4), date(2023, 7, 4)),
        ("notes of 2023-03-14", date(2023, 3, 14), date(2023, 3, 14)),
        ("what did I note on 2022-11-02", date(2022, 11, 2), date(2022, 11, 2)),
        ("昨天的笔记", date(2023, 7, 4), date(2023, 7, 4)),
        ("wat schreef ik vorige week", date(2023, 6, 26), date(2023, 7, 2)),
    ]
    by_day = {d: t for t, d in topic_day.items()}
    for text, first, last in relative:
        # The right note: the daily note of the period's last day, asked about its topic.
        target = last
        topic = _topic_of(root, target) or by_day.get(target, "")
        questions.append(
            (
                f"{text} about the {topic}",
                first.isoformat(),
                last.isoformat(),
                f"Journal/{target:%Y}/{target:%m}/{target:%d.%m.%Y}.md",
            )
        )
    return questions


def _topic_of(root: Path, day: date) -> str:
    path = root / "Journal" / f"{day:%Y}" / f"{day:%m}" / f"{day:%d.%m.%Y}.md"
    text = path.read_text(encoding="utf-8")
    return text.split("Today: ", 1)[1].split(".", 1)[0]


def _month_end(day: date) -> date:
    following = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return following - timedelta(days=1)


def hub_vault(root: Path) -> None:
    """The Roundup folder and every ninth other note of `01 - Community` (about 300, dated
    by their file times: outside every period asked about), copied once."""
    if root.exists():
        return
    notes = sorted(HUB.rglob("*.md"))
    others = [p for p in notes if ROUNDUP not in p.relative_to(HUB).as_posix()]
    for path in [p for p in notes if ROUNDUP in p.relative_to(HUB).as_posix()] + others[::9]:
        target = root / "01 - Community" / path.relative_to(HUB)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def index(vault: Path, state: Path, ollama: str | None):
    flags = {"vault": str(vault), "state_dir": str(state)}
    if ollama:
        flags.update({"ollama.host": ollama, "ollama.embed_model": "all-minilm"})
    settings = load_settings(None, flags=flags)
    index_vault(settings, OllamaClients(settings))
    return settings


def measure(name: str, settings, questions, runs: int, ollama: str | None) -> dict:
    conn = connect(settings.db_path)
    clients = OllamaClients(settings)
    embedder = clients.query_embedder() if ollama else None
    days = dict(conn.execute("SELECT path, note_date FROM notes"))
    inside, right, parsed_ok, dated_s, plain_s = [], [], 0, [], []
    misses = []
    try:
        for question, since, until, target in questions:
            request = PeriodRequest(now=NOW)
            result = search(conn, settings, question, limit=5, embedder=embedder, period=request)
            got = result.period
            if got and (got.since, got.until) == (since, until):
                parsed_ok += 1
            files = [h.note_path for h in result.hits]
            share = [
                (since is None or days[f] >= since) and (until is None or days[f] <= until)
                for f in files
            ]
            inside.append(sum(share) / len(share) if share else 0.0)
            hit = any(f == target or f.rsplit("/", 1)[-1].startswith(target) for f in files)
            right.append(1.0 if hit else 0.0)
            if not hit or (got and (got.since, got.until) != (since, until)):
                misses.append((question, got.describe() if got else None, files[:3]))
            plain = got.query if got else question
            for _ in range(runs):
                started = time.perf_counter()
                search(conn, settings, question, limit=5, embedder=embedder, period=request)
                dated_s.append(time.perf_counter() - started)
                started = time.perf_counter()
                search(
                    conn,
                    settings,
                    plain,
                    limit=5,
                    embedder=embedder,
                    period=PeriodRequest(now=NOW, from_words=False),
                )
                plain_s.append(time.perf_counter() - started)
    finally:
        if embedder is not None:
            embedder.close()
        conn.close()
    return {
        "vault": name,
        "questions": len(questions),
        "period_read_right": parsed_ok,
        "top5_inside_period": round(statistics.mean(inside), 3),
        "right_note_in_top5": round(statistics.mean(right), 3),
        "dated_ms_median": round(1000 * statistics.median(dated_s), 2),
        "undated_ms_median": round(1000 * statistics.median(plain_s), 2),
        "misses": misses,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ollama", help="Ollama URL for query and note vectors (all-minilm)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    require_shared(HUB)
    CACHE.mkdir(parents=True, exist_ok=True)
    hub = CACHE / "hub-vault"
    hub_vault(hub)
    daily = CACHE / "daily-vault"
    daily_questions = build_daily_vault(daily)
    mode = f"vectors: all-minilm at {args.ollama}" if args.ollama else "words only"
    print(f"machine: {machine()}; now = {NOW.isoformat()}; {mode}; {args.runs} runs")
    results = []
    for name, vault, questions in (
        ("hub 01 - Community (Roundups)", hub, HUB_QUESTIONS),
        ("generated daily notes", daily, daily_questions),
    ):
        state = CACHE / ("state-" + vault.name + ("-vec" if args.ollama else "-words"))
        settings = index(vault, state, args.ollama)
        results.append(measure(name, settings, questions, args.runs, args.ollama))
    total = sum(r["questions"] for r in results)
    for r in results:
        print(json.dumps({k: v for k, v in r.items() if k != "misses"}))
        for miss in r["misses"]:
            print("   miss:", miss)
    weighted = {
        key: round(sum(r[key] * r["questions"] for r in results) / total, 3)
        for key in ("top5_inside_period", "right_note_in_top5")
    }
    print(json.dumps({"questions": total, **weighted}))


if __name__ == "__main__":
    main()
