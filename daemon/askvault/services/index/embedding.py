"""Draining the embedding backlog: chunk texts without a vector for the target model.

The backlog is derived from the chunks table, so it survives any crash. Each
batch is one embed call and one transaction; an Ollama failure stops the drain
with the backlog intact (the caller backs off and retries). Every vector is checked
(its length is the fingerprint's dimension, its values finite) before it is stored: a
bad one is recorded as a failed input (`embed_failures`, retried later with a growing
delay) and the rest of its batch is stored. A batch Ollama refuses (InputRefused) is
split in halves until the texts it refuses are alone; those are recorded the same way,
unless nothing of the batch could be embedded and a probe text fails too: then Ollama
itself is failing, and the drain stops with the backlog intact.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from askvault.adapters import meta, store
from askvault.adapters.db import Connection, write_transaction
from askvault.adapters.ollama_http import model_digest, reported_dimension
from askvault.core.embed_order import next_batch_size, order_backlog, smoothed_rate
from askvault.errors import InputRefused, OllamaError
from askvault.records import Embedder
from askvault.services.index.foreground import ForegroundWork
from askvault.settings import Settings

log = logging.getLogger(__name__)

FLUSH_TEXTS = 512
FLUSH_S = 1.0


def embedding_target(host: str, model: str) -> str:
    """The settings a waiting reason belongs to: the Ollama host and the embedding model."""
    return f"{host.strip().rstrip('/') or 'default'} {model.strip()}"


def record_embed_waiting(conn: Connection, target: str, reason: str | None) -> None:
    """Save (or clear, with None) why embeddings for `target` wait."""
    with write_transaction(conn):
        meta.set_embed_waiting(conn, target, reason)


def embed_waiting_reason(conn: Connection, target: str) -> str | None:
    """Why embeddings for `target` wait, if the last attempt with these settings failed."""
    # A reason saved by a command with another host or model is not the current state.
    reason, saved_for = meta.embed_waiting(conn)
    if reason is None or saved_for != target:
        return None
    return reason


@dataclass
class EmbedReport:
    texts_embedded: int = 0
    chunks_filled: int = 0
    batches: int = 0
    texts_failed: int = 0
    seconds_waiting: float = 0.0
    seconds_yielded: float = 0.0  # held back while a question was answered
    promoted: bool = False


def same_model(a: str, b: str) -> bool:
    """`nomic-embed-text` is `nomic-embed-text:latest`."""
    return a.removesuffix(":latest") == b.removesuffix(":latest")


def vector_problem(vector: Sequence[float], dimension: int) -> str | None:
    """Why `vector` cannot be stored for a model of `dimension`, or None if it can.

    sqlite-vec refuses a vector of another length ("Dimension mismatch"), and a NaN or an
    infinity would be stored as valid and poison every distance computed from it.
    """
    if len(vector) != dimension:
        return f"the model returned {len(vector)} dimensions, expected {dimension}"
    if not all(math.isfinite(x) for x in vector):
        return "the model returned a vector with NaN or infinite values"
    return None


PROBE_TEXT = "askvault embedding probe"


def embed_isolating(embedder: Embedder, texts: Sequence[str]) -> list[list[float] | str]:
    """A vector per text, or the reason Ollama refused that text on its own.

    A refused batch is bisected: one bad text among 32 costs ~10 extra calls, and the others
    are embedded. When no text could be embedded, a probe decides: if Ollama embeds it, the
    texts are bad; if not, InputRefused is raised (Ollama is failing, not the inputs)."""
    results = _bisect(embedder, list(texts))
    if results and all(isinstance(r, str) for r in results):
        embedder.embed_documents([PROBE_TEXT])  # raises InputRefused when Ollama is failing
    return results


def _bisect(embedder: Embedder, texts: list[str]) -> list[list[float] | str]:
    try:
        return list(embedder.embed_documents(texts))
    except InputRefused as exc:
        if len(texts) == 1:
            return [exc.message]
        middle = len(texts) // 2
        return _bisect(embedder, texts[:middle]) + _bisect(embedder, texts[middle:])


def active_model_is_current(conn: Connection, settings: Settings) -> bool:
    """True when the active vectors are the configured model's as Ollama lists and reports
    it now (name, digest, embedding length), no other model is being built and every chunk
    has its vector: then a pass needs no embedding client at all (importing it is ~0.3 s
    of an unchanged re-index, issue 11). Anything else (Ollama down, a re-pulled model,
    another length, a backlog) takes the one way a model change is handled, the daemon's
    and `askvault index`'s alike: `target_fingerprint` from a fresh client, which embeds or
    says why it cannot."""
    active = store.active_fingerprint(conn)
    ollama = settings.ollama
    if active is None or active.fingerprint.model != ollama.embed_model:
        return False
    if any(fp.state == "building" for fp in store.live_fingerprints(conn)):
        return False
    if store.count_pending(conn, active):
        return False
    host, model, timeout_s = ollama.host, ollama.embed_model, ollama.timeout_s
    remote = ollama.allow_remote_ollama
    if model_digest(host, model, timeout_s=timeout_s, allow_remote=remote) != (
        active.fingerprint.digest
    ):
        return False
    # A length the model reports is checked too; the fingerprint itself holds the length
    # of a real vector (a model may report one and return another: then this never holds).
    reported = reported_dimension(host, model, timeout_s=timeout_s, allow_remote=remote)
    return reported is None or reported == active.fingerprint.dimension


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
    batch_seconds: float = 0.0,
    should_stop: Callable[[], bool] = lambda: False,
    progress: Callable[[int], None] | None = None,
    max_batches: int | None = None,
    foreground: ForegroundWork | None = None,
) -> EmbedReport:
    """Embed pending texts batch by batch until none is left (or asked to stop), in the
    order of core/embed_order.py: the texts `foreground` prefers (a waiting question's
    word hits), then the most recently edited and the most linked notes' in turns. No
    batch starts while `foreground` answers a question. A batch holds what the embedder
    does in `batch_seconds` at the rate measured in this drain, at most `batch_size`
    texts (`batch_seconds` 0: always `batch_size`).

    Raises OllamaUnavailable / ModelMissing from the embedder; what was stored
    before that stays stored.
    """
    report = EmbedReport()
    held = _HeldVectors(conn, fp, report, progress)
    backlog = _Backlog(conn, fp, held)
    rate: float | None = None
    try:
        while not should_stop() and (max_batches is None or report.batches < max_batches):
            preferred = _give_way(foreground, held.flush, should_stop, report)
            if should_stop():
                break
            size = next_batch_size(rate, seconds=batch_seconds, maximum=batch_size)
            batch = backlog.next_batch(preferred, size)
            if batch is None:
                break
            if batch:
                waited = report.seconds_waiting
                held.add(*_embed_batch(embedder, batch, fp, report))
                rate = smoothed_rate(rate, len(batch), report.seconds_waiting - waited)
    except OllamaError:
        held.flush()  # keep what was embedded before Ollama failed
        raise
    held.flush()  # and before a stop request
    if not should_stop():
        report.promoted = _promote_when_built(conn, fp)
    return report


class _HeldVectors:
    """A drain's vectors and refused texts not yet written, and writing them: in groups,
    since vec0 rewrites a whole 1,024-row block per transaction (one commit per small
    batch tripled the cost, measured)."""

    def __init__(
        self,
        conn: Connection,
        fp: store.FingerprintRow,
        report: EmbedReport,
        progress: Callable[[int], None] | None,
    ) -> None:
        self.conn, self.fp, self.report, self.progress = conn, fp, report, progress
        self.vectors: list[tuple[str, list[float]]] = []
        self.refused: list[tuple[str, str]] = []
        self.flushed_at = time.monotonic()

    def add(self, vectors: list[tuple[str, list[float]]], refused: list[tuple[str, str]]) -> None:
        """Hold one batch's results; write what is held once it is FLUSH_TEXTS vectors or
        FLUSH_S old."""
        self.vectors.extend(vectors)
        self.refused.extend(refused)
        if len(self.vectors) >= FLUSH_TEXTS or time.monotonic() - self.flushed_at >= FLUSH_S:
            self.flush()

    def flush(self) -> None:
        """Write what is held, in one transaction, and report it to `progress`."""
        if self.vectors or self.refused:
            now = time.time()
            with write_transaction(self.conn):
                self.report.chunks_filled += store.store_vectors(self.conn, self.fp, self.vectors)
                for text_hash, problem in self.refused:
                    store.record_embed_failure(self.conn, self.fp, text_hash, problem, now)
            # Unusable vectors are done too (recorded, retried later): a bar that counted
            # only the good ones would end short of its total.
            if self.progress:
                self.progress(len(self.vectors) + len(self.refused))
            self.vectors.clear()
            self.refused.clear()
        self.flushed_at = time.monotonic()


class _Backlog:
    """The texts a drain has still to embed, in core/embed_order.py's order, read again
    when emptied or when the foreground prefers some."""

    def __init__(self, conn: Connection, fp: store.FingerprintRow, held: _HeldVectors) -> None:
        self.conn, self.fp, self.held = conn, fp, held
        self.queue: list[str] = []

    def next_batch(self, preferred: list[str], size: int) -> list[tuple[str, str]] | None:
        """The next `size` (text hash, text) to embed, None once no text waits; empty when
        no chunk holds the texts queued any more (their notes changed since)."""
        if not self.queue or preferred:
            self.held.flush()  # first: held vectors would otherwise look pending again
            rows = store.backlog_texts(self.conn, self.fp, time.time())
            self.queue = order_backlog(rows, preferred)
            if not self.queue:
                return None
        batch = store.texts_of(self.conn, self.queue[:size])
        del self.queue[:size]
        return batch


def _embed_batch(
    embedder: Embedder,
    batch: Sequence[tuple[str, str]],
    fp: store.FingerprintRow,
    report: EmbedReport,
) -> tuple[list[tuple[str, list[float]]], list[tuple[str, str]]]:
    """One embed call (bisected on a refusal) for `batch`, counted in `report`; its usable
    vectors and its unusable texts (`_sort_vectors`)."""
    started = time.monotonic()
    vectors = embed_isolating(embedder, [text for _, text in batch])
    report.seconds_waiting += time.monotonic() - started
    if len(vectors) != len(batch):
        raise RuntimeError("the embedder returned a different number of vectors")
    good, unusable = _sort_vectors(batch, vectors, fp.fingerprint.dimension)
    if unusable:
        log.warning(
            "embedding: %d of %d texts got an unusable vector from %s (%s); "
            "they stay searchable by words and are retried later",
            len(unusable),
            len(batch),
            fp.fingerprint.model,
            unusable[-1][1],
        )
    report.texts_embedded += len(batch) - len(unusable)
    report.texts_failed += len(unusable)
    report.batches += 1
    return good, unusable


def _give_way(
    foreground: ForegroundWork | None,
    flush: Callable[[], None],
    should_stop: Callable[[], bool],
    report: EmbedReport,
) -> list[str]:
    """Before a batch: wait while a question is answered (its search sees every vector
    made so far: they are flushed first); the hashes to embed first, if any."""
    if foreground is None:
        return []
    if foreground.is_answering():
        flush()
        report.seconds_yielded += foreground.wait_while_answering(should_stop)
    return foreground.take_preferred()


def _sort_vectors(
    pending: Sequence[tuple[str, str]], vectors: Sequence[Sequence[float] | str], dimension: int
) -> tuple[list[tuple[str, list[float]]], list[tuple[str, str]]]:
    """(text hash, vector) of the usable vectors, and (text hash, why) of the others: a text
    Ollama refused (its reason, a string) or a vector of the wrong size or not finite."""
    good: list[tuple[str, list[float]]] = []
    unusable: list[tuple[str, str]] = []
    for (text_hash, _), vector in zip(pending, vectors, strict=True):
        if isinstance(vector, str):
            unusable.append((text_hash, f"Ollama refused this text: {vector}"))
            continue
        problem = vector_problem(vector, dimension)
        if problem is None:
            good.append((text_hash, list(vector)))
        else:
            unusable.append((text_hash, problem))
    return good, unusable


def _promote_when_built(conn: Connection, fp: store.FingerprintRow) -> bool:
    """Promote a `building` model once nothing is pending but recorded failed inputs (they
    do not hold a new model back: they wait for their retry either way)."""
    if fp.state != "building" or store.count_pending(conn, fp) != store.count_failed_inputs(
        conn, fp
    ):
        return False
    with write_transaction(conn):
        store.promote_fingerprint(conn, fp)
    log.info("embedding model %s is now active", fp.fingerprint.model)
    return True
