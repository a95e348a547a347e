"""Retrieval quality of each fusion mode: SciFact (BEIR) and a known-answer set on the Help vault.

Needs an Ollama (or the all-minilm stand-in, ../shared/tools/minilm_ollama) at
OLLAMA_HOST. Indexes go to --state-dir and are reused (and the stand-in's
--cache keeps vectors), so a second run costs only the queries.

    OLLAMA_HOST=http://127.0.0.1:11435 .venv/bin/python bench/quality_bench.py \
        --embed-model all-minilm --state-dir /tmp/bench-state [--scifact] [--help-vault]

--hub-sample: the notes of bench/data/hub_sample.json (bench/hub_sample.py: a fixed draw
from the Obsidian hub vault) copied into --work, and the questions of
bench/data/hub_questions.json over them; words, vector and convex (the default) only. A
question may list more notes than its `path` (`also`): page recall@5 is then the share of
them in the top 5, MRR the rank of the first. --hub-notes N builds the first N notes of the
draw only (for a slow embedder) and asks the questions answered among them. Words only:
--host http://127.0.0.1:9 (nothing listens there). A --work and a --state-dir per model (the
vault lock is per vault).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.records import Embedder, Fingerprint
from askvault.services.index.index_pass import index_vault
from askvault.services.retrieval.search import search
from askvault.settings import Settings, load_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hub_sample import HUB_VAULT, SAMPLE_FILE, copy_sample  # noqa: E402
from scifact_vault import DEFAULT_DATA, write_vault  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
HELP_VAULT = SHARED / "vaults" / "obsidian-help-en"
HELP_QUESTIONS = Path(__file__).resolve().parent / "data" / "help_questions.json"
HUB_QUESTIONS = Path(__file__).resolve().parent / "data" / "hub_questions.json"
MODES = ("words", "vector", "convex", "rrf", "rerank", "rerank-local")
HUB_MODES = ("words", "vector", "convex")
DEPTH = 100
EMBED_BATCH = 8


class CachedQueries:
    """Wraps an embedder so each query is embedded once across all modes."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.cache: dict[str, list[float]] = {}

    def fingerprint(self) -> Fingerprint:
        return self.inner.fingerprint()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str, model: str | None = None) -> list[float]:
        if text not in self.cache:
            self.cache[text] = self.inner.embed_query(text, model)
        return self.cache[text]


def _settings(
    vault: Path, state: Path, model: str, host: str, candidates: int, chunk_tokens: int = 0
) -> Settings:
    chunking = {"index.chunk_max_tokens": chunk_tokens} if chunk_tokens else {}
    return load_settings(
        None,
        flags={
            **chunking,
            "vault": str(vault),
            "state_dir": str(state),
            "ollama.embed_model": model,
            "ollama.host": host,
            "search.candidates": candidates,
            # A slow CPU embedder (nomic-embed-text: ~3 texts/s on 2 cores) needs small
            # batches and patient timeouts, or the first batch times out and nothing is embedded.
            "ollama.embed_batch_size": EMBED_BATCH,
            "ollama.timeout_s": 300.0,
            "search.embed_timeout_s": 60.0,
        },
    )


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    """nDCG@k with graded relevance (BEIR's definition)."""
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def reciprocal_rank(ranked: list[str], relevant: dict[str, int] | set[str]) -> float:
    return next((1.0 / (i + 1) for i, doc in enumerate(ranked) if doc in relevant), 0.0)


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def run_scifact(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    chosen = None
    vault = args.work / "scifact_vault"
    if args.scifact_subset:
        # A subset for a slow embedder (scifact_vault.subset): its abstracts, its claims.
        chosen = json.loads(args.scifact_subset.read_text(encoding="utf-8"))
        vault = args.work / "scifact_subset_vault"
    if not vault.exists():
        write_vault(args.scifact_data, vault, None if chosen is None else set(chosen["doc_ids"]))
    settings = _settings(
        vault, args.state_dir, args.embed_model, args.host, DEPTH * 2, args.chunk_tokens
    )
    started = time.time()
    report = index_vault(settings, OllamaClients(settings))
    print(f"scifact index: {report.as_dict()} ({time.time() - started:.0f} s)", file=sys.stderr)
    queries = {}
    for line in (args.scifact_data / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    for line in (args.scifact_data / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(score)
    qids = sorted(q for q in qrels if q in queries)[: args.max_queries or None]
    if chosen is not None:
        qids = [q for q in qids if q in set(chosen["claim_ids"])]
    conn = connect(settings.db_path)
    embedder = CachedQueries(OllamaClients(settings).embedder())
    results: dict[str, dict[str, float]] = {}
    try:
        for mode in MODES:
            sums = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr": 0.0}
            per_query_ndcg = []
            started = time.time()
            for qid in qids:
                hits = search(
                    conn, settings, queries[qid], limit=DEPTH, embedder=embedder, fusion_mode=mode
                ).hits
                ranked = [h.note_path.rsplit("/", 1)[-1][:-3] for h in hits]
                rel = qrels[qid]
                per_query_ndcg.append(ndcg_at(ranked, rel, 10))
                sums["ndcg@10"] += per_query_ndcg[-1]
                sums["recall@10"] += recall_at(ranked, rel, 10)
                sums["recall@100"] += recall_at(ranked, rel, 100)
                sums["mrr"] += reciprocal_rank(ranked, rel)
            results[mode] = {k: round(v / len(qids), 4) for k, v in sums.items()}
            # Fusion parameters were chosen on the even positions (with the Help questions);
            # the odd half is the held-out check.
            results[mode]["ndcg@10_tuning_half"] = _mean(per_query_ndcg[0::2])
            results[mode]["ndcg@10_held_out_half"] = _mean(per_query_ndcg[1::2])
            results[mode]["seconds"] = round(time.time() - started, 1)
            print(f"scifact {mode}: {results[mode]}", file=sys.stderr)
    finally:
        embedder.inner.close()
        conn.close()
    results["_queries"] = {"count": len(qids)}
    return results


def run_help(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    vault = args.work / "help_vault"
    if not vault.exists():
        shutil.copytree(HELP_VAULT, vault)
    settings = _settings(
        vault, args.state_dir, args.embed_model, args.host, DEPTH, args.chunk_tokens
    )
    index_vault(settings, OllamaClients(settings))
    questions = json.loads(HELP_QUESTIONS.read_text(encoding="utf-8"))
    conn = connect(settings.db_path)
    embedder = CachedQueries(OllamaClients(settings).embedder())
    results: dict[str, dict[str, float]] = {}
    try:
        for mode in MODES:
            results[mode] = page_figures(conn, settings, embedder, questions, mode, hub=False)
            print(f"help {mode}: {results[mode]}", file=sys.stderr)
    finally:
        embedder.inner.close()
        conn.close()
    results["_questions"] = {"count": len(questions)}
    return results


def page_figures(  # type: ignore[no-untyped-def]
    conn, settings: Settings, embedder, questions: list[dict], mode: str, *, hub: bool
) -> dict[str, float]:
    """Page recall@5, MRR and heading hit@5 of `questions` in one fusion mode. The Help set
    as it always was (one page each, MRR over the 20 hits, key `mrr`); the hub set with its
    second pages (`also`: recall@5 counts the share found), pages counted once, MRR@10."""
    recall5 = mrr = heading5 = 0.0
    for q in questions:
        expected = {q["path"], *q.get("also", [])} if hub else {q["path"]}
        hits = search(
            conn, settings, q["question"], limit=20, embedder=embedder, fusion_mode=mode
        ).hits
        if hub:
            paths = list(dict.fromkeys(h.note_path for h in hits))
            recall5 += len(expected & set(paths[:5])) / len(expected)
            mrr += reciprocal_rank(paths[:10], expected)
        else:
            paths = [h.note_path for h in hits]
            recall5 += q["path"] in paths[:5]
            mrr += reciprocal_rank(paths, expected)
        heading5 += any(
            h.note_path == q["path"] and (q["heading"] is None or h.heading == q["heading"])
            for h in hits[:5]
        )
    n = len(questions)
    return {
        "page_recall@5": round(recall5 / n, 4),
        "mrr@10" if hub else "mrr": round(mrr / n, 4),
        "heading_hit@5": round(heading5 / n, 4),
    }


def run_hub(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    # --hub-notes N: the first N notes of the draw (a slow embedder's share); only the
    # questions all of whose notes are among them are asked.
    notes = json.loads(SAMPLE_FILE.read_text(encoding="utf-8"))["paths"][: args.hub_notes or None]
    vault = args.work / f"hub_sample_vault_{len(notes)}"
    if not vault.exists():
        if not HUB_VAULT.is_dir():
            raise SystemExit(f"skipped: {HUB_VAULT} is absent (the bench needs ../shared/data)")
        copy_sample(HUB_VAULT, notes, vault)
    settings = _settings(
        vault, args.state_dir, args.embed_model, args.host, DEPTH, args.chunk_tokens
    )
    started = time.time()
    report = index_vault(settings, OllamaClients(settings)).as_dict()
    index_s = round(time.time() - started, 1)
    print(f"hub index: {report} ({index_s} s)", file=sys.stderr)
    questions = [
        q
        for q in json.loads(HUB_QUESTIONS.read_text(encoding="utf-8"))
        if {q["path"], *q.get("also", [])} <= set(notes)
    ]
    conn = connect(settings.db_path)
    embedder = CachedQueries(OllamaClients(settings).embedder())
    results: dict[str, dict[str, float]] = {}
    try:
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        for mode in HUB_MODES:
            results[mode] = page_figures(conn, settings, embedder, questions, mode, hub=True)
            print(f"hub {mode}: {results[mode]}", file=sys.stderr)
    finally:
        embedder.inner.close()
        conn.close()
    results["_questions"] = {"count": len(questions)}
    results["_index"] = {
        "notes": len(notes),
        "chunks": chunks,
        "seconds": index_s,
        "texts_embedded": report["texts_embedded"],
        "pending_embeddings": report["pending_embeddings"],
    }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embed-model", default="all-minilm")
    parser.add_argument("--host", default="http://127.0.0.1:11435")
    parser.add_argument("--state-dir", type=Path, default=Path("/tmp/askvault-bench-state"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/askvault-bench-work"))
    parser.add_argument("--scifact-data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--scifact", action="store_true", help="run SciFact")
    parser.add_argument("--help-vault", action="store_true", help="run the Help vault questions")
    parser.add_argument(
        "--hub-sample",
        action="store_true",
        help="run the hub-sample questions (bench/data/hub_sample.json, hub_questions.json)",
    )
    parser.add_argument(
        "--hub-notes", type=int, default=0, help="hub sample: its first N notes only"
    )
    parser.add_argument("--max-queries", type=int, default=0, help="first N SciFact queries only")
    parser.add_argument(
        "--scifact-subset",
        type=Path,
        help="SciFact on a subset only: the JSON written by scifact_vault.py --subset",
    )
    parser.add_argument(
        "--chunk-tokens",
        type=int,
        default=0,
        help="index.chunk_max_tokens (default: the product's); a state dir per value",
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    out: dict[str, object] = {"embed_model": args.embed_model}
    if args.help_vault or not (args.scifact or args.hub_sample):
        out["help"] = run_help(args)
    if args.hub_sample:
        out["hub_sample"] = run_hub(args)
    if args.scifact:
        out["scifact"] = run_scifact(args)
    text = json.dumps(out, indent=2, sort_keys=True)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
