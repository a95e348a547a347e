"""The distance cut-off in force, and the vault's own calibration of it for an embedding
model never measured (issue 22 item 3).

An answer is withheld when the question is farther from every chunk than the cut-off
(core/decision.py). The cut-off is `queries.max_distance` when set, else the one measured
for the model (core/abstention.MEASURED_MAX_DISTANCE), else the one the vault calibrated
for the active vectors, else none. A calibration embeds up to CALIBRATION_SAMPLE note
titles as queries (with the model's query prefix, as a question is) and takes the 0.95
quantile of each one's exact distance to the nearest chunk of another note
(core/abstention.calibrated_cutoff). It is made once every chunk has its vector, kept in
the index's meta table under the vectors' fingerprint key, and made again when the model
or its vectors change, the notes are cut another way, or the number of notes moves by
more than a quarter (core/abstention.calibration_due): not on every edit.

The daemon's embedding thread calls `calibrate_cutoff` after a drain (giving way to
answers as the drain does), `askvault index` after its pass.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from askvault.adapters import calibration_store, meta, store
from askvault.adapters.db import Connection, write_transaction
from askvault.core.abstention import (
    CALIBRATION_MIN,
    Calibration,
    Cutoff,
    calibrated_cutoff,
    calibration_due,
    calibration_sample,
    cutoff_in_force,
    measured_cutoff,
)
from askvault.records import Embedder
from askvault.services.index.embedding import same_model, vector_problem
from askvault.services.index.foreground import ForegroundWork
from askvault.settings import Settings

log = logging.getLogger(__name__)

NO_VECTORS = "none: no vectors yet (a search by words has no distance)"


def cutoff_for(conn: Connection | None, settings: Settings) -> Cutoff:
    """The cut-off answers use now and where it comes from: that of the active vectors'
    model, measured or calibrated (while another model's vectors are built, questions are
    embedded with the active model and compared with its vectors, so its distances and its
    cut-off hold); `conn` None: no index, the configured model's."""
    active = store.active_fingerprint(conn) if conn is not None else None
    calibration = None
    model = settings.ollama.embed_model
    if conn is not None and active is not None:
        model = active.fingerprint.model
        calibration = meta.distance_calibration(conn, active.fingerprint.key)
    cutoff = cutoff_in_force(settings.queries.max_distance, model, calibration)
    if cutoff.value is None and active is None:
        return Cutoff(None, "none", NO_VECTORS)
    return cutoff


def calibration_target(conn: Connection, settings: Settings) -> store.FingerprintRow | None:
    """The active vectors, when the vault should calibrate their cut-off: neither the
    setting nor a measured value applies, they are the configured model's, and nothing
    up to date is stored for them. A few cheap queries (no count of the backlog)."""
    ollama = settings.ollama
    if settings.queries.max_distance > 0 or measured_cutoff(ollama.embed_model) is not None:
        return None
    active = store.active_fingerprint(conn)
    if active is None or not same_model(active.fingerprint.model, ollama.embed_model):
        return None
    due = calibration_due(
        meta.distance_calibration(conn, active.fingerprint.key),
        fingerprint=active.fingerprint.key,
        chunking=meta.chunking(conn) or "",
        notes=calibration_store.count_source_notes(conn),
    )
    return active if due else None


def calibrate_cutoff(
    conn: Connection,
    settings: Settings,
    embedder: Embedder,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    foreground: ForegroundWork | None = None,
) -> Calibration | None:
    """Calibrate the active vectors' cut-off when `calibration_target` says so and every
    chunk has its vector (texts the model refused aside); the calibration stored, or None
    when none was made (not due, a backlog left, stopped). No title is embedded while
    `foreground` answers a question.

    Raises OllamaError from the embedder, with nothing stored: the caller tries again later.
    """
    fp = calibration_target(conn, settings)
    if fp is None or store.count_pending(conn, fp) > store.count_failed_inputs(conn, fp):
        return None
    notes = {
        path: (note_id, title)
        for note_id, path, title in calibration_store.calibration_notes(conn, fp.id)
    }
    distances: list[float] = []
    if len(notes) >= CALIBRATION_MIN:
        for path in calibration_sample(list(notes)):
            if foreground is not None and foreground.is_answering():
                foreground.wait_while_answering(should_stop)
            if should_stop():
                return None
            note_id, title = notes[path]
            vector = embedder.embed_query(title)
            if vector_problem(vector, fp.fingerprint.dimension) is not None:
                continue  # an unusable vector: one title fewer
            distance = calibration_store.nearest_other_note_distance(conn, fp.id, vector, note_id)
            if distance is not None:
                distances.append(distance)
    cutoff = calibrated_cutoff(distances)
    calibration = Calibration(
        fingerprint=fp.fingerprint.key,
        cutoff=None if cutoff is None else round(cutoff, 4),
        titles=len(distances) if len(notes) >= CALIBRATION_MIN else len(notes),
        notes=calibration_store.count_source_notes(conn),
        chunking=meta.chunking(conn) or "",
    )
    with write_transaction(conn):
        meta.set_distance_calibration(conn, calibration)
    log.info(
        "distance cut-off for %s: %s from %d note titles",
        fp.fingerprint.model,
        "none" if cutoff is None else f"{cutoff:.4f}",
        calibration.titles,
    )
    return calibration
