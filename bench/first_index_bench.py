"""First-index benchmark (issue 22, item 4): how soon a new index is useful with a real
embedding server.

On a copy of a vault whose every line carries a run token (so a caching embedding server
has seen none of its texts), it reports: the seconds until words are searchable (the
reconcile, no vector); the seconds until 10%, 50% and 100% of the chunks have vectors,
drained in askvault's order (core/embed_order.py); askvault's overhead over the server's
raw throughput on the same texts (salted again: uncached), per batch size on a sample;
and, with --questions, the Help questions' page Recall@5 / MRR at 10%, 25%, 50%, 75% and
100% embedded (hybrid search; the search pauses the clock). A slow embedder on a big vault
takes hours to the end: --until stops at a share (the marks after it are not reached), and
--paired-rounds keeps the raw rounds to the first K (the overhead's sample) so that the
drain after them runs at askvault's own pace.

    nice -n 10 .venv/bin/python bench/first_index_bench.py --host http://127.0.0.1:11435 \\
        --model all-minilm --vault obsidian-help-en --questions [--sample 300] [--batches 8,32,64]
    .venv/bin/python bench/first_index_bench.py --host http://127.0.0.1:11437 \\
        --model nomic-embed-text --vault obsidian-hub --questions \\
        --questions-file bench/data/hub_questions.json --until 0.5 --paired-rounds 4
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA, machine, require_shared  # noqa: E402
from askvault.adapters import store  # noqa: E402
from askvault.adapters.db import connect  # noqa: E402
from askvault.adapters.ollama_embed import CHARS_PER_TOKEN_ESTIMATE, split_for_embedding  # noqa: E402
from askvault.app.clients import OllamaClients  # noqa: E402
from askvault.core.embed_order import order_backlog  # noqa: E402
from askvault.services.index.embedding import drain_backlog, target_fingerprint  # noqa: E402
from askvault.services.index.index_pass import index_vault  # noqa: E402
from askvault.services.retrieval.search import search  # noqa: E402
from askvault.settings import load_settings  # noqa: E402

HELP_QUESTIONS = Path(__file__).resolve().parent / "data" / "help_questions.json"
DEAD_HOST = "http://127.0.0.1:9"  # nothing listens: the index pass writes words only


def settings_for(vault: Path, state: Path, host: str, model: str, batch: int):  # type: ignore[no-untyped-def]
    return load_settings(
        None,
        env={
            "ASKVAULT_VAULT": str(vault),
            "ASKVAULT_STATE_DIR": str(state),
            "OLLAMA_HOST": host,
            "ASKVAULT_EMBED_MODEL": model,
            "ASKVAULT_OLLAMA__EMBED_BATCH_SIZE": str(batch),
            "ASKVAULT_OLLAMA__TIMEOUT_S": "600",
        },
    )


def salted_copy(source: Path, target: Path, token: str, limit: int | None) -> None:
    """Copy the vault's notes (the first `limit`, by path), a token ending each body line."""
    notes = sorted(source.rglob("*.md"))[:limit]
    for path in notes:
        text = path.read_text(encoding="utf-8", errors="replace")
        lines, out, in_front = text.splitlines(), [], text.startswith("---\n")
        for i, line in enumerate(lines):
            if in_front:
                out.append(line)
                in_front = not (i > 0 and line.strip() == "---")
                continue
            fence = line.lstrip().startswith(("```", "~~~", "|"))
            out.append(f"{line} {token}" if line.strip() and not fence else line)
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text("\n".join(out) + "\n", encoding="utf-8")


def raw_seconds(host: str, model: str, texts: list[str], batch: int) -> float:
    """Seconds the server takes to embed `texts` in batches of `batch`, over plain HTTP."""
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        body = json.dumps({"model": model, "input": texts[i : i + batch]}).encode()
        req = urllib.request.Request(
            f"{host}/api/embed", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=600) as resp:
            resp.read()
    return time.perf_counter() - started


def help_quality(  # type: ignore[no-untyped-def]
    conn, settings, embedder, weight: float | None = None, questions_file: Path = HELP_QUESTIONS
) -> dict[str, float]:
    """Page Recall@5 and MRR@10 of the questions of `questions_file` (the Help questions by
    default; a question's page is `path`, or any of `path` and `also` for the hub's); `weight`:
    the vector side's weight, None for the product's own."""
    questions = json.loads(questions_file.read_text(encoding="utf-8"))
    recall5 = mrr = 0.0
    for q in questions:
        found = search(
            conn, settings, q["question"], limit=20, embedder=embedder, vector_weight=weight
        )
        paths = [h.note_path for h in found.hits]
        pages = {q["path"], *q.get("also", [])}
        recall5 += any(p in pages for p in paths[:5])
        mrr += next((1 / (i + 1) for i, p in enumerate(paths[:10]) if p in pages), 0.0)
    return {
        "page_recall@5": round(recall5 / len(questions), 3),
        "mrr@10": round(mrr / len(questions), 3),
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    source = DATA / "vaults" / args.vault
    require_shared(source)
    out: dict[str, object] = {"machine": machine(), "model": args.model, "vault": args.vault}
    with tempfile.TemporaryDirectory(prefix="askvault-firstindex-") as tmp:
        vault, state = Path(tmp) / "vault", Path(tmp) / "state"
        token = "r" + uuid.uuid4().hex[:10]
        salted_copy(source, vault, token, args.notes or None)
        started = time.perf_counter()
        index_vault(
            settings_for(vault, state, DEAD_HOST, args.model, args.batch),
            OllamaClients(settings_for(vault, state, DEAD_HOST, args.model, args.batch)),
        )
        out["words_searchable_s"] = round(time.perf_counter() - started, 2)
        settings = settings_for(vault, state, args.host, args.model, args.batch)
        conn = connect(settings.db_path)
        clients = OllamaClients(settings)
        embedder = clients.embedder()
        try:
            fp = target_fingerprint(conn, embedder)
            total = store.count_pending(conn, fp)
            texts = [
                t for _, t in store.texts_of(conn, store.pending_hashes(conn, fp, time.time()))
            ]
            out["chunks"] = total
            out["texts"] = len(texts)
            # Overhead per batch size on a sample: raw first (salted apart), then askvault.
            sample = texts[: args.sample]
            overhead = {}
            for batch in args.batches:
                raw = raw_seconds(
                    args.host, args.model, [f"b{batch}{token} {t}" for t in sample], batch
                )
                overhead[batch] = {"raw_texts_per_s": round(len(sample) / raw, 2)}
            out["raw_sample"] = overhead
            # The first index in askvault's order, in rounds of `round_texts`: each round the
            # server embeds the round's texts raw (salted apart) and askvault drains them,
            # which goes first alternating; the machine is shared, so only paired rounds
            # compare. The clock pauses for each quality check.
            prefix = "search_document: " if args.model.startswith("nomic") else ""
            budget = max(1, embedder.max_input_tokens() * CHARS_PER_TOKEN_ESTIMATE - len(prefix))  # type: ignore[attr-defined]
            by_hash = dict(store.texts_of(conn, store.pending_hashes(conn, fp, time.time())))
            order = order_backlog(store.backlog_texts(conn, fp, time.time()))
            marks, quality, ask_s, raw_s, paired_ask_s = {}, {}, 0.0, 0.0, 0.0
            query_embedder = clients.query_embedder() if args.questions else None
            if args.questions:
                quality["0%"] = help_quality(
                    conn, settings, query_embedder, questions_file=args.questions_file
                )
            goals = [g for g in (0.1, 0.25, 0.5, 0.75, 1.0) if g <= args.until]
            pos, rounds, pieces_sent = 0, 0, 0
            while goals and pos < len(order):
                # The pieces askvault sends: a chunk longer than the model's input is split
                # and its pieces' vectors pooled (adapters/ollama_embed.py), not truncated.
                batch_texts = [
                    f"{prefix}{piece}"
                    for h in order[pos : pos + args.round_texts]
                    for piece in split_for_embedding(f"x{token} {by_hash[h]}", budget)
                ]
                pos += args.round_texts
                n_batches = -(-args.round_texts // args.batch)

                def ask(n: int) -> float:
                    t0 = time.perf_counter()
                    drain_backlog(conn, embedder, fp, batch_size=args.batch, max_batches=n)
                    return time.perf_counter() - t0

                if args.no_raw or rounds >= args.paired_rounds:
                    ask_s += ask(n_batches)
                elif rounds % 2:
                    paired_ask = ask(n_batches)
                    raw_s += raw_seconds(args.host, args.model, batch_texts, args.batch)
                else:
                    raw_s += raw_seconds(args.host, args.model, batch_texts, args.batch)
                    paired_ask = ask(n_batches)
                if not args.no_raw and rounds < args.paired_rounds:
                    ask_s += paired_ask
                    paired_ask_s += paired_ask
                    pieces_sent += len(batch_texts)
                rounds += 1
                done = total - store.count_pending(conn, fp)
                while goals and (done >= goals[0] * total or pos >= len(order)):
                    label = f"{int(goals.pop(0) * 100)}%"
                    marks[label] = {"askvault_s": round(ask_s, 1), "raw_s": round(raw_s, 1)}
                    if args.questions:
                        quality[label] = help_quality(
                            conn, settings, query_embedder, questions_file=args.questions_file
                        )
                    print(label, marks[label], quality.get(label), file=sys.stderr)
            done = total - store.count_pending(conn, fp)
            out["seconds_to_embedded"] = marks
            out["chunks_embedded"] = done
            out["askvault_chunks_per_s"] = round(done / ask_s, 2)
            out["paired_rounds"] = min(rounds, 0 if args.no_raw else args.paired_rounds)
            out["pieces_sent_raw"] = pieces_sent
            # Overhead over raw on the paired rounds only (each side the same texts).
            out["overhead_pct"] = round(100 * (paired_ask_s / raw_s - 1), 1) if raw_s else None
            out["quality"] = quality
            if query_embedder is not None:
                query_embedder.close()
        finally:
            embedder.close()
            conn.close()
        shutil.rmtree(vault, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", required=True)
    parser.add_argument("--model", default="all-minilm")
    parser.add_argument("--vault", default="obsidian-help-en")
    parser.add_argument("--notes", type=int, default=0, help="first N notes only (by path)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument(
        "--batches", type=lambda s: [int(x) for x in s.split(",")], default=[8, 32, 64]
    )
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--round-texts", type=int, default=128, help="texts per paired round")
    parser.add_argument("--questions", action="store_true", help="Help questions at 10/50/100%%")
    parser.add_argument("--no-raw", action="store_true", help="no paired raw rounds")
    parser.add_argument(
        "--paired-rounds", type=int, default=10**9, help="raw rounds for the first K rounds only"
    )
    parser.add_argument("--until", type=float, default=1.0, help="stop at this share embedded")
    parser.add_argument(
        "--questions-file", type=Path, default=HELP_QUESTIONS, help="questions with a page each"
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
