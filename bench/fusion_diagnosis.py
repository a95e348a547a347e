"""Why an embedding model ranks where it does in the hybrid search: one built index, many
variants, only the queries embedded.

For each question the bench takes the word ranking, and the vector ranking of each query
variant (the model's query prefix, or none) from the exact channel and from the quantized
one (sign-bit scan, then exact rescoring, forced on at any size), then fuses them
offline in each variant: the convex mix at several vector shares, with min-max, z-score or
fixed-bound scaling, and rank fusion. Candidates, name bonuses and the per-page collapse
are the product's (services/retrieval/search.py, core/fusion.py), so `convex/min-max/0.6` with the
model's prefix on the exact channel is `askvault search` (checked against it per question).

Query vectors are cached in --work (one file per model), so a second run embeds nothing.

    OLLAMA_HOST= nice -n 19 .venv/bin/python bench/fusion_diagnosis.py \
        --embed-model nomic-embed-text --host http://127.0.0.1:11437 \
        --state-dir /tmp/bench-state --work /tmp/bench-work --set help --out diag.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from askvault.adapters import quantized, search_store, store
from askvault.adapters.db import Connection, connect
from askvault.adapters.ollama_embed import HttpEmbedder, embed_prefixes
from askvault.app.clients import OllamaClients
from askvault.core import fusion
from askvault.core.query import query_terms
from askvault.records import Fingerprint
from askvault.services.index.index_pass import index_vault
from askvault.services.retrieval import search as search_service
from askvault.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality_bench import (  # noqa: E402
    DEPTH,
    HELP_QUESTIONS,
    _settings,
    ndcg_at,
    recall_at,
    reciprocal_rank,
)

SHARES = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
LIMIT = 20  # hits kept per question, as quality_bench's Help mode


@dataclass(frozen=True)
class Question:
    text: str
    relevant: dict[str, int]  # page key -> grade
    heading: str | None = None


Normaliser = Callable[[Mapping[int, float], Sequence[float]], dict[int, float]]


def min_max(values: Mapping[int, float], reference: Sequence[float]) -> dict[int, float]:
    return fusion.min_max(values, reference)


def z_score(values: Mapping[int, float], reference: Sequence[float]) -> dict[int, float]:
    """(value - mean) / stdev of the reference, shifted so the reference's lowest is 0 and
    divided by 3 (a top hit ~3 sd above the mean lands near 1, as min-max's top does)."""
    ref = [v for v in reference if math.isfinite(v)]
    if len(ref) < 2:
        return fusion.min_max(values, reference)
    mean, sd = statistics.fmean(ref), statistics.pstdev(ref)
    if sd <= 0:
        return {key: 1.0 for key in values}
    low = (min(ref) - mean) / sd
    return {key: max(0.0, ((v - mean) / sd - low) / 3.0) for key, v in values.items()}


def top_only(values: Mapping[int, float], reference: Sequence[float]) -> dict[int, float]:
    """Scaled by the best score alone (value / max): the raw gaps, no floor."""
    ref = [v for v in reference if math.isfinite(v)]
    high = max(ref, default=0.0)
    if high <= 0:
        return fusion.min_max(values, reference)
    return {key: max(0.0, v / high) for key, v in values.items()}


NORMALISERS: dict[str, Normaliser] = {"min-max": min_max, "z-score": z_score, "max": top_only}


def fuse(
    candidates: Sequence[fusion.Candidate],
    terms: Sequence[str],
    share: float,
    normalise: Normaliser,
    depth: int,
) -> list[fusion.Scored]:
    """fusion.fuse_scores with the scaling of each channel swapped for `normalise`."""
    words_raw = {c.chunk_id: -c.words_raw for c in candidates if c.words_raw is not None}
    vector_raw = {c.chunk_id: 1.0 - c.vector_raw for c in candidates if c.vector_raw is not None}
    words_ref = [words_raw[c.chunk_id] for c in candidates if (c.words_rank or depth + 1) <= depth]
    vector_ref = [
        vector_raw[c.chunk_id] for c in candidates if (c.vector_rank or depth + 1) <= depth
    ]
    words = normalise(words_raw, words_ref) if words_raw else {}
    vector = normalise(vector_raw, vector_ref) if vector_raw else {}
    results = []
    for c in candidates:
        points: dict[str, float] = {}
        if c.chunk_id in words:
            points["words"] = (1.0 - share) * words[c.chunk_id]
        if c.chunk_id in vector:
            points["vector"] = share * vector[c.chunk_id]
        points.update(fusion.name_bonuses(terms, c))
        results.append(fusion._finish(c, points, {}))
    return sorted(results, key=fusion.order_key)


def prefilter_recall(
    bits: tuple[np.ndarray, np.ndarray, np.ndarray], query: list[float], wanted: list[int], k: int
) -> float:
    """Share of `wanted` (the exact top 10) among the chunks the sign-bit scan keeps when it
    keeps the share of the index the product keeps at the smallest index it serves:
    max(RESCORE_MIN, RESCORE_FACTOR * k) chunks of MIN_CHUNKS (3% for k = 100). A larger
    index keeps a smaller share, which an index of this size cannot stand for."""
    ids, valid, packed = bits
    query_bits = np.packbits(np.asarray(query, dtype=np.float32) > 0, bitorder="little")
    distance = quantized._hamming(packed, query_bits)
    distance[~valid] = np.iinfo(np.int32).max
    order = ids[np.argsort(distance, kind="stable")]
    rescored = max(quantized.RESCORE_MIN, quantized.RESCORE_FACTOR * k)
    top = set(order[: round(int(valid.sum()) * rescored / quantized.MIN_CHUNKS)].tolist())
    return sum(cid in top for cid in wanted) / max(1, len(wanted))


class FixedQuery:
    """An embedder whose query vector is given: `search()` fed the bench's own vector."""

    def __init__(self, fingerprint: Fingerprint, vector: list[float]) -> None:
        self._fingerprint = fingerprint
        self.vector = vector

    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError("the diagnosis embeds no document")

    def embed_query(self, text: str, model: str | None = None) -> list[float]:
        return self.vector

    def close(self) -> None:
        pass


class QueryVectors:
    """Query vectors per (prefix, text), kept in a JSON file so no query is embedded twice."""

    def __init__(self, path: Path, embedder: HttpEmbedder) -> None:
        self.path = path
        self.embedder = embedder
        self.saved: dict[str, list[float]] = (
            json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        )
        self.embedded = 0

    def get(self, prefix: str, text: str) -> list[float]:
        key = prefix + "\x00" + text
        if key not in self.saved:
            self.embedder.query_prefix = prefix
            self.saved[key] = self.embedder.embed_query(text)
            self.embedded += 1
            if self.embedded % 16 == 0:
                self.save()
        return self.saved[key]

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.saved), encoding="utf-8")
        tmp.replace(self.path)


def candidates_of(
    conn: Connection,
    words: list[tuple[int, float]],
    vectors: list[tuple[int, float]],
) -> list[fusion.Candidate]:
    """The candidates as services/retrieval/search.search builds them."""
    ids = list(dict.fromkeys([cid for cid, _ in words] + [cid for cid, _ in vectors]))
    rows = search_store.chunk_rows(conn, ids)
    word_rank = {cid: (r + 1, raw) for r, (cid, raw) in enumerate(words)}
    vec_rank = {cid: (r + 1, raw) for r, (cid, raw) in enumerate(vectors)}
    out = []
    for cid in ids:
        row = rows.get(cid)
        if row is None:
            continue
        w = word_rank.get(cid, (None, None))
        v = vec_rank.get(cid, (None, None))
        out.append(
            fusion.Candidate(
                row,
                words_rank=w[0],
                words_raw=None if w[1] is None else round(w[1], 6),
                vector_rank=v[0],
                vector_raw=None if v[1] is None else round(v[1], 6),
            )
        )
    return out


def score_pages(
    scored: Sequence[fusion.Scored], question: Question, key: Callable[[str], str]
) -> dict[str, float]:
    pages = fusion.collapse_pages(scored)[:LIMIT]
    ranked = [key(s.candidate.path) for s in pages]
    heading_hit = any(
        key(s.candidate.path) in question.relevant
        and (question.heading is None or s.candidate.chunk.heading == question.heading)
        for s in pages[:5]
    )
    return {
        "recall@5": recall_at(ranked, question.relevant, 5),
        "mrr": reciprocal_rank(ranked, question.relevant),
        "ndcg@10": ndcg_at(ranked, question.relevant, 10),
        "heading@5": float(heading_hit),
    }


def diagnose(
    conn: Connection,
    settings: Settings,
    questions: Sequence[Question],
    vectors: QueryVectors,
    key: Callable[[str], str],
) -> dict[str, Any]:
    fp = store.active_fingerprint(conn)
    if fp is None:
        raise SystemExit("the index has no active fingerprint: index it with the model first")
    depth = settings.search.candidates
    model_prefix = embed_prefixes(settings.ollama.embed_model)[0]
    prefixes = {"model prefix": model_prefix, "no prefix": ""} if model_prefix else {"none": ""}
    sums: dict[str, dict[str, float]] = {}
    gold_ranks: dict[str, list[int | None]] = {}
    checks = {"product_agrees": 0, "questions": 0}
    overlap: dict[str, list[float]] = defaultdict(list)

    per_question: dict[str, list[float]] = defaultdict(list)

    def add(name: str, metrics: Mapping[str, float]) -> None:
        bucket = sums.setdefault(name, {})
        for metric, value in metrics.items():
            bucket[metric] = bucket.get(metric, 0.0) + value
        # For paired comparisons of two variants: the question's reciprocal rank and nDCG@10.
        per_question[name].append(round(metrics["mrr"], 4))
        per_question[name + " [ndcg@10]"].append(round(metrics["ndcg@10"], 4))

    bits = quantized._read_bits(conn, fp.bits_table, fp.fingerprint.dimension)
    if bits is None:
        raise SystemExit("the sign-bit table cannot be read: the quantized channel is off")
    for question in questions:
        terms = query_terms(question.text)
        words = search_service._word_ranking(conn, question.text, depth, None)
        words_only = fusion.fuse_rankings(candidates_of(conn, words, []), terms, bonuses=False)
        add("words only", score_pages(words_only, question, key))
        for label, prefix in prefixes.items():
            qv = vectors.get(prefix, question.text)
            channels = {
                "exact": search_store.exact_vector_chunks(conn, fp.id, qv, k=depth),
                "quantized": search_store.vector_chunks(
                    conn, fp.id, qv, k=depth, bits_table=fp.bits_table, min_chunks=0
                ),
            }
            exact_ids = [cid for cid, _ in channels["exact"]]
            overlap[
                f"{label}: exact top 10 kept by the sign-bit scan's share at 20k chunks"
            ].append(prefilter_recall(bits, qv, exact_ids[:10], depth))
            quant_ids = [cid for cid, _ in channels["quantized"]]
            for k in (10, depth):
                overlap[f"{label}: quantized top {k} = exact top {k}"].append(
                    len(set(exact_ids[:k]) & set(quant_ids[:k])) / max(1, len(exact_ids[:k]))
                )
            for channel, ranking in channels.items():
                tag = f"{label}, {channel}"
                rows = search_store.chunk_rows(conn, [cid for cid, _ in ranking])
                gold = [
                    i + 1
                    for i, (cid, _) in enumerate(ranking)
                    if cid in rows and key(rows[cid].path) in question.relevant
                ]
                gold_ranks.setdefault(tag, []).append(gold[0] if gold else None)
                vector_only = fusion.fuse_rankings(
                    candidates_of(conn, [], ranking), terms, bonuses=False
                )
                add(f"{tag} | vector only", score_pages(vector_only, question, key))
                hybrid = candidates_of(conn, words, ranking)
                add(
                    f"{tag} | rrf",
                    score_pages(fusion.fuse_rankings(hybrid, terms), question, key),
                )
                for norm_name, normalise in NORMALISERS.items():
                    for share in SHARES:
                        scored = fuse(hybrid, terms, share, normalise, depth)
                        add(
                            f"{tag} | convex {norm_name} {share}",
                            score_pages(scored, question, key),
                        )
                        if (channel, prefix, share, norm_name) == (
                            "exact",
                            model_prefix,
                            0.6,
                            "min-max",
                        ):
                            product = search_service.search(
                                conn,
                                settings,
                                question.text,
                                limit=LIMIT,
                                embedder=FixedQuery(fp.fingerprint, qv),
                                fusion_mode="convex",
                            )
                            ours = fusion.collapse_pages(scored)[:LIMIT]
                            checks["product_agrees"] += [h.note_path for h in product.hits] == [
                                s.candidate.path for s in ours
                            ]
        checks["questions"] += 1
    vectors.save()
    n = len(questions)
    table = {
        name: {metric: round(value / n, 4) for metric, value in metrics.items()}
        for name, metrics in sums.items()
    }
    first_gold = {
        tag: {
            "median_rank_of_first_relevant_chunk": statistics.median(
                [r if r is not None else depth + 1 for r in ranks]
            ),
            "relevant_outside_top_depth": sum(r is None for r in ranks),
        }
        for tag, ranks in gold_ranks.items()
    }
    return {
        "variants": table,
        "first_relevant_chunk": first_gold,
        "checks": checks,
        "quantized_overlap": {name: round(statistics.fmean(v), 4) for name, v in overlap.items()},
        "queries_embedded_this_run": vectors.embedded,
        "per_question": per_question,
        "count": n,
    }


def help_questions() -> list[Question]:
    raw = json.loads(HELP_QUESTIONS.read_text(encoding="utf-8"))
    return [Question(q["question"], {q["path"]: 1}, q["heading"]) for q in raw]


def scifact_questions(data: Path, doc_ids: set[str] | None, qids: list[str]) -> list[Question]:
    queries = {}
    for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    for line in (data / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if doc_ids is None or doc in doc_ids:
            qrels.setdefault(qid, {})[doc] = int(score)
    return [Question(queries[q], qrels[q]) for q in qids if q in qrels and q in queries]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embed-model", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--set", choices=("help", "scifact-subset"), default="help")
    parser.add_argument(
        "--subset",
        type=Path,
        help="scifact-subset: the JSON of bench/scifact_vault.py --subset (doc ids, claim ids)",
    )
    parser.add_argument("--chunk-tokens", type=int, default=0, help="as quality_bench.py's")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.set == "help":
        vault = args.work / "help_vault"
        questions = help_questions()

        def key(path: str) -> str:
            return path
    else:
        if args.subset is None:
            parser.error("--set scifact-subset needs --subset")
        subset = json.loads(args.subset.read_text(encoding="utf-8"))
        vault = args.work / "scifact_subset_vault"
        from scifact_vault import DEFAULT_DATA

        questions = scifact_questions(DEFAULT_DATA, set(subset["doc_ids"]), subset["claim_ids"])

        def key(path: str) -> str:
            return path.rsplit("/", 1)[-1][:-3]

    if not vault.exists():
        raise SystemExit(f"{vault} is absent: run quality_bench.py first (it builds the index)")
    # The candidates of quality_bench's mode for the set (SciFact: twice as deep).
    depth = DEPTH if args.set == "help" else DEPTH * 2
    settings = _settings(
        vault, args.state_dir, args.embed_model, args.host, depth, args.chunk_tokens
    )
    report = index_vault(settings, OllamaClients(settings))  # nothing to do once built
    print(f"index: {report.as_dict()}", file=sys.stderr)
    embedder = HttpEmbedder(args.host, args.embed_model, timeout_s=300.0)
    vectors = QueryVectors(args.work / f"query-vectors-{args.embed_model}.json", embedder)
    conn = connect(settings.db_path)
    try:
        out = diagnose(conn, settings, questions, vectors, key)
    finally:
        conn.close()
        embedder.close()
    out["embed_model"] = args.embed_model
    out["set"] = args.set
    text = json.dumps(out, indent=2, sort_keys=True)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
