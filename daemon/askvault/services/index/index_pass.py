"""One reconcile and embedding pass (`askvault index`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from askvault.adapters import store
from askvault.adapters.db import Connection, connect
from askvault.adapters.lockfile import VaultLock
from askvault.errors import OllamaError, RemoteHostRefused
from askvault.records import Embedder, ModelClients
from askvault.services.index.calibration import calibrate_cutoff, calibration_target
from askvault.services.index.embedding import (
    EmbedReport,
    active_model_is_current,
    drain_backlog,
    embed_waiting_reason,
    embedding_target,
    record_embed_waiting,
    target_fingerprint,
)
from askvault.services.index.indexer import IndexReport, reconcile
from askvault.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class PassReport:
    index: IndexReport
    embed: EmbedReport = field(default_factory=EmbedReport)
    embed_error: OllamaError | None = None
    pending_embeddings: int = 0
    texts_to_embed: int = 0
    embed_wall_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def embeddings_refused(self) -> bool:
        """The configuration refuses the Ollama host: a failure, not a wait."""
        return isinstance(self.embed_error, RemoteHostRefused)

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.index.as_dict(),
            "texts_to_embed": self.texts_to_embed,
            "texts_embedded": self.embed.texts_embedded,
            "texts_failed": self.embed.texts_failed,
            "embed_batches": self.embed.batches,
            "embed_seconds": round(self.embed.seconds_waiting, 3),
            "embed_wall_seconds": round(self.embed_wall_seconds, 3),
            "total_seconds": round(self.total_seconds, 3),
            "pending_embeddings": self.pending_embeddings,
            "words_complete": True,
            "embeddings": (
                "refused"
                if self.embeddings_refused
                else "waiting"
                if self.embed_error
                else "complete"
            ),
            "embed_error": str(self.embed_error) if self.embed_error else None,
            "embed_hint": self.embed_error.hint if self.embed_error else None,
        }


def index_vault(
    settings: Settings,
    clients: ModelClients,
    *,
    on_scan: Callable[[int, int], None] | None = None,
    on_embed: Callable[[int, int], None] | None = None,
    allow_empty: bool = False,
) -> PassReport:
    """Reconcile the vault, then embed the whole backlog. Ollama errors are reported, not raised:
    the lexical index is fresh either way. Holds the vault's single-writer lock throughout
    (VaultLocked while `askvault run` or another `index` holds it). A vault that looks
    unmounted raises VaultUnavailable unless `allow_empty` (the user emptied it). The
    embedder comes from `clients`, only when there is something to embed."""
    with VaultLock(settings.vault_path, "index", state_dir=settings.state_path.parent):
        return _index_vault(
            settings, clients, on_scan=on_scan, on_embed=on_embed, allow_empty=allow_empty
        )


def _index_vault(
    settings: Settings,
    clients: ModelClients,
    *,
    on_scan: Callable[[int, int], None] | None,
    on_embed: Callable[[int, int], None] | None,
    allow_empty: bool,
) -> PassReport:
    started = time.monotonic()
    target = embedding_target(settings.ollama.host, settings.ollama.embed_model)
    conn = connect(settings.db_path, busy_timeout_s=settings.daemon.busy_timeout_s)
    embedder: Embedder | None = None
    try:
        report = PassReport(
            index=reconcile(conn, settings, progress=on_scan, allow_empty=allow_empty)
        )
        embed_started = time.monotonic()
        try:
            if active_model_is_current(conn, settings):
                if embed_waiting_reason(conn, target):
                    record_embed_waiting(conn, target, None)
                if calibration_target(conn, settings) is not None:
                    embedder = clients.embedder()
                    _calibrate(conn, settings, embedder)
                return _finish(conn, report, started, embed_started)
            embedder = clients.embedder()
            fp = target_fingerprint(conn, embedder)
            # Distinct texts, the unit the drain embeds and reports (chunks that share a
            # text share its vector), taken as the drain will take them.
            total = report.texts_to_embed = len(store.pending_hashes(conn, fp, time.time()))
            done = 0

            def progress(n: int) -> None:
                nonlocal done
                done += n
                if on_embed:
                    on_embed(done, total)

            if on_embed:
                on_embed(0, total)
            report.embed = drain_backlog(
                conn,
                embedder,
                fp,
                batch_size=settings.ollama.embed_batch_size,
                batch_seconds=settings.ollama.embed_batch_seconds,
                progress=progress,
            )
            record_embed_waiting(conn, target, None)
            _calibrate(conn, settings, embedder)
        except RemoteHostRefused as exc:
            # A setting, not an outage: nothing to wait for, nothing saved as a wait.
            report.embed_error = exc
        except OllamaError as exc:
            report.embed_error = exc
            record_embed_waiting(conn, target, exc.message + (f" ({exc.hint})" if exc.hint else ""))
        return _finish(conn, report, started, embed_started)
    finally:
        if embedder is not None:
            embedder.close()
        conn.close()


def _calibrate(conn: Connection, settings: Settings, embedder: Embedder) -> None:
    """The distance cut-off of a model never measured, once its vectors are complete
    (services/index/calibration.py); Ollama failing meanwhile leaves it to the next pass or the
    daemon, the pass's report unchanged."""
    try:
        calibrate_cutoff(conn, settings, embedder)
    except OllamaError as exc:
        log.warning("the distance cut-off is calibrated later: %s", exc.message)


def _finish(
    conn: Connection, report: PassReport, started: float, embed_started: float
) -> PassReport:
    report.embed_wall_seconds = time.monotonic() - embed_started
    live = store.live_fingerprints(conn)
    building = next((fp for fp in live if fp.state == "building"), None)
    report.pending_embeddings = store.count_pending(
        conn, building or store.active_fingerprint(conn)
    )
    report.total_seconds = time.monotonic() - started
    return report
