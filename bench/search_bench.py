"""Search latency at 10k / 100k / 1M chunks, excluding the query's embedding call.

Synthetic corpus: Zipf-distributed words from a fixed vocabulary and clustered
unit vectors (768 dims, like nomic-embed-text). Reports p50/p95 of
`services.search.search` in rrf, rerank and words modes, and for large sizes
a bit-quantized vec0 prefilter with float rescoring, with its recall@10
against exact float KNN.

    .venv/bin/python bench/search_bench.py --sizes 10000 100000 [--dim 768] [--queries 50]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

import numpy as np

from askvault.adapters import store
from askvault.adapters.db import Connection, connect, write_transaction
from askvault.records import Fingerprint
from askvault.services.search import search
from askvault.settings import load_settings

VOCAB = 20_000
WORDS_PER_CHUNK = 80
CHUNKS_PER_NOTE = 5
CLUSTERS = 512


class FixedEmbedder:
    """Hands back a precomputed query vector: the embedding call is not what we time."""

    def __init__(self, dim: int) -> None:
        self.vector: list[float] = [0.0] * dim

    def fingerprint(self) -> Fingerprint:
        return Fingerprint("synthetic", "0" * 12, len(self.vector))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector


def _words(rng: np.random.Generator, n: int) -> list[str]:
    ids = np.minimum(rng.zipf(1.3, n), VOCAB)
    return [f"w{i}" for i in ids]


def build(path: Path, size: int, dim: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Write a synthetic index of `size` chunks; return (vectors, cluster centres)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CLUSTERS, dim)).astype(np.float32)
    conn = connect(path)
    fp = None
    with write_transaction(conn):
        fp = store.ensure_fingerprint(conn, Fingerprint("synthetic", "0" * 12, dim), time.time())
        conn.execute(
            f"CREATE VIRTUAL TABLE vec_bits USING vec0(chunk_id INTEGER PRIMARY KEY,"
            f" embedding bit[{dim}])"
        )
    vectors = np.empty((size, dim), dtype=np.float32)
    batch = 10_000
    for start in range(0, size, batch):
        n = min(batch, size - start)
        labels = rng.integers(0, CLUSTERS, n)
        v = centres[labels] + 0.8 * rng.standard_normal((n, dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        vectors[start:start + n] = v
        with write_transaction(conn):
            for i in range(n):
                cid = start + i + 1
                if (cid - 1) % CHUNKS_PER_NOTE == 0:
                    note = (cid - 1) // CHUNKS_PER_NOTE + 1
                    folder = f"f{note % 50}"
                    conn.execute(
                        "INSERT INTO notes(id, path, folder, title, size, mtime_ns, inode,"
                        " content_hash, indexed_at) VALUES (?,?,?,?,0,0,0,'',0)",
                        (note, f"{folder}/n{note}.md", folder, f"note {note}"),
                    )
                note = (cid - 1) // CHUNKS_PER_NOTE + 1
                text = " ".join(_words(rng, WORDS_PER_CHUNK))
                conn.execute(
                    "INSERT INTO chunks(id, note_id, position, text_hash, heading_path,"
                    " start_line, end_line, text) VALUES (?,?,?,?,'[]',1,2,?)",
                    (cid, note, (cid - 1) % CHUNKS_PER_NOTE, f"h{cid}", text),
                )
                conn.execute(
                    "INSERT INTO chunks_fts(rowid, title, aliases, headings, body)"
                    " VALUES (?,?,?,?,?)", (cid, f"note {note}", "", "", text))
            conn.executemany(
                f"INSERT INTO {fp.vec_table}(chunk_id, embedding, folder, top_folder, note_type,"
                " derived) VALUES (?,?,?,?,'',0)",
                [(start + i + 1, v[i].tobytes(), "f", "f") for i in range(n)],
            )
            conn.executemany(
                "INSERT INTO vec_bits(chunk_id, embedding) VALUES (?, vec_bit(?))",
                [(start + i + 1, np.packbits(v[i] > 0).tobytes()) for i in range(n)],
            )
    conn.close()
    return vectors, centres


def quantized_knn(conn: Connection, query: np.ndarray, k: int, rescore: int,
                  table: str) -> list[int]:
    """Hamming top-`rescore` over bit vectors, then exact cosine over those; ids best first."""
    bits = np.packbits(query > 0).tobytes()
    rows = conn.execute(
        "SELECT chunk_id FROM vec_bits WHERE embedding MATCH vec_bit(?) AND k = ?",
        (bits, rescore)).fetchall()
    ids = [r[0] for r in rows]
    rescored = conn.execute(
        f"SELECT chunk_id, vec_distance_cosine(embedding, ?) AS d FROM {table} "
        "WHERE chunk_id IN (SELECT value FROM json_each(?)) ORDER BY d LIMIT ?",
        (query.tobytes(), json.dumps(ids), k)).fetchall()
    return [r[0] for r in rescored]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def bench_size(size: int, dim: int, queries: int, work: Path, quantized: bool) -> dict[str, object]:
    folder = work / f"n{size}"
    shutil.rmtree(folder, ignore_errors=True)
    vault = folder / "vault"
    vault.mkdir(parents=True)
    settings = load_settings(None, flags={"vault": str(vault), "state_dir": str(folder / "state")})
    started = time.time()
    vectors, _ = build(settings.db_path, size, dim)
    build_s = time.time() - started
    conn = connect(settings.db_path)
    rng = np.random.default_rng(11)
    embedder = FixedEmbedder(dim)
    out: dict[str, object] = {"chunks": size, "dim": dim, "build_s": round(build_s, 1)}
    picks = rng.integers(0, size, queries)
    qvecs = []
    for p in picks:
        q = vectors[p] + 0.3 * rng.standard_normal(dim).astype(np.float32)
        qvecs.append(q / np.linalg.norm(q))
    # Query words from the middle of the Zipf vocabulary, as real queries (stopwords dropped) are.
    texts = [" ".join(f"w{i}" for i in rng.integers(20, 3000, 4)) for _ in range(queries)]
    for mode in ("words", "vector", "rrf", "rerank"):
        times = []
        for text, q in zip(texts, qvecs):
            embedder.vector = q.tolist()
            t = time.perf_counter()
            search(conn, settings, text, limit=10, embedder=embedder, fusion_mode=mode)
            times.append((time.perf_counter() - t) * 1000)
        out[mode] = {"p50_ms": round(percentile(times, 0.5), 1),
                     "p95_ms": round(percentile(times, 0.95), 1)}
        print(size, mode, out[mode], flush=True)
    if quantized:
        fp = store.active_fingerprint(conn)
        assert fp is not None
        for rescore in (100, 400):
            times, recalls = [], []
            for q in qvecs:
                exact = np.argsort(-(vectors @ q))[:10] + 1
                t = time.perf_counter()
                got = quantized_knn(conn, q, 10, rescore, fp.vec_table)
                times.append((time.perf_counter() - t) * 1000)
                recalls.append(len(set(got) & set(exact.tolist())) / 10)
            key = f"bit_prefilter_rescore{rescore}"
            out[key] = {"p50_ms": round(percentile(times, 0.5), 1),
                        "p95_ms": round(percentile(times, 0.95), 1),
                        "recall@10_vs_exact": round(statistics.mean(recalls), 3)}
            print(size, key, out[key], flush=True)
    conn.close()
    shutil.rmtree(folder, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--work", type=Path, default=Path("/tmp/askvault-search-bench"))
    parser.add_argument("--no-quantized", action="store_true")
    args = parser.parse_args()
    results = [bench_size(n, args.dim, args.queries, args.work, not args.no_quantized)
               for n in args.sizes]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
