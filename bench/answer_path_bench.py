"""The answer path's own time: `build_context` and `answer_question` with a scripted reply.

Everything an answer costs except the model: search, the evidence pack (freshness checks,
graph neighbours), the prompt, the citation and support checks, the answer note's ledger.
The reply is scripted (it quotes and cites excerpts [1] and [2]), so no Ollama is needed; the index
is words-only (no embedding model: search degrades to words, as it says), built once over
a temporary copy of ../shared/data/vaults/obsidian-hub.

    .venv/bin/python bench/answer_path_bench.py [--runs 5] [--state DIR] [--json FILE]

`--state DIR` keeps the index between invocations (the vault copy is made again only
when DIR holds none). Prints the median over runs of the per-question time, for the two
stages separately, and the median of the whole question set. `--dump FILE` writes each
question's evidence pack, answer and rendered note (times masked), to diff two checkouts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA, free_port, require_shared  # noqa: E402
from askvault.adapters.db import connect  # noqa: E402
from askvault.core.answer_note import render_answer_note  # noqa: E402
from askvault.core.schema import to_json  # noqa: E402
from askvault.records import QuestionOptions  # noqa: E402
from askvault.services.answer import answer_question  # noqa: E402
from askvault.services.documents.answer import answer_document  # noqa: E402
from askvault.services.documents.context import context_document  # noqa: E402
from askvault.services.index.index_pass import index_vault  # noqa: E402
from askvault.services.retrieval.context import build_context  # noqa: E402
from askvault.settings import Settings, load_settings  # noqa: E402

QUESTIONS = (
    "How do I install a community plugin?",
    "What is the Dataview plugin for?",
    "How can I sync my vault between devices?",
    "How do I make a custom CSS snippet?",
    "What are the best plugins for daily notes?",
    "How do I embed a note in another note?",
    "What is a Map of Content?",
    "How do I publish my vault as a website?",
    "Which themes support dark mode?",
    "How do I use templates with Templater?",
    "What is the Zettelkasten method?",
    "How do I write a plugin for Obsidian?",
    "How can I use Obsidian on mobile?",
    "What does the graph view show?",
    "How do I link to a heading in another note?",
    "How do I track tasks in Obsidian?",
    "What are aliases in frontmatter?",
    "How do I import notes from Evernote?",
    "How do I back up my vault with git?",
    "What is the Obsidian hub?",
)


class ScriptedGenerator:
    """An extractive reply in one piece, so the model costs nothing: the longest quoted line
    of excerpts [1] and [2], each cited by its number (supported, so the answer is checked,
    published and given its ledger like a real one)."""

    def stream(
        self, messages: Sequence[dict[str, str]], *, model: str, num_ctx: int, **_: Any
    ) -> Iterator[str]:
        prompt = messages[-1]["content"]
        sentences = []
        for number in (1, 2):
            block = prompt.split(f"Excerpt [{number}] from ", 1)[-1].split("\n\nExcerpt [", 1)[0]
            quoted = [line[2:].strip() for line in block.split("\n")[1:] if line.startswith("> ")]
            if quoted and f"Excerpt [{number}]" in prompt:
                sentences.append(f"{max(quoted, key=len).rstrip('.')} [{number}].")
        yield " ".join(sentences) or "The notes do not contain the answer."


@contextlib.contextmanager
def hub_settings(state: Path | None) -> Iterator[Settings]:
    """Settings over an indexed copy of the hub vault (kept in `state` when given)."""
    source = DATA / "vaults" / "obsidian-hub"
    require_shared(source)
    root = state or Path(os.environ.get("TMPDIR", "/tmp")) / f"askvault-answer-path-{os.getpid()}"
    vault = root / "vault"
    if not vault.exists():
        shutil.copytree(source, vault, symlinks=True)
    # Nothing listens on this port: the index is words-only, embedding fails fast.
    os.environ["OLLAMA_HOST"] = f"http://127.0.0.1:{free_port()}"
    settings = load_settings(None, flags={"vault": str(vault), "state_dir": str(root / "state")})
    try:
        if not settings.db_path.exists():
            started = time.monotonic()
            index_vault(settings)
            print(f"indexed the hub vault in {time.monotonic() - started:.1f} s", file=sys.stderr)
        yield settings
    finally:
        if state is None:
            shutil.rmtree(root, ignore_errors=True)


def run_once(settings: Settings) -> tuple[list[float], list[float]]:
    """Seconds per question: (build_context alone, answer_question without the model)."""
    conn = connect(settings.db_path)
    try:
        context_s: list[float] = []
        answer_s: list[float] = []
        for question in QUESTIONS:
            started = time.perf_counter()
            build_context(conn, settings, question)
            context_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            result = answer_question(
                conn,
                settings,
                question,
                QuestionOptions(),
                embedder=None,
                generator=ScriptedGenerator(),
            )
            answer_s.append(time.perf_counter() - started)
            assert result.status in ("answered", "no-answer"), result.reason
        return context_s, answer_s
    finally:
        conn.close()


def dump(settings: Settings, path: Path) -> None:
    """Each question's pack, answer and note as JSON, with the times masked."""
    conn = connect(settings.db_path)
    try:
        docs = []
        for question in QUESTIONS:
            pack = to_json(context_document(build_context(conn, settings, question)))
            result = answer_question(
                conn,
                settings,
                question,
                QuestionOptions(),
                embedder=None,
                generator=ScriptedGenerator(),
                asked="-",
            )
            answer = to_json(answer_document(result))
            answer.pop("timings")
            note = re.sub(r"(answered|index_as_of): .*", r"\1: -", render_answer_note(result.note))
            docs.append({"pack": pack, "answer": answer, "note": re.sub(r"time: .*", "", note)})
        path.write_text(json.dumps(docs, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--state", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--dump", type=Path, default=None)
    args = parser.parse_args()
    with hub_settings(args.state) as settings:
        if args.dump:
            dump(settings, args.dump)
        run_once(settings)  # warm the page cache and the imports
        per_run = [run_once(settings) for _ in range(args.runs)]
    context = [statistics.median(c) for c, _ in per_run]
    answer = [statistics.median(a) for _, a in per_run]
    totals = [sum(a) for _, a in per_run]
    doc = {
        "questions": len(QUESTIONS),
        "runs": args.runs,
        "build_context_ms_median": round(1000 * statistics.median(context), 1),
        "answer_path_ms_median": round(1000 * statistics.median(answer), 1),
        "question_set_s_median": round(statistics.median(totals), 2),
    }
    print(json.dumps(doc, indent=2))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
