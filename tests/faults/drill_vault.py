"""Vault contents of the drills: many distinct notes, fast to write."""

from __future__ import annotations

import hashlib
from pathlib import Path

from askvault.adapters.db import connect

# nomic-embed-text's, as the Ollama adapter sends it (the suite's own model has none).
DOCUMENT_PREFIX = "search_document: "


def write_notes(
    vault: Path, count: int, *, paragraphs: int = 3, folder: str = "notes"
) -> list[str]:
    """`count` notes of `paragraphs` distinct paragraphs (one chunk each); their paths."""
    paths = []
    base = vault / folder
    base.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = "\n\n".join(
            f"## Part {p}\n\nNote {i} part {p} talks about topic{i}x{p} and item{i}y{p}; "
            f"it is the {p}th paragraph of drill note number {i}."
            for p in range(paragraphs)
        )
        (base / f"note {i:05d}.md").write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")
        paths.append(f"{folder}/note {i:05d}.md")
    return paths


def stored_text_hashes(db_path: Path) -> set[str]:
    """Hashes of every text whose vector is stored in the embedding cache.

    A kill can land after the index file is created and before its first migration has made
    the cache table (each migration is its own transaction): then nothing is stored yet."""
    if not db_path.exists():
        return set()
    conn = connect(db_path, readonly=True)
    try:
        made = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embedding_cache'"
        if conn.execute(made).fetchone() is None:
            return set()
        return {bytes(r[0]).hex() for r in conn.execute("SELECT text_key FROM embedding_cache")}
    finally:
        conn.close()


def input_hash(embedded: str) -> str:
    """The chunk-text hash of one input the fake received (prefix removed)."""
    return hashlib.sha256(embedded.removeprefix(DOCUMENT_PREFIX).encode("utf-8")).hexdigest()
