"""One reconcile and embedding pass (`askvault index`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from askvault.adapters import store
from askvault.adapters.db import connect, write_transaction
from askvault.adapters.ollama import OllamaEmbedder
from askvault.errors import OllamaError
from askvault.services.embedding import EmbedReport, drain_backlog, target_fingerprint
from askvault.services.indexer import IndexReport, reconcile
from askvault.settings import Settings


@dataclass
class PassReport:
    index: IndexReport
    embed: EmbedReport = field(default_factory=EmbedReport)
    embed_error: OllamaError | None = None
    pending_embeddings: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.index.as_dict(),
            "texts_embedded": self.embed.texts_embedded,
            "texts_failed": self.embed.texts_failed,
            "embed_batches": self.embed.batches,
            "embed_seconds": round(self.embed.seconds_waiting, 3),
            "pending_embeddings": self.pending_embeddings,
            "embed_error": str(self.embed_error) if self.embed_error else None,
        }


def make_embedder(settings: Settings) -> OllamaEmbedder:
    """The Ollama embedder configured by `settings`."""
    return OllamaEmbedder(
        settings.ollama.host,
        settings.ollama.embed_model,
        timeout_s=settings.ollama.timeout_s,
        batch_size=settings.ollama.embed_batch_size,
        max_input_tokens=settings.ollama.embed_max_tokens,
        allow_remote=settings.ollama.allow_remote_ollama,
    )


def index_vault(
    settings: Settings,
    *,
    on_scan: Callable[[int, int], None] | None = None,
    on_embed: Callable[[int, int], None] | None = None,
) -> PassReport:
    """Reconcile the vault, then embed the whole backlog. Ollama errors are reported, not raised:
    the lexical index is fresh either way."""
    conn = connect(settings.db_path)
    try:
        report = PassReport(index=reconcile(conn, settings, progress=on_scan))
        try:
            embedder = make_embedder(settings)
            fp = target_fingerprint(conn, embedder)
            total = store.count_pending(conn, fp)
            done = 0

            def progress(n: int) -> None:
                nonlocal done
                done += n
                if on_embed:
                    on_embed(done, total)

            report.embed = drain_backlog(
                conn, embedder, fp,
                batch_size=settings.ollama.embed_batch_size, progress=progress,
            )
            with write_transaction(conn):
                store.set_meta(conn, "embed_waiting_reason", "")
        except OllamaError as exc:
            report.embed_error = exc
            with write_transaction(conn):
                store.set_meta(conn, "embed_waiting_reason", exc.message)
        live = store.live_fingerprints(conn)
        building = next((fp for fp in live if fp.state == "building"), None)
        report.pending_embeddings = store.count_pending(
            conn, building or store.active_fingerprint(conn)
        )
        return report
    finally:
        conn.close()
