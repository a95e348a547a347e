"""Search latency at 10k / 100k / 1M chunks, excluding the query's embedding call.

Vectors: with `--real-vectors` (a cache of all-minilm vectors written by
../shared/tools/minilm_ollama, table e(h, v)), the corpus is the cached SciFact and
Help-vault document vectors, grown to the wanted size by mixing random pairs
(a + t(b - a), t in [0, 0.35]) plus small Gaussian noise, re-normalised; the
queries are the cached SciFact query vectors. Without it, clustered random unit
vectors (on which sign-bit quantization is known to do badly). Text: Zipf words.

Reports p50/p95 (median over `--runs` runs of `--queries` queries) of
`services.retrieval.search.search` in words, vector, convex, rrf and rerank modes, of the vector
channel alone (top 100, as search asks for) exactly by vec0 and quantized (sign-bit scan +
exact rescoring), and the recall@10 / recall@100 of the quantized channel against exact.
`--widen 2` turns the real 384-dim vectors into 768-dim ones with the same geometry.
Indexes are built once into `--work` and reused.

    .venv/bin/python bench/search_bench.py --sizes 10000 100000 1000000 \\
        --real-vectors /tmp/retr-embed-cache.sqlite
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from askvault.adapters import search_store, store
from askvault.adapters.db import connect, write_transaction
from askvault.records import Fingerprint
from askvault.services.retrieval.search import search
from askvault.settings import Settings, load_settings

VOCAB = 20_000
WORDS_PER_CHUNK = 80
CHUNKS_PER_NOTE = 5
CLUSTERS = 512
BATCH = 20_000
DEPTH = 100  # settings.search.candidates: what search asks of each channel


class FixedEmbedder:
    """Hands back a precomputed query vector: the embedding call is not what we time."""

    def __init__(self, dim: int) -> None:
        self.vector: list[float] = [0.0] * dim

    def fingerprint(self) -> Fingerprint:
        return Fingerprint("synthetic", "0" * 12, len(self.vector))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector for _ in texts]

    def embed_query(self, text: str, model: str | None = None) -> list[float]:
        return self.vector


def real_vectors(cache: Path, queries_file: Path) -> tuple[np.ndarray, np.ndarray]:
    """(document vectors, query vectors) from an embedding cache; queries are the cached
    texts of `queries_file` (BEIR queries.jsonl)."""
    query_hashes = {
        hashlib.sha1(json.loads(line)["text"].encode()).hexdigest()
        for line in queries_file.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    conn = sqlite3.connect(cache)
    docs, queries = [], []
    for h, v in conn.execute("SELECT h, v FROM e ORDER BY h"):
        (queries if h in query_hashes else docs).append(np.frombuffer(v, dtype=np.float32))
    conn.close()
    return np.stack(docs), np.stack(queries)


def widen(vectors: np.ndarray, factor: int, seed: int = 5) -> np.ndarray:
    """Real vectors made `factor` times wider without changing their cosine geometry:
    [x, R1 x, ...] / sqrt(factor) with fixed random rotations R. Every dot product is
    unchanged, so exact rankings are those of the real vectors; the new sign bits are
    random projections of them. A stand-in for a 768-dim model's latency when no such
    vectors are cached (recall of the sign-bit scan is, if anything, flattered)."""
    if factor == 1:
        return vectors
    rng = np.random.default_rng(seed)
    dim = vectors.shape[1]
    parts = [vectors]
    for _ in range(factor - 1):
        rotation, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
        parts.append(vectors @ rotation.astype(np.float32))
    return (np.concatenate(parts, axis=1) / np.sqrt(factor)).astype(np.float32)


def vector_source(
    size: int, dim: int, real: tuple[np.ndarray, np.ndarray] | None, seed: int = 7
) -> Callable[[int, int], np.ndarray]:
    """A function (start, n) -> unit vectors of rows start..start+n, deterministic."""
    if real is not None:
        docs = real[0]

        def grown(start: int, n: int) -> np.ndarray:
            rng = np.random.default_rng([seed, start])
            out = np.empty((n, docs.shape[1]), dtype=np.float32)
            for i in range(n):
                if start + i < len(docs):
                    out[i] = docs[start + i]
                    continue
                a, b = docs[rng.integers(0, len(docs), 2)]
                t = rng.uniform(0, 0.35)
                out[i] = a + t * (b - a) + rng.normal(0, 0.012, len(a)).astype(np.float32)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

        return grown
    centres = np.random.default_rng(seed).standard_normal((CLUSTERS, dim)).astype(np.float32)

    def clustered(start: int, n: int) -> np.ndarray:
        rng = np.random.default_rng([seed, start])
        v = centres[rng.integers(0, CLUSTERS, n)]
        v = v + 0.8 * rng.standard_normal((n, dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    return clustered


def build(
    settings: Settings,
    size: int,
    dim: int,
    vectors: Callable[[int, int], np.ndarray],
    seed: int = 7,
) -> None:
    """Write an index of `size` chunks: notes, chunks, FTS rows, cached vectors, vec rows."""
    rng = np.random.default_rng(seed)
    conn = connect(settings.db_path)
    with write_transaction(conn):
        fp = store.ensure_fingerprint(conn, Fingerprint("synthetic", "0" * 12, dim), time.time())
    for start in range(0, size, BATCH):
        n = min(BATCH, size - start)
        v = vectors(start, n)
        words = np.minimum(rng.zipf(1.3, (n, WORDS_PER_CHUNK)), VOCAB)
        with write_transaction(conn):
            notes, chunks, fts = [], [], []
            for i in range(n):
                cid = start + i + 1
                note = (cid - 1) // CHUNKS_PER_NOTE + 1
                folder = f"f{note % 50}"
                if (cid - 1) % CHUNKS_PER_NOTE == 0:
                    notes.append((note, f"{folder}/n{note}.md", folder, f"note {note}"))
                text = " ".join(f"w{w}" for w in words[i])
                chunks.append((cid, note, (cid - 1) % CHUNKS_PER_NOTE, _hash(cid), text))
                fts.append((cid, f"note {note}", text))
            conn.executemany(
                "INSERT INTO notes(id, path, folder, title, size, mtime_ns, inode,"
                " content_hash, indexed_at) VALUES (?,?,?,?,0,0,0,'',0)",
                notes,
            )
            conn.executemany(
                "INSERT INTO chunks(id, note_id, position, text_hash, heading_path,"
                " start_line, end_line, text) VALUES (?,?,?,?,'[]',1,2,?)",
                chunks,
            )
            conn.executemany(
                "INSERT INTO chunks_fts(rowid, title, aliases, headings, body)"
                " VALUES (?,?,'','',?)",
                fts,
            )
            conn.executemany(
                "INSERT INTO embedding_cache(fingerprint_id, text_key, vector) VALUES (?,?,?)",
                [(fp.id, store.text_key(_hash(start + i + 1)), v[i].tobytes()) for i in range(n)],
            )
            store.copy_cached_vectors(
                conn, fp, text_hashes=[_hash(start + i + 1) for i in range(n)]
            )
        print(f"  built {start + n}/{size}", flush=True)
    conn.close()


def _hash(chunk_id: int) -> str:
    """A stand-in text hash (hex sha256, as the index keys texts)."""
    return hashlib.sha256(str(chunk_id).encode()).hexdigest()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn: Callable[[int], object], count: int, runs: int) -> dict[str, float]:
    """p50 and p95 in ms of fn(0..count-1), each the median over `runs` runs."""
    p50s, p95s = [], []
    for _ in range(runs):
        times = []
        for i in range(count):
            t = time.perf_counter()
            fn(i)
            times.append((time.perf_counter() - t) * 1000)
        p50s.append(percentile(times, 0.5))
        p95s.append(percentile(times, 0.95))
    return {
        "p50_ms": round(statistics.median(p50s), 1),
        "p95_ms": round(statistics.median(p95s), 1),
    }


def bench_size(
    size: int, dim: int, args: argparse.Namespace, real: tuple[np.ndarray, np.ndarray] | None
) -> dict[str, object]:
    kind = "real" if real is not None else "clustered"
    folder = args.work / f"{kind}-{dim}-n{size}"
    vault = folder / "vault"
    vault.mkdir(parents=True, exist_ok=True)
    settings = load_settings(None, flags={"vault": str(vault), "state_dir": str(folder / "state")})
    build_s = build_once(folder, settings, size, dim, real)
    if args.build_only:
        return {"chunks": size, "build_s": build_s}
    conn = connect(settings.db_path)
    fp = store.active_fingerprint(conn)
    assert fp is not None
    rng = np.random.default_rng(11)
    if real is not None:
        qvecs = real[1][rng.choice(len(real[1]), args.queries, replace=False)]
    else:
        qvecs = vector_source(size, dim, None, seed=99)(0, args.queries)
    # Query words from the middle of the Zipf vocabulary, as real queries (stopwords dropped) are.
    texts = [" ".join(f"w{i}" for i in rng.integers(20, 3000, 4)) for _ in range(args.queries)]
    out: dict[str, object] = {
        "chunks": size,
        "dim": dim,
        "vectors": kind,
        "build_s": build_s,
        "load_before": os.getloadavg(),
    }
    embedder = FixedEmbedder(dim)

    def service(mode: str) -> Callable[[int], object]:
        def run(i: int) -> object:
            embedder.vector = qvecs[i].tolist()
            return search(conn, settings, texts[i], limit=10, embedder=embedder, fusion_mode=mode)

        return run

    def channel(quantized: bool) -> Callable[[int], list[tuple[int, float]]]:
        def run(i: int) -> list[tuple[int, float]]:
            return search_store.vector_chunks(
                conn,
                fp.id,
                qvecs[i].tolist(),
                k=DEPTH,
                bits_table=fp.bits_table if quantized else None,
            )

        return run

    for name, fn in (
        ("words", service("words")),
        ("vector", service("vector")),
        ("convex", service("convex")),
        ("rrf", service("rrf")),
        ("rerank", service("rerank")),
        ("vector_knn_exact", channel(False)),
        ("vector_knn_quantized", channel(True)),
    ):
        if args.skip_exact and name == "vector_knn_exact":
            continue
        out[name] = timed(fn, args.queries, args.runs)
        print(size, name, out[name], flush=True)
    if not args.skip_exact:
        out.update(quantized_recall(channel(False), channel(True), args.queries))
    out["load_after"] = os.getloadavg()
    if not args.skip_exact:
        print(
            size, {k: out[k] for k in out if "recall" in k}, "load", out["load_after"], flush=True
        )
    conn.close()
    return out


def build_once(
    folder: Path,
    settings: Settings,
    size: int,
    dim: int,
    real: tuple[np.ndarray, np.ndarray] | None,
) -> float | None:
    """Build the index of `folder` unless a run before built it; the seconds it took, None
    when it was built before."""
    if (folder / "built").exists():
        return None
    if settings.db_path.exists():
        settings.db_path.unlink()
    started = time.time()
    build(settings, size, dim, vector_source(size, dim, real))
    build_s = round(time.time() - started, 1)
    (folder / "built").write_text(str(build_s))
    return build_s


def quantized_recall(
    exact: Callable[[int], list[tuple[int, float]]],
    quantized: Callable[[int], list[tuple[int, float]]],
    queries: int,
) -> dict[str, float]:
    """How many of the exact scan's chunks the quantized scan finds, in its first 10 and in
    all it returns, averaged over the queries."""
    r10, r100 = [], []
    for i in range(queries):
        want = [cid for cid, _ in exact(i)]
        got = [cid for cid, _ in quantized(i)]
        r10.append(len(set(got[:10]) & set(want[:10])) / 10)
        r100.append(len(set(got) & set(want)) / len(want))
    return {
        "quantized_recall@10_vs_exact": round(statistics.mean(r10), 3),
        "quantized_recall@100_vs_exact": round(statistics.mean(r100), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dim", type=int, default=768, help="clustered vectors only")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--real-vectors", type=Path, default=None)
    parser.add_argument(
        "--real-queries",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "shared/data/scifact" / "queries.jsonl",
    )
    parser.add_argument(
        "--widen",
        type=int,
        default=1,
        help="with --real-vectors: make them this many times wider (see widen)",
    )
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument(
        "--skip-exact",
        action="store_true",
        help="time no exact scan and no recall (at 1M x 768 one exact query takes seconds)",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/askvault-search-bench"))
    args = parser.parse_args()
    real = real_vectors(args.real_vectors, args.real_queries) if args.real_vectors else None
    if real is not None and args.widen > 1:
        real = (widen(real[0], args.widen), widen(real[1], args.widen))
    dim = real[0].shape[1] if real is not None else args.dim
    results = [bench_size(n, dim, args, real) for n in args.sizes]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
