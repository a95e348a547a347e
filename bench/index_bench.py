"""Index benchmark on a copy of the Obsidian hub vault (6,571 notes).

Reports: cold-index time split into our own work and time waiting on embeddings; our
notes/s; texts embedded after (a) a one-paragraph edit in the middle of a long note,
(b) renaming 100 notes, (c) a run with no changes; the time of a reconcile of the unchanged
vault; peak RSS. Medians over several runs.

    .venv/bin/python bench/index_bench.py [--runs 3]

Uses ../shared/tools/minilm_ollama in --hash-embeddings mode (fast, functional vectors): the
split separates our work from the model's, whatever the model.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, median, standin_ollama, vault_copy  # noqa: E402
from askvault.adapters.db import connect  # noqa: E402
from askvault.app.clients import OllamaClients
from askvault.services.index.index_pass import index_vault  # noqa: E402
from askvault.services.index.indexer import reconcile  # noqa: E402
from askvault.settings import load_settings  # noqa: E402


def settings_for(vault: Path, state: Path, url: str):  # type: ignore[no-untyped-def]
    return load_settings(
        None,
        env={
            "ASKVAULT_VAULT": str(vault),
            "ASKVAULT_STATE_DIR": str(state),
            "OLLAMA_HOST": url,
            "ASKVAULT_EMBED_MODEL": "all-minilm",
            "ASKVAULT_OLLAMA__EMBED_BATCH_SIZE": "64",
        },
    )


def edit_middle_paragraph(vault: Path) -> str:
    """Rewrite one paragraph in the middle of the longest note with many paragraphs."""
    best = max(vault.rglob("*.md"), key=lambda p: p.read_bytes().count(b"\n\n"))
    text = best.read_text(encoding="utf-8")
    paragraphs = text.split("\n\n")
    middle = len(paragraphs) // 2
    paragraphs[middle] = (
        "This paragraph was rewritten by the index benchmark at "
        f"{time.time():.0f}: a fresh sentence about something else entirely."
    )
    best.write_text("\n\n".join(paragraphs), encoding="utf-8")
    return str(best.relative_to(vault))


def rename_notes(vault: Path, count: int, seed: int = 7) -> None:
    notes = sorted(p for p in vault.rglob("*.md") if ".obsidian" not in p.parts)
    for path in random.Random(seed).sample(notes, count):
        path.rename(path.with_name(path.stem + " renamed.md"))


def run_once(url: str, *, runs_reconcile: int = 5) -> dict[str, float]:
    with vault_copy("obsidian-hub") as vault, tempfile.TemporaryDirectory() as state:
        settings = settings_for(vault, Path(state), url)
        started = time.monotonic()
        cold = index_vault(settings, OllamaClients(settings))
        total = time.monotonic() - started
        waiting = cold.embed.seconds_waiting
        notes = len(cold.index.added)
        ours = total - waiting
        edited = edit_middle_paragraph(vault)
        after_edit = index_vault(settings, OllamaClients(settings))
        rename_notes(vault, 100)
        after_rename = index_vault(settings, OllamaClients(settings))
        no_change = index_vault(settings, OllamaClients(settings))
        conn = connect(settings.db_path)
        reconcile_s = []
        for _ in range(runs_reconcile):
            t0 = time.monotonic()
            reconcile(conn, settings)
            reconcile_s.append(time.monotonic() - t0)
        conn.close()
        return {
            "notes": notes,
            "chunks": cold.index.chunks_written,
            "cold_total_s": total,
            "cold_scan_index_s": cold.index.seconds,
            "cold_embed_wait_s": waiting,
            "cold_our_work_s": ours,
            "our_notes_per_s": notes / ours,
            "index_only_notes_per_s": notes / cold.index.seconds,
            "edit_note": edited,
            "edit_texts_embedded": after_edit.embed.texts_embedded,
            "rename100_texts_embedded": after_rename.embed.texts_embedded,
            "rename100_renamed": len(after_rename.index.renamed),
            "nochange_texts_embedded": no_change.embed.texts_embedded,
            "unchanged_reconcile_s": median(reconcile_s),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results = []
    with standin_ollama(hashed=True) as url:
        for i in range(args.runs):
            results.append(run_once(url))
            print(f"run {i + 1}: {json.dumps(results[-1], default=str)}", flush=True)
    keys = [k for k in results[0] if isinstance(results[0][k], (int, float))]
    summary = {k: round(median([r[k] for r in results]), 4) for k in keys}
    print("machine:", machine())
    print("median over", len(results), "runs:", json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
