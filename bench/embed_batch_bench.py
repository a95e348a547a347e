"""Embedding requests sized by time against fixed batches (issue 22, item 4).

A question waits for the embedding request in flight before it searches, so the length of
one request is what a first index adds to an answer; the drain's throughput is what it
costs to make them shorter. On two salted copies of a vault (every body line ends with a
token of its own, so a caching server has seen none of the texts), indexed by words only,
the backlog is drained in askvault's order with each setting of `ollama.embed_batch_seconds`
in turn, in rounds of --round-s seconds alternating which goes first (the machine is
shared: only the paired rounds compare). Each embed request is timed.

Reports per setting: texts per second over the rounds, and the seconds and texts of the
requests (median, p90, max): the wait a question asked during a first index pays.

    .venv/bin/python bench/embed_batch_bench.py --host http://127.0.0.1:11437 \\
        --model nomic-embed-text --vault obsidian-help-en --seconds 0,4 --rounds 6 --round-s 60
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA, machine, require_shared  # noqa: E402
from askvault.adapters.db import Connection, connect  # noqa: E402
from askvault.adapters.store import FingerprintRow  # noqa: E402
from askvault.app.clients import OllamaClients  # noqa: E402
from askvault.records import Embedder, Fingerprint  # noqa: E402
from askvault.services.index.embedding import drain_backlog, target_fingerprint  # noqa: E402
from askvault.services.index.index_pass import index_vault  # noqa: E402
from first_index_bench import DEAD_HOST, salted_copy, settings_for  # noqa: E402


class TimedEmbedder:
    """An Embedder that records the seconds and the texts of each embed_documents call."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls: list[tuple[int, float]] = []

    def fingerprint(self) -> Fingerprint:
        return self.inner.fingerprint()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = self.inner.embed_documents(texts)
        self.calls.append((len(texts), time.perf_counter() - started))
        return vectors

    def embed_query(self, text: str, model: str | None = None) -> list[float]:
        return self.inner.embed_query(text, model)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> object:  # max_input_tokens and the like
        return getattr(self.inner, name)


@dataclass
class Side:
    """One setting's copy of the vault, its drain's client and what it did so far."""

    seconds: float
    conn: Connection
    embedder: TimedEmbedder
    fp: FingerprintRow
    texts: int = 0
    wall: float = 0.0


def _quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return {
        "median": round(statistics.median(ordered), 2),
        "p90": round(p90, 2),
        "max": round(ordered[-1], 2),
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    source = DATA / "vaults" / args.vault
    require_shared(source)
    out: dict[str, object] = {
        "machine": machine(),
        "model": args.model,
        "vault": args.vault,
        "batch_size": args.batch,
        "round_s": args.round_s,
    }
    with tempfile.TemporaryDirectory(prefix="askvault-embedbatch-") as tmp:
        sides: list[Side] = []
        for seconds in args.seconds:
            root = Path(tmp) / f"s{seconds}"
            vault, state = root / "vault", root / "state"
            salted_copy(source, vault, "r" + uuid.uuid4().hex[:10], args.notes or None)
            words = settings_for(vault, state, DEAD_HOST, args.model, args.batch)
            index_vault(words, OllamaClients(words))
            settings = settings_for(vault, state, args.host, args.model, args.batch)
            conn = connect(settings.db_path)
            embedder = TimedEmbedder(OllamaClients(settings).embedder())
            fp = target_fingerprint(conn, embedder)
            embedder.calls.clear()  # the model's probe is not a request of the drain
            sides.append(Side(seconds, conn, embedder, fp))
        try:
            for round_no in range(args.rounds):
                for side in sides if round_no % 2 == 0 else list(reversed(sides)):
                    deadline = time.monotonic() + args.round_s
                    started = time.perf_counter()
                    report = drain_backlog(
                        side.conn,
                        side.embedder,
                        side.fp,
                        batch_size=args.batch,
                        batch_seconds=side.seconds,
                        should_stop=lambda deadline=deadline: time.monotonic() > deadline,
                    )
                    side.wall += time.perf_counter() - started
                    side.texts += report.texts_embedded
                    print(
                        f"round {round_no + 1} aim {side.seconds} s: "
                        f"{report.texts_embedded} texts in {report.seconds_waiting:.1f} s",
                        file=sys.stderr,
                    )
            out["results"] = {
                f"aim {side.seconds} s": {
                    "texts": side.texts,
                    "texts_per_s": round(side.texts / side.wall, 2),
                    "requests": len(side.embedder.calls),
                    "request_s": _quantiles([s for _, s in side.embedder.calls]),
                    "request_texts": _quantiles([float(n) for n, _ in side.embedder.calls]),
                }
                for side in sides
            }
        finally:
            for side in sides:
                side.embedder.close()
                side.conn.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", required=True)
    parser.add_argument("--model", default="nomic-embed-text")
    parser.add_argument("--vault", default="obsidian-help-en")
    parser.add_argument("--notes", type=int, default=0, help="first N notes only (by path)")
    parser.add_argument("--batch", type=int, default=32, help="ollama.embed_batch_size")
    parser.add_argument(
        "--seconds",
        type=lambda s: [float(x) for x in s.split(",")],
        default=[0.0, 4.0],
        help="ollama.embed_batch_seconds settings to compare (0: fixed batches)",
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--round-s", type=float, default=60.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = run(args)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
