"""Draining the embedding backlog: chunk texts without a vector for the target model.

The backlog is derived from the chunks table, so it survives any crash. Each
batch is one embed call and one transaction; an Ollama failure stops the drain
with the backlog intact (the caller backs off and retries).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from askvault.adapters import store
from askvault.adapters.db import Connection, write_transaction
from askvault.records import Embedder

log = logging.getLogger(__name__)


@dataclass
class EmbedReport:
    texts_embedded: int = 0
    chunks_filled: int = 0
    batches: int = 0
    seconds_waiting: float = 0.0
    promoted: bool = False


def target_fingerprint(conn: Connection, embedder: Embedder) -> store.FingerprintRow:
    """Ask the model for its fingerprint (one call) and register it in the index.

    A new model becomes `building` while the old one keeps serving searches.
    """
    fingerprint = embedder.fingerprint()
    with write_transaction(conn):
        return store.ensure_fingerprint(conn, fingerprint, time.time())


def drain_backlog(
    conn: Connection,
    embedder: Embedder,
    fp: store.FingerprintRow,
    *,
    batch_size: int = 32,
    should_stop: Callable[[], bool] = lambda: False,
    progress: Callable[[int], None] | None = None,
    max_batches: int | None = None,
) -> EmbedReport:
    """Embed pending texts batch by batch until none is left (or asked to stop).

    Raises OllamaUnavailable / ModelMissing from the embedder; what was stored
    before that stays stored.
    """
    report = EmbedReport()
    while not should_stop() and (max_batches is None or report.batches < max_batches):
        pending = store.pending_texts(conn, fp, batch_size, time.time())
        if not pending:
            break
        started = time.monotonic()
        vectors = embedder.embed_documents([text for _, text in pending])
        report.seconds_waiting += time.monotonic() - started
        if len(vectors) != len(pending):
            raise RuntimeError("the embedder returned a different number of vectors")
        with write_transaction(conn):
            report.chunks_filled += store.store_vectors(
                conn, fp, [(h, v) for (h, _), v in zip(pending, vectors, strict=True)]
            )
        report.texts_embedded += len(pending)
        report.batches += 1
        if progress:
            progress(len(pending))
    if fp.state == "building" and not should_stop() and store.count_pending(conn, fp) == 0:
        with write_transaction(conn):
            store.promote_fingerprint(conn, fp)
        report.promoted = True
        log.info("embedding model %s is now active", fp.fingerprint.model)
    return report
