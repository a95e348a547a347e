"""A question asked during the first index, against the same question once every chunk has
its vector (issue 22 item 4: "answered within its usual time plus 20%").

`askvault run` on a copy of the Help vault whose every line carries a run token (so the
embedding server's cache has seen none of it), with a real chat model behind OLLAMA_HOST.
As soon as the words are indexed, question notes are dropped into queries/inbox/ one at a
time, while the first index embeds; once no chunk waits for its vector the same questions
are asked again under other names. Each figure is the wall time from the question note's
write to its answer note (the settle time, the same in both, included), and the share of
chunks with vectors when it was asked.

    nice -n 5 .venv/bin/python bench/first_index_question_bench.py \\
        --host http://127.0.0.1:11436 --chat-model qwen2.5-coder:1.5b --embed-model all-minilm
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA, REPO, machine, require_shared  # noqa: E402
from first_index_bench import salted_copy  # noqa: E402

QUESTIONS = REPO / "bench" / "data" / "answer_questions.json"


def status(env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "askvault", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def embedded_share(doc: dict[str, object]) -> float:
    chunks = int(str(doc.get("chunks") or 0))
    pending = int(str(doc.get("pending_embeddings") or 0))
    return 1.0 - pending / chunks if chunks else 0.0


def ask(vault: Path, name: str, question: str, timeout_s: float) -> tuple[float, str]:
    """Seconds from the question note's write to its answer note, and the answer's status."""
    inbox = vault / "queries" / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    answers = vault / "queries" / "answers"
    before = set(answers.glob("*.md")) if answers.exists() else set()
    started = time.monotonic()
    (inbox / f"{name}.md").write_text(question + "\n", encoding="utf-8")
    while time.monotonic() - started < timeout_s:
        if answers.exists():
            for path in set(answers.glob("*.md")) - before:
                text = path.read_text(encoding="utf-8", errors="replace")
                for status in ("answered", "no-answer"):
                    if f"\nstatus: {status}" in text:
                        return time.monotonic() - started, status
        time.sleep(0.2)
    raise SystemExit(f"no answer to {name} within {timeout_s} s")


def run(args: argparse.Namespace) -> dict[str, object]:
    source = DATA / "vaults" / "obsidian-help-en"
    require_shared(source)
    # A question mark ends each: the note is taken after `queries.settle_s`, not the minute
    # an unfinished-looking question waits (the same in both phases either way).
    questions = [
        q["question"].rstrip(" ?") + "?"
        for q in json.loads(QUESTIONS.read_text())
        if q["answerable"]
    ]
    questions = questions[: args.questions]
    work = Path(tempfile.mkdtemp(prefix="askvault-first-q-"))
    vault, state = work / "vault", work / "state"
    salted_copy(source, vault, f"run{uuid.uuid4().hex[:8]}", None)
    env = {
        **os.environ,
        "ASKVAULT_VAULT": str(vault),
        "ASKVAULT_STATE_DIR": str(state),
        "OLLAMA_HOST": args.host,
        "ASKVAULT_EMBED_MODEL": args.embed_model,
        "ASKVAULT_CHAT_MODEL": args.chat_model,
    }
    daemon = subprocess.Popen(
        [sys.executable, "-m", "askvault", "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(work / "daemon.log", "w"),  # noqa: SIM115
    )
    during: list[dict[str, float | str]] = []
    after: list[dict[str, float | str]] = []
    try:
        while True:  # the words first
            time.sleep(1)
            try:
                doc = status(env)
            except subprocess.CalledProcessError:
                continue
            if int(str(doc.get("chunks") or 0)) > 0:
                break
        for i, question in enumerate(questions):
            share = embedded_share(status(env))
            if share >= 0.9:
                break
            seconds, outcome = ask(vault, f"during {i}", question, args.timeout)
            during.append(
                {"seconds": round(seconds, 1), "embedded_share": round(share, 3), "status": outcome}
            )
            print("during", during[-1], flush=True)
        while embedded_share(status(env)) < 1.0:
            time.sleep(2)
        for i, question in enumerate(questions[: len(during)]):
            seconds, outcome = ask(vault, f"after {i}", question, args.timeout)
            after.append({"seconds": round(seconds, 1), "embedded_share": 1.0, "status": outcome})
            print("after", after[-1], flush=True)
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
    ratios = [float(d["seconds"]) / float(a["seconds"]) for d, a in zip(during, after)]
    return {
        "machine": machine(),
        "questions": len(during),
        "during": during,
        "after": after,
        "median_during_s": statistics.median(float(d["seconds"]) for d in during)
        if during
        else None,
        "median_after_s": statistics.median(float(a["seconds"]) for a in after) if after else None,
        "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
        "work": str(work),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", required=True, help="Ollama (chat and embeddings)")
    parser.add_argument("--chat-model", default="qwen2.5-coder:1.5b")
    parser.add_argument("--embed-model", default="all-minilm")
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = run(args)
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
