"""Raw throughput of embedding servers on the same texts: texts/s and CPU seconds per text.

Each server gets the same Help-vault chunks (with the model's document prefix, as
askvault sends them), in batches, rounds alternating between the servers so load changes
hit both alike. Every text is salted per server and round, so no cache answers. With the
server's process id (`host=pid`), the CPU time the process spent (user + system, from
/proc) is read around each round: on a shared machine that is the steadier figure, since
wall-clock rates follow the load of everything else.

    nice -n 19 .venv/bin/python bench/embed_throughput.py --texts 48 \
        --server all-minilm=http://127.0.0.1:11435=1234 \
        --server nomic-embed-text=http://127.0.0.1:11437=5678
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

from askvault.adapters.db import connect
from askvault.adapters.ollama_embed import embed_prefixes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality_bench import _settings  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` and its waited-for children (/proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command: state is field 3; utime, stime, cutime, cstime are fields 14-17.
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICKS


def embed(host: str, model: str, texts: list[str]) -> None:
    body = json.dumps({"model": model, "input": texts, "truncate": False}).encode()
    request = urllib.request.Request(
        host + "/api/embed", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        vectors = json.load(response)["embeddings"]
    if len(vectors) != len(texts):
        raise RuntimeError(f"{host} returned {len(vectors)} vectors for {len(texts)} texts")


def sample_texts(db: Path, count: int) -> list[str]:
    """`count` chunk texts of the index, spread evenly over it (by chunk id)."""
    conn = connect(db)
    try:
        texts = [row[0] for row in conn.execute("SELECT text FROM chunks ORDER BY id")]
    finally:
        conn.close()
    step = max(1, len(texts) // count)
    return texts[::step][:count]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--server", action="append", required=True, help="model=host[=pid], repeatable"
    )
    parser.add_argument("--vault", type=Path, default=Path("/tmp/askvault-bench-work/help_vault"))
    parser.add_argument("--state-dir", type=Path, required=True, help="an index of --vault")
    parser.add_argument("--texts", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    servers = []
    for spec in args.server:
        model, host, *pid = spec.split("=")
        servers.append((model, host, int(pid[0]) if pid else None))
    settings = _settings(args.vault, args.state_dir, "all-minilm", servers[0][1], 100)
    texts = sample_texts(settings.db_path, args.texts)
    per_round = max(1, len(texts) // args.rounds)
    totals = {model: {"texts": 0, "wall_s": 0.0, "cpu_s": 0.0} for model, _, _ in servers}
    for r in range(args.rounds):
        chunk = texts[r * per_round : (r + 1) * per_round]
        order = servers if r % 2 == 0 else servers[::-1]
        for model, host, pid in order:
            prefix = embed_prefixes(model)[1]
            salted = [f"{prefix}{text} [{model} {r} {i}]" for i, text in enumerate(chunk)]
            cpu0 = cpu_seconds(pid) if pid else 0.0
            started = time.perf_counter()
            for start in range(0, len(salted), args.batch):
                embed(host, model, salted[start : start + args.batch])
            wall = time.perf_counter() - started
            cpu = cpu_seconds(pid) - cpu0 if pid else 0.0
            totals[model]["texts"] += len(salted)
            totals[model]["wall_s"] += wall
            totals[model]["cpu_s"] += cpu
            print(
                f"round {r} {model}: {len(salted)} texts {wall:.1f} s, cpu {cpu:.1f} s",
                file=sys.stderr,
            )
    out: dict[str, object] = {
        "texts_chars_mean": round(sum(map(len, texts)) / len(texts)),
        "load_average": os.getloadavg(),
    }
    for model, t in totals.items():
        out[model] = {
            "texts": t["texts"],
            "texts_per_s": round(t["texts"] / t["wall_s"], 2),
            "cpu_s_per_text": round(t["cpu_s"] / t["texts"], 4) if t["cpu_s"] else None,
        }
    text = json.dumps(out, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
