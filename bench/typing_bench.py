"""When is a question finished? The replayed typing sessions under each candidate rule.

Replays every session of tests/fixtures/typing (keystrokes saved the way Obsidian saves
them: about every 2 s while typing, at once on leaving a note; its workspace file written
2 s after the focus changes) into a fixture vault, while the real inbox, with a clock moved
by hand and the fake Ollama of the tests, answers what each rule takes for finished.
Prints, per rule, the fragments answered and the seconds from the last keystroke to the
answer, then the fragments and waits of the rule in force for other long quiet times.

The clock is simulated, so the figures do not depend on the machine and one run is enough:

    .venv/bin/python bench/typing_bench.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from askvault.core.settling import settle_wait_s  # noqa: E402
from askvault.settings import Settings  # noqa: E402
from support.fake_ollama import FakeOllama  # noqa: E402
from support.inbox_driver import inbox_settings, inbox_vault  # noqa: E402
from support.typing_replay import RULES, Replay, Session, load_sessions, replay_all  # noqa: E402


def _settings(root: Path, url: str, settle_s: float, unfinished_s: float) -> Settings:
    vault = inbox_vault(root / "vault")
    flags = {"queries.settle_s": settle_s, "queries.unfinished_settle_s": unfinished_s}
    return inbox_settings(vault, root / "state", url, **flags)


def _row(name: str, sessions: list[Session], replays: list[Replay]) -> str:
    fragments = sum(len(r.fragments) for r in replays)
    hit = sum(1 for r in replays if r.fragments)
    waits = [r.answered_after_s for r in replays if r.answered_after_s is not None]
    late = sum(
        1
        for s, r in zip(sessions, replays, strict=True)
        if r.answered_after_s is None or r.answered_after_s > s.answered_within_s
    )
    median = f"{statistics.median(waits):5.1f}" if waits else "    -"
    worst = f"{max(waits):5.1f}" if waits else "    -"
    return (
        f"| {name} | {fragments} ({hit} sessions) | {len(waits)}/{len(replays)} | {median} |"
        f" {worst} | {late} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=3.0, help="queries.settle_s")
    parser.add_argument(
        "--unfinished", type=float, default=60.0, help="queries.unfinished_settle_s"
    )
    args = parser.parse_args()
    sessions = load_sessions()
    header = (
        "| rule | fragments answered | answered | median s | max s | later than expected |\n"
        "|---|---|---|---|---|---|"
    )
    with FakeOllama() as fake, tempfile.TemporaryDirectory() as tmp:
        fake.start()
        print(f"{len(sessions)} sessions; settle_s {args.settle}, unfinished {args.unfinished}")
        print(header)
        per_session: dict[str, list[Replay]] = {}
        for i, (name, rule) in enumerate(RULES.items()):
            settings = _settings(Path(tmp) / f"r{i}", fake.url, args.settle, args.unfinished)
            replays = replay_all(sessions, settings, rule)
            per_session[name] = replays
            print(_row(name, sessions, replays))
        print("\nseconds from the last keystroke to the answer (- : a fragment was answered)")
        print("| session | " + " | ".join(f"r{i}" for i in range(len(RULES))) + " |")
        print("|---|" + "---|" * len(RULES))
        for j, session in enumerate(sessions):
            cells = []
            for replays in per_session.values():
                r = replays[j]
                cells.append("-" if r.fragments else f"{r.answered_after_s:.1f}")
            print(f"| {session.name} | " + " | ".join(cells) + " |")
        print("\nthe rule in force, by queries.unfinished_settle_s")
        print(header)
        for k, unfinished in enumerate((20.0, 30.0, 40.0, 45.0, 60.0, 90.0)):
            settings = _settings(Path(tmp) / f"u{k}", fake.url, args.settle, unfinished)
            replays = replay_all(sessions, settings, settle_wait_s)
            print(_row(f"unfinished {unfinished:.0f} s", sessions, replays))


if __name__ == "__main__":
    main()
