"""app/embed_loop.py: after a drain, the embedding thread calibrates the distance cut-off of
a model never measured, and an Ollama failure meanwhile is waited out, not a crash; a
fingerprint forgotten (a reconcile ended) while the model was asked is asked again."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from askvault.adapters import meta, store
from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.app.embed_loop import EmbedLoop
from askvault.core.abstention import Calibration
from askvault.core.backoff import Backoff
from askvault.services.index.indexer import reconcile
from askvault.settings import Settings
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.settings_factory import settings_for


def _wait(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out: {what}")


def _vault_of_words(tmp_path: Path, fake: FakeOllama, notes: int) -> Settings:
    """`notes` notes reconciled (words only: every chunk waits for a vector); the backlog
    goes in full batches (no request sized by time), so one request embeds them all."""
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(notes):
        (vault / f"Subject {i}.md").write_text(
            f"# Subject {i}\n\nNotes on subject {i}: topic{i} and word{i} are explained.\n",
            encoding="utf-8",
        )
    settings = settings_for(
        vault, tmp_path / "state", fake.url, **{"ollama.embed_batch_seconds": 0.0}
    )
    conn = connect(settings.db_path)
    try:
        reconcile(conn, settings)
    finally:
        conn.close()
    return settings


def _calibration(settings: Settings) -> Calibration | None:
    conn = connect(settings.db_path)
    try:
        fp = store.active_fingerprint(conn)
        return meta.distance_calibration(conn, fp.fingerprint.key) if fp else None
    finally:
        conn.close()


def _run(loop: EmbedLoop) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), name="test-embed")
    thread.start()
    return stop, thread


def _stop(loop: EmbedLoop, stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    loop.wake()
    thread.join(10)
    assert not thread.is_alive()


def test_the_embedding_thread_calibrates_once_the_backlog_is_drained(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    settings = _vault_of_words(tmp_path, fake_ollama, 22)
    loop = EmbedLoop(settings, OllamaClients(settings))
    stop, thread = _run(loop)
    try:
        _wait(lambda: _calibration(settings) is not None, 30, "a calibration is stored")
    finally:
        _stop(loop, stop, thread)
    stored = _calibration(settings)
    assert stored is not None and stored.cutoff is not None and stored.titles == 22
    titles = {f"Subject {i}" for i in range(22)}
    assert titles <= set(fake_ollama.embedded_inputs)  # asked after the chunks' texts


def test_ollama_failing_during_calibration_is_waited_out_and_the_cut_off_calibrated_after(
    tmp_path: Path, fake_ollama: FakeOllama, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="askvault")
    settings = _vault_of_words(tmp_path, fake_ollama, 22)
    # The fingerprint's probe and the backlog's batches pass; the first title's query
    # fails, and so does every embedding until the fault is cleared.
    fake_ollama.set_fault("500", paths=("/api/embed",), after=2)
    loop = EmbedLoop(settings, OllamaClients(settings), backoff=Backoff(0.1, 0.2))
    stop, thread = _run(loop)
    try:
        _wait(lambda: "embedding waits:" in caplog.text, 30, "the failure is logged")
        conn = connect(settings.db_path)
        try:
            assert store.count_pending(conn, store.active_fingerprint(conn)) == 0
        finally:
            conn.close()
        assert _calibration(settings) is None
        time.sleep(0.5)  # a few retries with the fault still on
        assert thread.is_alive()
        fake_ollama.set_fault(None)
        _wait(lambda: _calibration(settings) is not None, 30, "calibrated once Ollama answers")
    finally:
        _stop(loop, stop, thread)
    assert "embedding resumed" in caplog.text


def test_a_fingerprint_forgotten_while_the_model_is_asked_is_asked_again_of_a_new_client(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    # A reconcile ends (forget_fingerprint, on the indexing thread) while a drain asks
    # the model for its fingerprint: the answer may be the old model's. It is used for
    # that drain only; the next asks a new client and sees the re-pulled model.
    settings = _vault_of_words(tmp_path, fake_ollama, 1)
    made: list[object] = []

    class Clients(OllamaClients):
        def embedder(self) -> Any:
            inner = super().embedder()
            made.append(inner)
            if len(made) > 1:
                return inner

            class Asked:
                def __getattr__(self, name: str) -> object:
                    return getattr(inner, name)

                def fingerprint(self) -> object:
                    found = inner.fingerprint()
                    fake_ollama.digests[f"{FAKE_EMBED_MODEL}:latest"] = "sha256:" + "e" * 64
                    loop.forget_fingerprint()  # the re-pull's reconcile, meanwhile
                    return found

            return Asked()

    old = fake_ollama.digest(FAKE_EMBED_MODEL)
    loop = EmbedLoop(settings, Clients(settings))
    conn = connect(settings.db_path)
    try:
        _, first = loop._ready(conn)
        assert first.fingerprint.digest == old
        _, second = loop._ready(conn)
    finally:
        conn.close()
    assert len(made) == 2
    assert second.fingerprint.digest == "sha256:" + "e" * 64
