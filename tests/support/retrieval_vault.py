"""Index a copy of the retrieval fixture vault against the fake Ollama."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from askvault.adapters.db import Connection, connect
from askvault.adapters.ollama import OllamaEmbedder
from askvault.app.clients import OllamaClients
from askvault.settings import Settings, load_settings
from support.fake_ollama import FAKE_EMBED_MODEL
from support.index_templates import index_copy

FIXTURE_VAULT = Path(__file__).resolve().parents[1] / "fixtures" / "retrieval_vault"


@dataclass
class Indexed:
    settings: Settings
    conn: Connection
    embedder: OllamaEmbedder
    vault: Path


def retrieval_settings(tmp_path: Path, host: str, **flags: object) -> Settings:
    return load_settings(
        None,
        flags={
            "vault": str(tmp_path / "vault"),
            "state_dir": str(tmp_path / "state"),
            "ollama.host": host,
            "ollama.embed_model": FAKE_EMBED_MODEL,
            **flags,
        },
    )


@contextmanager
def indexed_vault(tmp_path: Path, host: str, **flags: object) -> Iterator[Indexed]:
    """A copy of the fixture vault, indexed with vectors; connection and embedder closed after."""
    shutil.copytree(FIXTURE_VAULT, tmp_path / "vault")
    settings = retrieval_settings(tmp_path, host, **flags)
    report = index_copy(settings)
    assert report.embed_error is None and report.pending_embeddings == 0
    conn = connect(settings.db_path)
    embedder = OllamaClients(settings).embedder()
    try:
        yield Indexed(settings, conn, embedder, tmp_path / "vault")
    finally:
        embedder.close()
        conn.close()
