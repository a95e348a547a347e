"""The distance gate without the chat model: nearest-chunk cosine distance per question.

The gate (queries.max_distance, core/abstention.py) acts before generation, so its effect
on the answer question sets is measured from retrieval alone: for each question of
bench/data/answer_questions*.json, the exact cosine distance from the question (embedded
with the model's query prefix) to the nearest chunk of the Help vault. Reported: the
distances of answerable and unanswerable questions, and at each cut-off (the measured one
of the model, and the one the vault calibrates by itself) the abstention on unanswerable
and the false abstention on answerable questions.

The self-calibration embeds note titles as queries and takes each one's distance to the
nearest chunk of another note (core.abstention.calibrated_cutoff). The index is the one
bench/quality_bench.py builds (same --state-dir and --work), so nothing is re-embedded.

    nice -n 10 .venv/bin/python bench/abstention_bench.py --embed-model all-minilm \
        --host http://127.0.0.1:11435 --state-dir /tmp/nomic-bench/help-minilm \
        --work /tmp/nomic-bench/work-minilm --out /tmp/abst-minilm.json
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from pathlib import Path

import numpy as np

from askvault.adapters import store
from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.core.abstention import (
    CALIBRATION_SAMPLE,
    MEASURED_MAX_DISTANCE,
    calibrated_cutoff,
)
from askvault.services.index.index_pass import index_vault

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality_bench import HELP_VAULT, _settings  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
SETS = ("answer_questions.json", "answer_questions_fresh.json", "answer_questions_holdout.json")


def _matrix(conn, fingerprint_id: int) -> tuple[np.ndarray, list[str]]:
    """Unit float vectors of every chunk of the active model, and each chunk's note path."""
    rows = conn.execute(
        "SELECT n.path, e.vector FROM chunks c JOIN notes n ON n.id = c.note_id "
        "JOIN embedding_cache e ON e.fingerprint_id = ? AND e.text_key = unhex(c.text_hash)",
        (fingerprint_id,),
    ).fetchall()
    paths = [r[0] for r in rows]
    mat = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
    return mat, paths


def _unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def rates(items: list[tuple[bool, float]], cutoff: float | None) -> dict[str, float | None]:
    """Abstention on unanswerable and false abstention on answerable at `cutoff`."""
    if cutoff is None:
        return {"cutoff": None, "abstention_unanswerable": 0.0, "false_abstention": 0.0}
    ans = [d for a, d in items if a]
    una = [d for a, d in items if not a]
    return {
        "cutoff": round(cutoff, 4),
        "abstention_unanswerable": round(sum(d > cutoff for d in una) / len(una), 4),
        "false_abstention": round(sum(d > cutoff for d in ans) / len(ans), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embed-model", default="all-minilm")
    parser.add_argument("--host", default="http://127.0.0.1:11435")
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    vault = args.work / "help_vault"
    if not vault.exists():
        args.work.mkdir(parents=True, exist_ok=True)
        shutil.copytree(HELP_VAULT, vault)
    settings = _settings(vault, args.state_dir, args.embed_model, args.host, 100)
    report = index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    fp = store.active_fingerprint(conn)
    assert fp is not None, "no embedding model indexed"
    mat, paths = _matrix(conn, fp.id)
    total = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    embedder = OllamaClients(settings).embedder()
    out: dict[str, object] = {
        "embed_model": args.embed_model,
        "chunks": total,
        "chunks_with_vectors": len(paths),
        "pending": report.pending_embeddings,
    }
    try:
        per_set: dict[str, list[tuple[bool, float]]] = {}
        for name in SETS:
            items = []
            for q in json.loads((DATA / name).read_text(encoding="utf-8")):
                sims = mat @ _unit(embedder.embed_query(q["question"]))
                items.append((bool(q["answerable"]), round(1.0 - float(sims.max()), 4)))
            per_set[name] = items
        # Self-calibration: note titles as queries, each held out from its own note.
        notes = sorted(set(paths))
        random.Random(22).shuffle(notes)
        held_out = []
        path_arr = np.asarray(paths)
        for path in notes[:CALIBRATION_SAMPLE]:
            title = Path(path).stem
            sims = mat @ _unit(embedder.embed_query(title))
            sims[path_arr == path] = -np.inf
            if np.isfinite(sims.max()):
                held_out.append(1.0 - float(sims.max()))
    finally:
        embedder.close()
        conn.close()
    calibrated = calibrated_cutoff(held_out)
    measured = MEASURED_MAX_DISTANCE.get(args.embed_model)
    out["held_out_titles"] = {
        "count": len(held_out),
        "values": sorted(round(d, 4) for d in held_out),
        "quantiles": {
            str(p): round(float(np.quantile(held_out, p)), 4) for p in (0.1, 0.25, 0.5, 0.75, 0.9)
        },
    }
    everything = [i for items in per_set.values() for i in items]
    for name, items in {**per_set, "all": everything}.items():
        ans = sorted(d for a, d in items if a)
        una = sorted(d for a, d in items if not a)
        out[name] = {
            "answerable": len(ans),
            "unanswerable": len(una),
            "answerable_median": round(float(np.median(ans)), 4),
            "answerable_max": max(ans),
            "unanswerable_median": round(float(np.median(una)), 4),
            "unanswerable_min": min(una),
            "measured": rates(items, measured),
            "calibrated": rates(items, calibrated),
        }
    out["distances"] = {name: items for name, items in per_set.items()}
    text = json.dumps(out, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in out.items() if k != "distances"}, indent=1))


if __name__ == "__main__":
    main()
