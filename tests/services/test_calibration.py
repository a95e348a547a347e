"""services/index/calibration.py: the distance cut-off in force for answers, and the vault's own
calibration of it for an embedding model never measured (issue 22 item 3)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from askvault.adapters import meta, store
from askvault.adapters.db import Connection, connect
from askvault.app.clients import OllamaClients
from askvault.core.abstention import CALIBRATION_MIN, calibrated_cutoff
from askvault.errors import OllamaError
from askvault.records import QuestionOptions
from askvault.services.answer import answer_question
from askvault.services.index.calibration import calibrate_cutoff, calibration_target, cutoff_for
from askvault.services.index.foreground import ForegroundWork
from askvault.services.index.index_pass import index_vault
from askvault.settings import Settings
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.settings_factory import settings_for

# Words the fake embeds far apart: each note is about one of them.
SUBJECTS = (
    "compost heaps",
    "sourdough starter",
    "bicycle gears",
    "tide pools",
    "violin strings",
    "glacier melt",
    "chess openings",
    "beehive frames",
    "kiln firing",
    "sailing knots",
    "moss gardens",
    "telescope mirrors",
    "linen weaving",
    "granite quarries",
    "falcon training",
    "cider pressing",
    "lantern festivals",
    "canal locks",
    "origami cranes",
    "volcano vents",
    "pottery glazes",
    "orchard grafting",
    "radio antennas",
    "desert cacti",
    "harbor cranes",
    "maple syrup",
    "coral reefs",
    "puppet theatre",
    "saffron harvest",
    "tram depots",
    "quilt patterns",
)


def write_notes(vault: Path, count: int, *, first: int = 0) -> list[str]:
    """`count` notes, one subject each (titled after it); their paths."""
    paths = []
    for subject in SUBJECTS[first : first + count]:
        title = subject.capitalize()
        word = subject.split()[0]
        path = vault / f"{title}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"# {title}\n\nNotes on {subject}: how {word} work, what {word} need, and the "
            f"history of {subject} in three short sentences.\n",
            encoding="utf-8",
        )
        paths.append(path.name)
    return paths


def settings_of(tmp_path: Path, fake: FakeOllama, **flags: Any) -> Settings:
    return settings_for(tmp_path / "vault", tmp_path / "state", fake.url, **flags)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Any]:
    """Opens the test's index (after it was built); every connection closed after."""
    opened: list[Connection] = []

    def open_db(settings: Settings) -> Connection:
        opened.append(connect(settings.db_path))
        return opened[-1]

    yield open_db
    for conn in opened:
        conn.close()


def title_queries(fake: FakeOllama, titles: list[str]) -> list[str]:
    """The titles the fake was asked to embed on their own (as calibration queries)."""
    asked = set(fake.embedded_inputs)
    return [t for t in titles if t in asked]


def expected_cutoff(conn: Connection, fake: FakeOllama, model: str) -> float | None:
    """The calibration recomputed apart from askvault's SQL: every title of a note with a
    vector against the stored vectors of every other note's chunks (numpy, as
    bench/abstention_bench.py does)."""
    fp = store.active_fingerprint(conn)
    assert fp is not None
    rows = conn.execute(
        "SELECT n.path, n.title, e.vector FROM chunks c JOIN notes n ON n.id = c.note_id "
        "JOIN embedding_cache e ON e.fingerprint_id = ? AND e.text_key = unhex(c.text_hash)",
        (fp.id,),
    ).fetchall()
    paths = np.asarray([r[0] for r in rows])
    mat = np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows])
    mat = mat / np.linalg.norm(mat, axis=1, keepdims=True)
    held_out = []
    for path, title in sorted({(r[0], r[1]) for r in rows}):
        query = np.asarray(fake.vector(title, model), dtype=np.float32)
        sims = mat @ (query / np.linalg.norm(query))
        sims[paths == path] = -np.inf
        held_out.append(1.0 - float(sims.max()))
    return calibrated_cutoff(held_out)


# -- askvault index calibrates a model never measured ----------------------------------------


def test_a_model_never_measured_is_calibrated_from_its_titles_once_its_vectors_are_complete(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    titles = [p.removesuffix(".md") for p in write_notes(tmp_path / "vault", 24)]
    settings = settings_of(tmp_path, fake_ollama)
    report = index_vault(settings, OllamaClients(settings))
    assert report.pending_embeddings == 0
    conn = db(settings)
    fp = store.active_fingerprint(conn)
    assert fp is not None and fp.fingerprint.model == FAKE_EMBED_MODEL
    stored = meta.distance_calibration(conn, fp.fingerprint.key)
    assert stored is not None and stored.titles == 24 and stored.notes == 24
    expected = expected_cutoff(conn, fake_ollama, FAKE_EMBED_MODEL)
    assert expected is not None and stored.cutoff == pytest.approx(expected, abs=1e-4)
    assert sorted(title_queries(fake_ollama, titles)) == sorted(titles)  # each asked once
    cutoff = cutoff_for(conn, settings)
    assert (cutoff.value, cutoff.source) == (stored.cutoff, "calibrated")
    assert cutoff.detail == "calibrated from 24 note titles"


def test_the_calibration_is_not_made_again_on_a_second_pass_or_an_edit(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    vault = tmp_path / "vault"
    titles = [p.removesuffix(".md") for p in write_notes(vault, 24)]
    settings = settings_of(tmp_path, fake_ollama)
    index_vault(settings, OllamaClients(settings))
    asked = len(fake_ollama.embedded_inputs)
    index_vault(settings, OllamaClients(settings))
    assert len(fake_ollama.embedded_inputs) == asked  # nothing embedded, nothing calibrated
    (vault / "Tide pools.md").write_text("# Tide pools\n\nAnemones and crabs.\n")
    index_vault(settings, OllamaClients(settings))
    new = fake_ollama.embedded_inputs[asked:]
    assert any("Anemones and crabs" in text for text in new)  # the edit is embedded
    assert not set(new) & set(titles)  # and no title: not calibrated again


def test_a_vault_grown_by_more_than_a_quarter_is_calibrated_again(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    vault = tmp_path / "vault"
    write_notes(vault, 24)
    settings = settings_of(tmp_path, fake_ollama)
    index_vault(settings, OllamaClients(settings))
    write_notes(vault, 6, first=24)  # 30 notes: a quarter more, not beyond it
    index_vault(settings, OllamaClients(settings))
    conn = db(settings)
    fp = store.active_fingerprint(conn)
    assert fp is not None
    assert meta.distance_calibration(conn, fp.fingerprint.key).notes == 24  # type: ignore[union-attr]
    write_notes(vault, 1, first=30)  # 31: beyond it
    index_vault(settings, OllamaClients(settings))
    again = meta.distance_calibration(conn, fp.fingerprint.key)
    assert again is not None and again.notes == 31 and again.titles == 31


def test_too_few_titles_give_no_cut_off_and_embed_no_title(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    titles = [p.removesuffix(".md") for p in write_notes(tmp_path / "vault", CALIBRATION_MIN - 1)]
    settings = settings_of(tmp_path, fake_ollama)
    index_vault(settings, OllamaClients(settings))
    conn = db(settings)
    fp = store.active_fingerprint(conn)
    assert fp is not None
    stored = meta.distance_calibration(conn, fp.fingerprint.key)
    assert stored is not None and stored.cutoff is None and stored.titles == CALIBRATION_MIN - 1
    assert title_queries(fake_ollama, titles) == []
    cutoff = cutoff_for(conn, settings)
    assert (cutoff.value, cutoff.source) == (None, "none")
    assert cutoff.detail == (
        f"none: {CALIBRATION_MIN - 1} note titles to calibrate from, {CALIBRATION_MIN} are needed"
    )


def test_a_model_with_a_measured_cut_off_never_calibrates(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    titles = [p.removesuffix(".md") for p in write_notes(tmp_path / "vault", 24)]
    settings = settings_of(tmp_path, fake_ollama, **{"ollama.embed_model": "all-minilm"})
    index_vault(settings, OllamaClients(settings))
    conn = db(settings)
    assert meta.get_value(conn, meta.DISTANCE_CALIBRATIONS) is None
    assert title_queries(fake_ollama, titles) == []
    cutoff = cutoff_for(conn, settings)
    assert (cutoff.value, cutoff.source, cutoff.detail) == (
        0.58,
        "measured",
        "measured for all-minilm",
    )


def test_the_user_s_setting_overrides_and_nothing_is_calibrated(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    titles = [p.removesuffix(".md") for p in write_notes(tmp_path / "vault", 24)]
    settings = settings_of(tmp_path, fake_ollama, **{"queries.max_distance": 0.9})
    index_vault(settings, OllamaClients(settings))
    conn = db(settings)
    assert meta.get_value(conn, meta.DISTANCE_CALIBRATIONS) is None
    assert title_queries(fake_ollama, titles) == []
    assert cutoff_for(conn, settings).source == "setting"
    assert cutoff_for(conn, settings).value == 0.9


def test_an_index_without_vectors_has_no_cut_off_and_says_why(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    write_notes(tmp_path / "vault", 24)
    settings = settings_of(tmp_path, fake_ollama)
    fake_ollama.set_fault("down")
    index_vault(settings, OllamaClients(settings))  # words only
    cutoff = cutoff_for(db(settings), settings)
    assert (cutoff.value, cutoff.source) == (None, "none")
    assert cutoff.detail == "none: no vectors yet (a search by words has no distance)"
    assert cutoff_for(None, settings).detail == cutoff.detail  # no index at all


def test_a_search_by_words_alone_is_never_withheld_for_its_distance(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    write_notes(tmp_path / "vault", 3)
    settings = settings_of(tmp_path, fake_ollama, **{"queries.max_distance": 0.01})
    index_vault(settings, OllamaClients(settings))
    fake_ollama.chat_script = ["Compost heaps need air [[Compost heaps]]."]
    generator = OllamaClients(settings).generator()
    try:
        result = answer_question(
            db(settings),
            settings,
            "what do compost heaps need?",
            QuestionOptions(),
            embedder=None,  # no embedder: words only, no distance
            generator=generator,
        )
    finally:
        generator.close()
    assert result.nearest_distance is None
    assert result.status == "answered" and result.decided_by == "supported"
    assert result.cutoff is not None and result.cutoff.value == 0.01


# -- the model changes -------------------------------------------------------------------------


def test_a_calibration_is_used_for_its_own_model_s_vectors_only(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    write_notes(tmp_path / "vault", 24)
    first = settings_of(tmp_path, fake_ollama)
    index_vault(first, OllamaClients(first))
    conn = db(first)
    old = store.active_fingerprint(conn)
    assert old is not None and meta.distance_calibration(conn, old.fingerprint.key) is not None
    fake_ollama.models.append("embeddinggemma:latest")
    other = settings_of(tmp_path, fake_ollama, **{"ollama.embed_model": "embeddinggemma"})
    # Configured, not yet built: questions are still embedded with the old model and
    # compared with its vectors, so its cut-off holds until the new vectors take over.
    before = cutoff_for(conn, other)
    old_stored = meta.distance_calibration(conn, old.fingerprint.key)
    assert old_stored is not None
    assert (before.value, before.source) == (old_stored.cutoff, "calibrated")
    assert calibration_target(conn, other) is None
    index_vault(other, OllamaClients(other))  # builds the new vectors, then calibrates them
    new = store.active_fingerprint(conn)
    assert new is not None and new.fingerprint.model == "embeddinggemma"
    stored = meta.distance_calibration(conn, new.fingerprint.key)
    assert stored is not None and stored.cutoff is not None
    assert cutoff_for(conn, other).value == stored.cutoff
    # The old model's own entry is kept: switching back calibrates nothing.
    assert meta.distance_calibration(conn, old.fingerprint.key) is not None


# -- Ollama away, a stop, a question being answered ----------------------------------------


def _indexed_uncalibrated(tmp_path: Path, fake: FakeOllama) -> Settings:
    """A vault of 24 notes with every vector and no calibration (the setting was set while
    it was indexed); the settings without the setting."""
    write_notes(tmp_path / "vault", 24)
    with_setting = settings_of(tmp_path, fake, **{"queries.max_distance": 0.9})
    index_vault(with_setting, OllamaClients(with_setting))
    return settings_of(tmp_path, fake)


def test_ollama_down_during_calibration_stores_nothing_and_the_next_try_calibrates(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    settings = _indexed_uncalibrated(tmp_path, fake_ollama)
    conn = db(settings)
    embedder = OllamaClients(settings).embedder()
    try:
        fake_ollama.set_fault("down")
        with pytest.raises(OllamaError):
            calibrate_cutoff(conn, settings, embedder)
        assert meta.get_value(conn, meta.DISTANCE_CALIBRATIONS) is None
        assert calibration_target(conn, settings) is not None  # still due
        fake_ollama.recover()
        stored = calibrate_cutoff(conn, settings, embedder)
    finally:
        embedder.close()
    assert stored is not None and stored.titles == 24
    assert calibration_target(conn, settings) is None


def test_askvault_index_reports_its_pass_when_ollama_fails_during_calibration(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    settings = _indexed_uncalibrated(tmp_path, fake_ollama)
    fake_ollama.set_fault("500", paths=("/api/embed",))
    report = index_vault(settings, OllamaClients(settings))
    assert report.embed_error is None and report.pending_embeddings == 0
    conn = db(settings)
    assert meta.get_value(conn, meta.DISTANCE_CALIBRATIONS) is None
    fake_ollama.recover()
    index_vault(settings, OllamaClients(settings))
    assert calibration_target(conn, settings) is None  # calibrated by the next pass


def test_a_calibration_is_left_while_chunks_wait_for_their_vectors(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    settings = _indexed_uncalibrated(tmp_path, fake_ollama)
    vault = tmp_path / "vault"
    fake_ollama.set_fault("down")
    write_notes(vault, 2, first=24)
    index_vault(settings, OllamaClients(settings))  # their words only
    fake_ollama.recover()
    conn = db(settings)
    embedder = OllamaClients(settings).embedder()
    try:
        assert calibrate_cutoff(conn, settings, embedder) is None
    finally:
        embedder.close()
    assert meta.get_value(conn, meta.DISTANCE_CALIBRATIONS) is None


def test_a_stop_during_calibration_stores_nothing(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any
) -> None:
    settings = _indexed_uncalibrated(tmp_path, fake_ollama)
    conn = db(settings)
    before = len(fake_ollama.embedded_inputs)

    def asked() -> int:
        return len(fake_ollama.embedded_inputs) - before

    embedder = OllamaClients(settings).embedder()
    try:
        assert calibrate_cutoff(conn, settings, embedder, should_stop=lambda: asked() >= 3) is None
    finally:
        embedder.close()
    assert asked() == 3
    assert meta.get_value(conn, meta.DISTANCE_CALIBRATIONS) is None


def test_no_title_is_embedded_while_a_question_is_answered(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = _indexed_uncalibrated(tmp_path, fake_ollama)
    foreground = ForegroundWork()
    done = threading.Event()
    found: list[object] = []

    def calibrate() -> None:
        conn = connect(settings.db_path)
        embedder = OllamaClients(settings).embedder()
        try:
            found.append(calibrate_cutoff(conn, settings, embedder, foreground=foreground))
        finally:
            embedder.close()
            conn.close()
            done.set()

    calls = len(fake_ollama.embedded_inputs)
    with foreground.answering():
        worker = threading.Thread(target=calibrate)
        worker.start()
        time.sleep(0.5)
        assert not done.is_set()
        assert len(fake_ollama.embedded_inputs) == calls  # waiting, nothing embedded
    worker.join(20)
    assert done.is_set() and found and found[0] is not None
    assert len(fake_ollama.embedded_inputs) == calls + 24


# -- nomic-embed-text: measured ------------------------------------------------------------------


@pytest.mark.parametrize("model", ["nomic-embed-text", "nomic-embed-text:latest"])
def test_nomic_embed_text_s_measured_cut_off_withholds_a_far_question(
    tmp_path: Path, fake_ollama: FakeOllama, db: Any, model: str
) -> None:
    """The fake's vectors sit ~0.7 from any question: with the real model's 0.31 in
    force, a supported reply is withheld as too far (which is why the suite's own model
    has a name of its own)."""
    titles = [p.removesuffix(".md") for p in write_notes(tmp_path / "vault", 24)]
    settings = settings_of(tmp_path, fake_ollama, **{"ollama.embed_model": model})
    index_vault(settings, OllamaClients(settings))
    conn = db(settings)
    assert meta.get_value(conn, meta.DISTANCE_CALIBRATIONS) is None
    assert title_queries(fake_ollama, [f"search_query: {t}" for t in titles]) == []
    cutoff = cutoff_for(conn, settings)
    assert (cutoff.value, cutoff.source) == (0.31, "measured")
    fake_ollama.chat_script = ["Compost heaps need air [[Compost heaps]]."]
    clients = OllamaClients(settings)
    embedder, generator = clients.embedder(), clients.generator()
    try:
        result = answer_question(
            conn,
            settings,
            "what do compost heaps need?",
            QuestionOptions(),
            embedder=embedder,
            generator=generator,
        )
    finally:
        embedder.close()
        generator.close()
    assert result.nearest_distance is not None and result.nearest_distance > 0.31
    assert (result.status, result.decided_by) == ("no-answer", "too-far")
    assert "beyond the 0.31 measured for nomic-embed-text" in result.reason
