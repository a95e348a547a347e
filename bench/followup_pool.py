"""Follow-ups against first questions, pooled over thread sets, with bootstrap intervals.

A thread set holds 20-42 follow-ups, so one turn moves a set's page Recall@5 by 2.4-5
points: issue 23's "within 5 points of first questions" cannot be told apart from chance on
one set. This reads several `bench/followup_bench.py --out` files (each a set: its
`turn_hits`, and with `--host` its labelled `answers`), pools their turns, and gives each
difference (follow-ups minus first questions) with a 95% interval from resampling whole
threads within each set (a thread's turns lean on each other; the sets keep their sizes).

    .venv/bin/python bench/followup_pool.py /tmp/fu/first.json /tmp/fu/heldout.json ...

Figures: page Recall@5 of each kind of turn and the difference in points; from the
reader's labels (answer_bench.correctness), the share of published replies that are
wrong and the share of turns fully right (published and right), per kind and their
differences. Labels are looked up again by each reply's key (`--labels`, the reader's
file), so an --out file written before its replies were read counts them; a row without a
label counts in no label-based figure.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answer_bench import LABELS, Score, correctness, load_labels  # noqa: E402  (not a package)

RESAMPLES = 2000
Thread = list[dict]  # one thread's rows: {"turn": int, ...}
Figure = Callable[[Sequence[dict]], float | None]


def recall(rows: Sequence[dict]) -> float | None:
    """The share of rows whose search put an expected page in the top 5."""
    return sum(bool(r["hit"]) for r in rows) / len(rows) if rows else None


def wrong_published(rows: Sequence[dict]) -> float | None:
    """The share of published labelled replies read wrong."""
    return correctness(_scores(rows))["wrong_published"]


def fully_right(rows: Sequence[dict]) -> float | None:
    """The share of labelled turns published and read right."""
    return correctness(_scores(rows))["fully_right"]


def _scores(rows: Sequence[dict]) -> list[Score]:
    return [Score(r["key"], True, r["status"], label=r["label"]) for r in rows if r["label"]]


def threads_of(rows: Sequence[dict]) -> list[Thread]:
    """Rows grouped by their thread, in first-seen order."""
    out: dict[str, Thread] = {}
    for row in rows:
        out.setdefault(row["thread"], []).append(row)
    return list(out.values())


def difference(sets: Sequence[Sequence[Thread]], figure: Figure) -> float | None:
    """`figure` of the follow-ups minus that of the first questions, over every set's turns."""
    rows = [row for threads in sets for thread in threads for row in thread]
    first = figure([r for r in rows if r["turn"] == 1])
    later = figure([r for r in rows if r["turn"] > 1])
    return None if first is None or later is None else later - first


def interval(
    sets: Sequence[Sequence[Thread]], figure: Figure, *, seed: int = 23
) -> tuple[float, float] | None:
    """The 2.5% and 97.5% quantiles of `difference` over RESAMPLES draws of each set's
    threads with replacement (as many as the set has)."""
    rng = random.Random(seed)
    draws = []
    for _ in range(RESAMPLES):
        sample = [[rng.choice(threads) for _ in threads] for threads in sets if threads]
        value = difference(sample, figure)
        if value is not None:
            draws.append(value)
    if not draws:
        return None
    draws.sort()
    return draws[int(0.025 * len(draws))], draws[min(len(draws) - 1, int(0.975 * len(draws)))]


def pooled(sets: dict[str, dict]) -> dict[str, object]:
    """Every figure of the module docstring, per kind of turn, with its difference."""
    out: dict[str, object] = {"sets": list(sets)}
    for name, key, figure in (
        ("page_recall@5", "turn_hits", recall),
        ("wrong_published", "answers", wrong_published),
        ("fully_right", "answers", fully_right),
    ):
        grouped = [threads_of(doc[key]) for doc in sets.values() if doc.get(key)]
        if not grouped:
            continue
        rows = [row for threads in grouped for thread in threads for row in thread]
        first = [r for r in rows if r["turn"] == 1]
        later = [r for r in rows if r["turn"] > 1]
        diff = difference(grouped, figure)
        low_high = interval(grouped, figure)
        out[name] = {
            "first": _round(figure(first)),
            "follow_ups": _round(figure(later)),
            "turns": [len(first), len(later)],
            "difference_points": _round(None if diff is None else 100 * diff, 1),
            "interval_points": None
            if low_high is None
            else [round(100 * low_high[0], 1), round(100 * low_high[1], 1)],
        }
    return out


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", nargs="+", type=Path, help="followup_bench.py --out files")
    parser.add_argument("--labels", type=Path, default=LABELS, help="the reader's labels")
    args = parser.parse_args(argv)
    sets = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in args.outputs}
    labels = load_labels(args.labels)
    for doc in sets.values():
        for row in doc.get("answers", []):
            row["label"] = labels.get(row["key"], {}).get("label")
    print(json.dumps(pooled(sets), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
