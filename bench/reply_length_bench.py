"""How long real model replies are, and how long they take: the measure of the reply limits.

A reply is read to `ollama.num_predict` tokens, `ollama.reply_max_bytes` bytes and
`ollama.reply_max_s` seconds of writing (issue 25): this bench says what a real model
writes for askvault's answer prompts, so that the limits cut a runaway reply and never
an ordinary one. It asks the questions of bench/data/answer_questions.json over a
words-only index of a copy of the Obsidian Help vault (the prompts askvault builds, the
excerpts the search finds), streams each reply from the Ollama at OLLAMA_HOST without
any limit but `num_predict`, and prints per reply its pieces (Ollama sends a token a
piece), UTF-8 bytes, the wait for its first piece and its seconds of writing; then
medians, 90th percentiles and maxima, bytes per piece, and the same for replies asked
to be long (the question followed by a request for every detail, at length), which run
to `num_predict`.

    OLLAMA_HOST=http://127.0.0.1:11436 .venv/bin/python bench/reply_length_bench.py \\
        --chat-model qwen2.5-coder:1.5b [--limit 20] [--long 3] [--json FILE]

The real model: ../shared/tools/llm_ollama (Qwen2.5-Coder-1.5B on the CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA, require_shared  # noqa: E402
from askvault.adapters.db import connect  # noqa: E402
from askvault.app.clients import OllamaClients  # noqa: E402
from askvault.core.prompt import build_messages  # noqa: E402
from askvault.services.index.index_pass import index_vault  # noqa: E402
from askvault.services.retrieval.context import build_context  # noqa: E402
from askvault.settings import Settings, load_settings  # noqa: E402

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "data" / "answer_questions.json"
LONG_ASK = " Explain every detail, step by step, at length."


def measure(settings: Settings, question: str) -> dict[str, Any]:
    """One reply to `question` as askvault prompts it: pieces, bytes, times, why it ended."""
    conn = connect(settings.db_path)
    try:
        pack = build_context(conn, settings, question, embedder=None, include_sources=False)
    finally:
        conn.close()
    plan = build_messages(
        question,
        pack,
        num_ctx=settings.ollama.num_ctx,
        excerpt_tokens=settings.queries.excerpt_tokens,
    )
    generator = OllamaClients(settings).generator()
    pieces: list[str] = []
    started = time.monotonic()
    first: float | None = None
    try:
        for piece in generator.stream(
            plan.messages, model=settings.ollama.chat_model, num_ctx=settings.ollama.num_ctx
        ):
            first = first if first is not None else time.monotonic()
            pieces.append(piece)
        end = time.monotonic()
        usage = getattr(generator, "usage", None)
    finally:
        generator.close()
    text = "".join(pieces)
    return {
        "question": question,
        "pieces": len(pieces),
        "tokens": getattr(usage, "reply_tokens", None),
        "bytes": len(text.encode()),
        "first_piece_s": round((first or end) - started, 2),
        "writing_s": round(end - (first or end), 2),
        "done_reason": getattr(usage, "done_reason", None),
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median, 90th percentile and maximum of each measure, and bytes per piece."""

    def stats(key: str) -> dict[str, float]:
        values = sorted(float(r[key]) for r in rows)
        p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
        return {"median": statistics.median(values), "p90": p90, "max": values[-1]}

    per_piece = [r["bytes"] / r["pieces"] for r in rows if r["pieces"]]
    return {
        "replies": len(rows),
        **{k: stats(k) for k in ("pieces", "bytes", "first_piece_s", "writing_s")},
        "bytes_per_piece_max": round(max(per_piece), 2) if per_piece else None,
        "stopped_at_num_predict": sum(1 for r in rows if r["done_reason"] == "length"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chat-model", default=os.environ.get("ASKVAULT_CHAT_MODEL"))
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--long", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    source = DATA / "vaults" / "obsidian-help-en"
    require_shared(source)
    root = Path(tempfile.mkdtemp(prefix="askvault-reply-length-"))
    try:
        shutil.copytree(source, root / "vault", symlinks=True)
        flags = {"vault": str(root / "vault"), "state_dir": str(root / "state")}
        if args.chat_model:
            flags["ollama.chat_model"] = args.chat_model
        settings = load_settings(None, flags=flags)
        # Words only: the replies are measured, not the retrieval.
        index_vault(settings, OllamaClients(settings))
        questions = [q["question"] for q in json.loads(QUESTIONS.read_text())]
        rows = []
        for question in questions[: args.limit]:
            rows.append(measure(settings, question))
            print(json.dumps(rows[-1]), flush=True)
        long_rows = []
        for question in questions[: args.long]:
            long_rows.append(measure(settings, question + LONG_ASK))
            print(json.dumps(long_rows[-1]), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    doc = {
        "model": settings.ollama.chat_model,
        "num_predict": settings.ollama.num_predict,
        "answers": summary(rows),
        "asked_long": summary(long_rows) if long_rows else None,
    }
    print(json.dumps(doc, indent=2))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
