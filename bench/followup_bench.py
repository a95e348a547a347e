"""Follow-up retrieval: page Recall@5 of follow-up turns vs first turns, on the Help vault.

The threads are bench/data/followup_threads.json (two- and three-turn threads written the
way people follow up: "and on mobile?", "can it be folded?", "what about Notion?"), each
turn with the notes that answer it (a hit is any of them in the top 5 pages).

Retrieval only, with the embedding model at --ollama (all-minilm): each follow-up is
searched as the product searches it (`core.followup.standalone_question`, the earlier
turns' questions first first) and, for comparison, as typed (`raw`) and with every
earlier question's terms carried (`all-turns`; the product carries the first's). `+cited` fuses the earlier turn's top 3
pages (what its answer would cite) into the ranking as candidates at half weight
(reciprocal-rank fusion): they can rise, nothing else is dropped.

    nice -n 10 .venv/bin/python bench/followup_bench.py --ollama http://127.0.0.1:11435

With `--host URL` (a chat model's Ollama; `--chat-model` to name it) every turn is also
answered through the real pipeline (first turns by `answer_question`, follow-ups by
`answer_follow_up`, as the inbox does; embeddings still from --ollama), and each turn's
status, answer, cited pages and seconds are written to --out for the answer-quality
reading, with a summary per kind of turn (answered share, share citing an expected
note, median seconds).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, require_shared  # noqa: E402
from askvault.adapters.db import connect  # noqa: E402
from askvault.app.clients import OllamaClients  # noqa: E402
from askvault.core.followup import standalone_question, subject_terms  # noqa: E402
from askvault.services.index_pass import index_vault  # noqa: E402
from askvault.services.search import search  # noqa: E402
from askvault.settings import Settings, load_settings  # noqa: E402

HELP_VAULT = DATA / "vaults" / "obsidian-help-en"
THREADS = Path(__file__).resolve().parent / "data" / "followup_threads.json"
CITED = 3  # an earlier turn's top pages taken as what its answer cites
CITED_WEIGHT = 0.5
RRF_K = 60


def _settings(vault: Path, state: Path, ollama: str, chat: str | None) -> Settings:
    flags: dict[str, object] = {
        "vault": str(vault),
        "state_dir": str(state),
        "ollama.embed_model": "all-minilm",
        "ollama.host": chat or ollama,
    }
    return load_settings(None, flags=flags)


def all_turns(earlier: list[str], follow_up: str) -> str:
    """The follow-up with every earlier question's subject terms carried (a variant)."""
    return standalone_question([" ".join(earlier)], follow_up)


def with_cited(ranked: list[str], cited: list[str]) -> list[str]:
    """`ranked` with `cited` fused in at CITED_WEIGHT by reciprocal rank."""
    score: dict[str, float] = {}
    for rank, page in enumerate(ranked):
        score[page] = score.get(page, 0.0) + 1 / (RRF_K + rank + 1)
    for rank, page in enumerate(cited):
        score[page] = score.get(page, 0.0) + CITED_WEIGHT / (RRF_K + rank + 1)
    return sorted(score, key=lambda p: -score[p])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ollama", default="http://127.0.0.1:11435", help="embeddings")
    parser.add_argument("--host", help="a chat model's Ollama: also answer every turn")
    parser.add_argument("--chat-model", help="the chat model at --host (default: settings')")
    parser.add_argument("--work", type=Path, default=Path("/tmp/askvault-followup-bench"))
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--show", action="store_true", help="print each follow-up's queries")
    args = parser.parse_args()
    require_shared(HELP_VAULT)
    vault = args.work / "vault"
    if not vault.exists():
        shutil.copytree(HELP_VAULT, vault)
    settings = _settings(vault, args.work / "state", args.ollama, None)
    index_vault(settings, OllamaClients(settings))
    threads = json.loads(THREADS.read_text(encoding="utf-8"))
    conn = connect(settings.db_path)
    clients = OllamaClients(settings)
    embedder = clients.embedder()
    variants = ("raw", "all-turns", "standalone", "standalone+cited")
    hits: dict[str, list[bool]] = {v: [] for v in ("first", *variants)}
    seconds: dict[str, list[float]] = {"first": [], "follow-up": []}

    def ranked(query: str) -> tuple[list[str], float]:
        started = time.perf_counter()
        result = search(conn, settings, query, limit=20, embedder=embedder)
        return [h.note_path for h in result.hits], time.perf_counter() - started

    for thread in threads:
        earlier: list[str] = []
        cited: list[str] = []
        for number, turn in enumerate(thread["turns"]):
            expected = set(turn["expected"])
            if number == 0:
                pages, took = ranked(turn["question"])
                hits["first"].append(bool(expected & set(pages[:5])))
                seconds["first"].append(took)
            else:
                queries = {
                    "raw": turn["question"],
                    "all-turns": all_turns(earlier, turn["question"]),
                    "standalone": standalone_question(earlier, turn["question"]),
                }
                results = {name: ranked(q) for name, q in queries.items()}
                results["standalone+cited"] = (
                    with_cited(results["standalone"][0], cited),
                    results["standalone"][1],
                )
                for name, (got, _) in results.items():
                    hits[name].append(bool(expected & set(got[:5])))
                seconds["follow-up"].append(results["standalone"][1])
                pages = results["standalone+cited"][0]
                if args.show:
                    mark = "+" if expected & set(pages[:5]) else "-"
                    print(f"{mark} {queries['standalone']!r} -> {pages[:3]}", file=sys.stderr)
            earlier.append(turn["question"])
            cited = pages[:CITED]
    embedder.close()
    conn.close()
    out: dict[str, object] = {
        "threads": len(threads),
        "first_turns": len(hits["first"]),
        "follow_ups": len(hits["raw"]),
        "page_recall@5": {k: round(sum(v) / len(v), 4) for k, v in hits.items()},
        "median_search_s": {k: round(statistics.median(v), 4) for k, v in seconds.items()},
        "subject_terms_example": subject_terms(threads[0]["turns"][0]["question"]),
    }
    if args.host:
        rows = answer_threads(args, vault, threads)
        out["answers_summary"] = summary(rows)
        out["answers"] = rows
    text = json.dumps(out, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


def answer_threads(args: argparse.Namespace, vault: Path, threads: list[dict]) -> list[dict]:
    """Every turn answered through the real pipeline with the chat model at --host (first
    turns by `answer_question`, follow-ups by `answer_follow_up`, as the inbox does)."""
    from askvault.records import QuestionOptions
    from askvault.services.answer import answer_follow_up, answer_question

    settings = _settings(vault, args.work / "state", args.ollama, None)
    chat = load_settings(
        None,
        flags={
            "vault": str(vault),
            "state_dir": str(args.work / "state"),
            "ollama.embed_model": "all-minilm",
            "ollama.host": args.host,
            **({"ollama.chat_model": args.chat_model} if args.chat_model else {}),
        },
    )
    embedder = OllamaClients(settings).embedder()
    generator = OllamaClients(chat).generator()
    conn = connect(settings.db_path)
    rows: list[dict] = []
    try:
        for thread in threads:
            earlier: list[str] = []
            for number, turn in enumerate(thread["turns"]):
                started = time.perf_counter()
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
                else:
                    answered = answer_follow_up(
                        conn,
                        chat,
                        turn["question"],
                        earlier,
                        embedder=embedder,
                        generator=generator,
                    )
                    result, searched = answered.result, answered.searched
                took = time.perf_counter() - started
                rows.append(
                    {
                        "thread": thread["id"],
                        "turn": number + 1,
                        "question": turn["question"],
                        "searched": searched,
                        "expected": turn["expected"],
                        "status": result.status,
                        "answer": result.answer,
                        "cited": list(result.cited_paths),
                        "cited_expected": bool(set(result.cited_paths) & set(turn["expected"])),
                        "seconds": round(took, 2),
                    }
                )
                print(f"{thread['id']} {number + 1}: {result.status} {took:.1f}s", file=sys.stderr)
                earlier.append(turn["question"])
    finally:
        embedder.close()
        generator.close()
        conn.close()
    return rows


def summary(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per kind of turn (first, follow-up): answered share, share citing an expected
    note, median seconds."""
    out: dict[str, dict[str, float]] = {}
    for kind, picked in (
        ("first", [r for r in rows if r["turn"] == 1]),
        ("follow-up", [r for r in rows if r["turn"] > 1]),
    ):
        if picked:
            out[kind] = {
                "turns": len(picked),
                "answered": round(sum(r["status"] == "answered" for r in picked) / len(picked), 4),
                "cited_expected": round(sum(r["cited_expected"] for r in picked) / len(picked), 4),
                "median_s": round(statistics.median(r["seconds"] for r in picked), 2),
            }
    return out


if __name__ == "__main__":
    main()
