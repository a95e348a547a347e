"""Follow-up retrieval: page Recall@5 of follow-up turns vs first turns, on the Help vault.

The threads are bench/data/followup_threads.json (two- and three-turn threads written the
way people follow up: "and on mobile?", "can it be folded?", "what about Notion?"), each
turn with the notes that answer it (a hit is any of them in the top 5 pages); `--threads
bench/data/followup_threads_heldout.json` asks 29 more, written after the follow-up checks
were tuned on the first set (18 of them by a writer who saw neither the checks nor any
reply), to tell a rule that holds from one fitted to the first set, and
bench/data/followup_threads_third.json 20 more, written by a writer who saw no code, no
reply and neither set, after the carried pages' points were chosen on both.

Retrieval only, with the embedding model at --ollama (`--embed-model`, all-minilm unless
told, the product's default; or nomic-embed-text): each follow-up is
searched as the product searches it (`standalone+carried`: made standalone by
`core.followup.standalone_question`, with the earlier turn's first pages as candidates,
services/answer/followup.earlier_pages) and, for comparison, by the rules alone
(`standalone`), as typed (`raw`) and with every earlier question's terms carried
(`all-turns`; the product carries the first's).

    nice -n 10 .venv/bin/python bench/followup_bench.py --ollama http://127.0.0.1:11435

With `--host URL` (a chat model's Ollama; `--chat-model` to name it) every turn is also
answered through the real pipeline (first turns by `answer_question`, follow-ups by
`answer_follow_up`, as the inbox does; embeddings still from --ollama), and each turn's
status, answer, cited pages and seconds are written to --out for the answer-quality
reading, with a summary per kind of turn (answered share, share citing an expected
note, median seconds, and the share of follow-up replies that mostly repeat the first
turn's reply: a lexical sign of answering the earlier question).

`--carried off` answers the follow-ups without the earlier turn's pages as candidates (the
rules' search alone), for a paired reading of what carrying them changes; `--off-thread off`
publishes a follow-up's reply that links only to pages off the thread (decision.off_thread),
for the same reading of that check. `--form` is how
the model reads a follow-up (core.followup.FOLLOW_UP_FORMS: `beside`; `standalone`, the
product's; `background`; `background+answer`, given the first turn's
published answer). Replies are cached by prompt (`--cache`, answer_bench's cache), so the
first turns, the same prompt in every form, are asked once; a replayed turn reports the
model's own seconds. Correctness is read, as in answer_bench.py: labels by reply
(`--labels`, keyed by the hash of `<thread>/<turn>` and the reply's words), and
`--export-unlabelled FILE` appends the replies no label covers, in key order, each with its
thread's earlier questions, for a reader who does not see the form.

    nice -n 10 .venv/bin/python bench/followup_bench.py --ollama http://127.0.0.1:11435 \
        --host http://127.0.0.1:11436 --chat-model qwen2.5-coder:1.5b --work /tmp/fu/wd \
        --form background --out /tmp/fu/background.json \
        --export-unlabelled /tmp/fu/background-unl.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, require_shared  # noqa: E402
from answer_bench import (  # noqa: E402
    DEFAULT_CACHE,
    LABELS,
    CachingGenerator,
    Score,
    correctness,
    load_labels,
    reply_key,
    reply_words,
)
from askvault.adapters.db import connect  # noqa: E402
from askvault.app.clients import OllamaClients  # noqa: E402
from askvault.core.followup import (  # noqa: E402
    DEFAULT_FOLLOW_UP_FORM,
    FOLLOW_UP_FORMS,
    period_texts,
    standalone_question,
    subject_terms,
)
from askvault.core.query import STOPWORDS  # noqa: E402
from askvault.records import PeriodRequest, QuestionOptions  # noqa: E402
from askvault.services.answer.followup import CARRIED_PAGES, earlier_pages  # noqa: E402
from askvault.services.index.index_pass import index_vault  # noqa: E402
from askvault.services.retrieval.search import search  # noqa: E402
from askvault.settings import Settings, load_settings  # noqa: E402

HELP_VAULT = DATA / "vaults" / "obsidian-help-en"
THREADS = Path(__file__).resolve().parent / "data" / "followup_threads.json"
# A follow-up reply with this share of its words in the first turn's reply repeats it.
REPEATS_FIRST_SHARE = 0.7


def _settings(
    vault: Path, state: Path, ollama: str, chat: str | None, embed_model: str = "all-minilm"
) -> Settings:
    flags: dict[str, object] = {
        "vault": str(vault),
        "state_dir": str(state),
        "ollama.embed_model": embed_model,
        "ollama.host": chat or ollama,
    }
    return load_settings(None, flags=flags)


def all_turns(earlier: list[str], follow_up: str) -> str:
    """The follow-up with every earlier question's subject terms carried (a variant)."""
    return standalone_question([" ".join(earlier)], follow_up)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ollama", default="http://127.0.0.1:11435", help="embeddings")
    parser.add_argument(
        "--embed-model",
        default="all-minilm",
        help="the embedding model at --ollama (all-minilm, the product's default)",
    )
    parser.add_argument("--host", help="a chat model's Ollama: also answer every turn")
    parser.add_argument("--chat-model", help="the chat model at --host (default: settings')")
    parser.add_argument("--work", type=Path, default=Path("/tmp/askvault-followup-bench"))
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--show", action="store_true", help="print each follow-up's queries")
    parser.add_argument(
        "--form",
        choices=FOLLOW_UP_FORMS,
        default=DEFAULT_FOLLOW_UP_FORM,
        help="how the model reads a follow-up (with --host)",
    )
    parser.add_argument(
        "--threads",
        type=Path,
        default=THREADS,
        help="the threads to ask (default: bench/data/followup_threads.json; "
        "bench/data/followup_threads_heldout.json: threads written after the first set's "
        "rules were chosen)",
    )
    parser.add_argument("--limit", type=int, help="the first N threads only")
    parser.add_argument(
        "--verify", help="queries.verify for every turn (off | judge | again | doubtful)"
    )
    parser.add_argument(
        "--own-question",
        choices=("on", "off"),
        help="queries.own_question for every turn (the default: on)",
    )
    parser.add_argument(
        "--carried",
        choices=("on", "off"),
        default="on",
        help="with --host: the earlier turn's pages as candidates (on, the product's) or "
        "not (off: the rules' search alone, for a paired comparison)",
    )
    parser.add_argument(
        "--off-thread",
        choices=("on", "off"),
        default="on",
        help="with --host: withhold a follow-up's reply that links only to pages off the "
        "thread (on, the product's) or not (off: for a paired comparison)",
    )
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="replies by prompt")
    parser.add_argument("--labels", type=Path, default=LABELS, help="the reader's labels")
    parser.add_argument(
        "--export-unlabelled",
        type=Path,
        help="append the replies no label covers (JSON lines) for the reader",
    )
    args = parser.parse_args()
    require_shared(HELP_VAULT)
    vault = args.work / "vault"
    if not vault.exists():
        shutil.copytree(HELP_VAULT, vault)
    settings = _settings(vault, args.work / "state", args.ollama, None, args.embed_model)
    index_vault(settings, OllamaClients(settings))
    threads = json.loads(args.threads.read_text(encoding="utf-8"))[: args.limit]
    conn = connect(settings.db_path)
    clients = OllamaClients(settings)
    embedder = clients.embedder()
    variants = ("raw", "all-turns", "standalone", "standalone+carried")
    hits: dict[str, list[bool]] = {v: [] for v in ("first", *variants)}
    seconds: dict[str, list[float]] = {"first": [], "follow-up": []}
    # Each turn's hit by the product's search, for pooling sets (bench/followup_pool.py).
    turn_hits: list[dict[str, object]] = []

    def ranked(
        query: str, carried: tuple[str, ...] = (), words: tuple[str, ...] = ()
    ) -> tuple[list[str], float]:
        started = time.perf_counter()
        result = search(
            conn,
            settings,
            query,
            limit=20,
            embedder=embedder,
            carried=carried,
            period=PeriodRequest(words=words),
        )
        return [h.note_path for h in result.hits], time.perf_counter() - started

    for thread in threads:
        earlier: list[str] = []
        for number, turn in enumerate(thread["turns"]):
            expected = set(turn["expected"])
            if number == 0:
                pages, took = ranked(turn["question"])
                hits["first"].append(bool(expected & set(pages[:5])))
                seconds["first"].append(took)
                turn_hits.append({"thread": thread["id"], "turn": 1, "hit": hits["first"][-1]})
            else:
                queries = {
                    "raw": turn["question"],
                    "all-turns": all_turns(earlier, turn["question"]),
                    "standalone": standalone_question(earlier, turn["question"]),
                }
                results = {name: ranked(q) for name, q in queries.items()}
                # As the product searches it, the earlier pages' searches timed too.
                started = time.perf_counter()
                carried = earlier_pages(
                    conn, settings, earlier, embedder=embedder, options=QuestionOptions()
                )
                pages, _ = ranked(
                    queries["standalone"],
                    carried[:CARRIED_PAGES],
                    period_texts(earlier, turn["question"]),
                )
                results["standalone+carried"] = (pages, time.perf_counter() - started)
                for name, (got, _) in results.items():
                    hits[name].append(bool(expected & set(got[:5])))
                seconds["follow-up"].append(results["standalone+carried"][1])
                turn_hits.append(
                    {
                        "thread": thread["id"],
                        "turn": number + 1,
                        "hit": hits["standalone+carried"][-1],
                    }
                )
                if args.show:
                    mark = "+" if expected & set(pages[:5]) else "-"
                    print(f"{mark} {queries['standalone']!r} -> {pages[:3]}", file=sys.stderr)
            earlier.append(turn["question"])
    embedder.close()
    conn.close()
    out: dict[str, object] = {
        "threads": len(threads),
        "first_turns": len(hits["first"]),
        "follow_ups": len(hits["raw"]),
        "page_recall@5": {k: round(sum(v) / len(v), 4) for k, v in hits.items()},
        "median_search_s": {k: round(statistics.median(v), 4) for k, v in seconds.items()},
        "subject_terms_example": subject_terms(threads[0]["turns"][0]["question"]),
        "turn_hits": turn_hits,
    }
    if args.host:
        rows = answer_threads(args, vault, threads, load_labels(args.labels))
        out["form"] = args.form
        out["answers_summary"] = summary(rows)
        out["answers"] = rows
        if args.export_unlabelled:
            added = export_unlabelled(args.export_unlabelled, rows)
            print(
                f"{added} unlabelled replies appended to {args.export_unlabelled}", file=sys.stderr
            )
    text = json.dumps(out, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


def answer_threads(
    args: argparse.Namespace,
    vault: Path,
    threads: list[dict],
    labels: dict[str, dict[str, str]],
) -> list[dict]:
    """Every turn answered through the real pipeline with the chat model at --host (first
    turns by `answer_question`, follow-ups by `answer_follow_up` in --form, as the inbox
    does), each reply with its label if the reader gave it one."""
    from askvault.core import decision as decision_module
    from askvault.services.answer import answer_follow_up, answer_question
    from askvault.services.answer import followup as follow_up_module

    if args.carried == "off":  # the rules' search alone: nothing carried, no thread's reach
        follow_up_module.earlier_pages = lambda *_, **__: ()  # type: ignore[assignment]
    if args.off_thread == "off":  # every reply the other checks pass is published
        decision_module.off_thread = lambda *_: None  # type: ignore[assignment]
    settings = _settings(vault, args.work / "state", args.ollama, None, args.embed_model)
    chat = load_settings(
        None,
        flags={
            "vault": str(vault),
            "state_dir": str(args.work / "state"),
            "ollama.embed_model": args.embed_model,
            "ollama.host": args.host,
            **({"ollama.chat_model": args.chat_model} if args.chat_model else {}),
            **({"queries.verify": args.verify} if args.verify else {}),
            **({"queries.own_question": args.own_question == "on"} if args.own_question else {}),
        },
    )
    embedder = OllamaClients(settings).embedder()
    generator = CachingGenerator(OllamaClients(chat).generator(), args.cache)
    conn = connect(settings.db_path)
    rows: list[dict] = []
    try:
        for thread in threads:
            earlier: list[str] = []
            first_answer = first_reply = ""
            for number, turn in enumerate(thread["turns"]):
                started = time.perf_counter()
                generator.calls.clear()
                asked_as, background = turn["question"], ""
                carried: list[str] = []
                if number == 0:
                    result = answer_question(
                        conn,
                        chat,
                        turn["question"],
                        QuestionOptions(),
                        embedder=embedder,
                        generator=generator,
                    )
                    searched = turn["question"]
                    first_answer = result.answer if result.status == "answered" else ""
                    first_reply = result.reply
                else:
                    answered = answer_follow_up(
                        conn,
                        chat,
                        turn["question"],
                        earlier,
                        embedder=embedder,
                        generator=generator,
                        form=args.form,
                        earlier_answer=first_answer,
                    )
                    result, searched = answered.result, answered.searched
                    asked_as, background = answered.asked_as, answered.background
                    carried = list(answered.carried)
                took = _model_seconds(
                    generator.calls, result.timings, time.perf_counter() - started
                )
                qid = f"{thread['id']}/{number + 1}"
                key = reply_key(qid, result.reply)
                rows.append(
                    {
                        "thread": thread["id"],
                        "turn": number + 1,
                        "question": turn["question"],
                        "earlier": list(earlier),
                        "searched": searched,
                        "carried": carried,
                        "asked_as": asked_as,
                        "background": background,
                        "expected": turn["expected"],
                        "status": result.status,
                        "reason": result.reason,
                        "decided_by": result.decided_by,
                        "answer": result.answer,
                        "reply": result.reply,
                        "key": key,
                        "label": labels.get(key, {}).get("label"),
                        "cited": list(result.cited_paths),
                        "cited_expected": bool(set(result.cited_paths) & set(turn["expected"])),
                        "repeats_first": number > 0 and repeats(result.reply, first_reply),
                        "seconds": round(took, 2),
                        "cached": bool(generator.calls)
                        and all(c.get("cached") for c in generator.calls),
                    }
                )
                print(f"{qid}: {result.status} {took:.1f}s", file=sys.stderr, flush=True)
                earlier.append(turn["question"])
    finally:
        embedder.close()
        generator.close()
        conn.close()
    return rows


def _model_seconds(calls: list[dict], timings: dict[str, float], wall: float) -> float:
    """A turn's seconds: the wall time, or for a reply replayed from the cache the model's
    own recorded time plus this run's retrieval and checks (as answer_bench.py counts)."""
    if not calls or not all(c.get("cached") for c in calls):
        return wall
    model = sum(c["prompt_eval_s"] + c["generation_s"] for c in calls)
    return model + timings.get("retrieval_s", 0.0) + timings.get("checks_s", 0.0)


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", reply_words(text).casefold()) if w not in STOPWORDS}


def repeats(reply: str, first: str) -> bool:
    """Does `reply` (a follow-up's) mostly repeat `first` (the first turn's reply): at least
    REPEATS_FIRST_SHARE of its content words are in it. An empty reply repeats nothing."""
    words = _content_words(reply)
    if not words:
        return False
    return len(words & _content_words(first)) / len(words) >= REPEATS_FIRST_SHARE


def export_unlabelled(path: Path, rows: list[dict]) -> int:
    """Append the replies no label covers to `path` (JSON lines, in key order, so neither
    the form nor the status shows); returns how many were new."""
    known: set[str] = set()
    if path.exists():
        known = {json.loads(line)["key"] for line in path.read_text().splitlines() if line}
    out = []
    for row in sorted(rows, key=lambda r: r["key"]):
        if row["label"] is not None or row["key"] in known:
            continue
        known.add(row["key"])
        out.append(
            {
                "key": row["key"],
                "thread": row["thread"],
                "turn": row["turn"],
                "earlier_questions": row["earlier"],
                "question": row["question"],
                "notes": row["expected"],
                "reply": reply_words(row["reply"]),
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for item in out:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    return len(out)


def summary(rows: list[dict]) -> dict[str, dict[str, float | int | None]]:
    """Per kind of turn (first, follow-up): answered share, share citing an expected
    note, share of replies repeating the first turn's (follow-ups), median seconds, and
    the reader's figures (answer_bench.correctness; every turn is answerable)."""
    out: dict[str, dict[str, float | int | None]] = {}
    for kind, picked in (
        ("first", [r for r in rows if r["turn"] == 1]),
        ("follow-up", [r for r in rows if r["turn"] > 1]),
    ):
        if not picked:
            continue
        n = len(picked)
        scores = [Score(r["key"], True, r["status"], label=r["label"]) for r in picked]
        out[kind] = {
            "turns": n,
            "answered": round(sum(r["status"] == "answered" for r in picked) / n, 4),
            "cited_expected": round(sum(r["cited_expected"] for r in picked) / n, 4),
            "repeats_first": round(sum(r["repeats_first"] for r in picked) / n, 4),
            "median_s": round(statistics.median(r["seconds"] for r in picked), 2),
            **correctness(scores),
        }
    return out


if __name__ == "__main__":
    main()
