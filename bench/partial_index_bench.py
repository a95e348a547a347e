"""Search quality of a partly embedded index, per weighting of the vector side (issue 22 item 4).

A quick variant of bench/first_index_bench.py: the vault is indexed by words first (no
vector), then its backlog is drained in askvault's order (core/embed_order.py, as the
daemon does) up to each mark (by default 10/25/50/75/100% of the chunks with vectors). At
each mark the Help questions (bench/data/help_questions.json: page Recall@5, MRR@10) are
searched in the default fusion with the vector side's weight given by each curve of
CURVES as a function of the share of chunks with vectors (services.retrieval.search's
`vector_weight`), beside words only (no embedder: the degraded search a user gets with
Ollama away) and today's full weight (`none`). The product's curve is
core.fusion.coverage_weight (`product`).

Without --salt the vault is copied as it is, so a caching embedding server (the
stand-in's --cache) makes the drain fast; with --salt every line gets a run token
(first_index_bench.salted_copy: nothing cached, vectors move a little, as there).

    nice -n 10 .venv/bin/python bench/partial_index_bench.py --host http://127.0.0.1:11435 \\
        --model all-minilm [--salt] [--marks 0.1,0.25,0.5,0.75,1] --out /tmp/partial.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA, machine, require_shared  # noqa: E402
from askvault.adapters import search_store, store  # noqa: E402
from askvault.adapters.db import connect  # noqa: E402
from askvault.app.clients import OllamaClients  # noqa: E402
from askvault.core.fusion import coverage_weight  # noqa: E402
from askvault.services.index.embedding import drain_backlog, target_fingerprint  # noqa: E402
from askvault.services.index.index_pass import index_vault  # noqa: E402
from first_index_bench import DEAD_HOST, help_quality, salted_copy, settings_for  # noqa: E402
from quality_bench import CachedQueries  # noqa: E402

# The vector side's weight as a function of the share of chunks with vectors.
CURVES: dict[str, Callable[[float], float]] = {
    "none": lambda s: 1.0,  # today's fusion: full weight whatever the share
    "linear": lambda s: s,
    "power-1.5": lambda s: s**1.5,
    "square": lambda s: s * s,
    "cube": lambda s: s**3,
    "threshold-0.5": lambda s: 1.0 if s >= 0.5 else 0.0,
    "threshold-0.75": lambda s: 1.0 if s >= 0.75 else 0.0,
    "threshold-0.9": lambda s: 1.0 if s >= 0.9 else 0.0,
    "zero": lambda s: 0.0,  # the convex fusion with the vector side off
    "product": coverage_weight,
}


def quality(conn, settings, embedder, weight: float | None) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Page Recall@5 and MRR@10 of the Help questions at one vector weight (None with no
    embedder: words only)."""
    return help_quality(conn, settings, embedder, weight)


def run(args: argparse.Namespace) -> dict[str, object]:
    source = DATA / "vaults" / args.vault
    require_shared(source)
    out: dict[str, object] = {"machine": machine(), "model": args.model, "salted": args.salt}
    with tempfile.TemporaryDirectory(prefix="askvault-partial-") as tmp:
        vault, state = Path(tmp) / "vault", Path(tmp) / "state"
        if args.salt:
            salted_copy(source, vault, "r" + uuid.uuid4().hex[:10], None)
        else:
            shutil.copytree(source, vault)
        words = settings_for(vault, state, DEAD_HOST, args.model, args.batch)
        index_vault(words, OllamaClients(words))  # words only: nothing listens there
        settings = settings_for(vault, state, args.host, args.model, args.batch)
        conn = connect(settings.db_path)
        clients = OllamaClients(settings)
        embedder = clients.embedder()
        queries = CachedQueries(clients.query_embedder())
        try:
            fp = target_fingerprint(conn, embedder)
            total = store.count_pending(conn, fp)
            out["chunks"] = total
            out["words_only"] = quality(conn, settings, None, None)
            marks: dict[str, object] = {}
            started = time.perf_counter()
            for mark in args.marks:
                while total - store.count_pending(conn, fp) < mark * total:
                    report = drain_backlog(conn, embedder, fp, batch_size=args.batch, max_batches=1)
                    if report.batches == 0:
                        break
                share = search_store.vector_share(conn, fp.id, fp.bits_table)
                row: dict[str, object] = {
                    "share": round(share, 4),
                    "drain_s": round(time.perf_counter() - started, 1),
                }
                for name, curve in CURVES.items():
                    row[name] = {"weight": round(curve(share), 4)} | quality(
                        conn, settings, queries, curve(share)
                    )
                marks[f"{int(round(mark * 100))}%"] = row
                print(f"{mark:.0%}", json.dumps(row), file=sys.stderr)
            out["marks"] = marks
        finally:
            queries.inner.close()
            embedder.close()
            conn.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", required=True)
    parser.add_argument("--model", default="all-minilm")
    parser.add_argument("--vault", default="obsidian-help-en")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--salt", action="store_true", help="a run token on every line")
    parser.add_argument(
        "--marks",
        type=lambda s: [float(x) for x in s.split(",")],
        default=[0.1, 0.25, 0.5, 0.75, 1.0],
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = run(args)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
