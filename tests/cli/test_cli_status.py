"""`askvault status` and `askvault index` tell the truth (issue 14, item 6): the current
settings' state only, questions by state, stale answers listed, honest progress and exit
codes. Through the real CLI entry point."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from askvault.adapters import answer_store, meta, store
from askvault.adapters.answer_store import AnswerRow, QuestionRow
from askvault.adapters.db import connect, write_transaction
from askvault.app.clients import OllamaClients
from askvault.cli.render import ProgressLine
from askvault.services.index.index_pass import index_vault
from support.cli_invoke import invoke
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama
from support.settings_factory import cli_env, settings_for
from support.vault_factory import make_fixture_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return make_fixture_vault(tmp_path / "vault")


@pytest.fixture
def env(vault: Path, tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, str]:
    return cli_env(vault, tmp_path / "state", fake_ollama.url)


def status_json(env: dict[str, str]) -> dict:
    code, out, _ = invoke(["status", "--json"], env)
    assert code == 0
    return json.loads(out)


# -- the distance cut-off in force -----------------------------------------------------------


def test_status_shows_the_distance_cut_off_in_force_and_where_it_comes_from(
    env: dict[str, str],
) -> None:
    doc = status_json(env)  # no index yet
    assert doc["distance_cutoff"] == {
        "value": None,
        "source": "none",
        "detail": "none: no vectors yet (a search by words has no distance)",
    }
    assert invoke(["index"], env)[0] == 0
    doc = status_json(env)  # the suite's model: never measured, too few notes to calibrate
    assert doc["distance_cutoff"]["source"] == "none"
    assert doc["distance_cutoff"]["detail"].startswith("none: ")
    assert "are needed" in doc["distance_cutoff"]["detail"]
    measured = {**env, "ASKVAULT_EMBED_MODEL": "nomic-embed-text"}
    # Configured, its vectors not built: questions still meet the suite model's vectors,
    # embedded as that model, so that model's cut-off (none) is the one in force.
    assert status_json(measured)["distance_cutoff"]["source"] == "none"
    assert invoke(["index"], measured)[0] == 0
    assert status_json(measured)["distance_cutoff"] == {
        "value": 0.31,
        "source": "measured",
        "detail": "measured for nomic-embed-text",
    }
    lines = invoke(["status"], measured)[1].splitlines()
    assert "cut-off      0.31 (measured for nomic-embed-text)" in lines
    setting = {**env, "ASKVAULT_QUERIES__MAX_DISTANCE": "0.5"}
    lines = invoke(["status"], setting)[1].splitlines()
    assert "cut-off      0.5 (set by queries.max_distance)" in lines


# -- embeddings: only the current settings' state ------------------------------------------


def test_a_waiting_reason_saved_with_another_model_is_not_shown_as_current(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    other = {**env, "ASKVAULT_EMBED_MODEL": "mxbai-embed-large"}
    assert invoke(["index"], other)[0] == 0
    fake_ollama.recover()
    assert status_json(other)["embedding"]["waiting"], "the settings that failed see it"
    doc = status_json(env)
    assert doc["embedding"]["waiting"] is None
    code, out, _ = invoke(["status"], env)
    assert "waiting:" not in out


def test_a_waiting_reason_saved_with_another_host_is_not_shown_as_current(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    elsewhere = {**env, "OLLAMA_HOST": "http://127.0.0.1:9"}  # nothing listens there
    assert invoke(["index"], elsewhere)[0] == 0
    assert "not reachable" in status_json(elsewhere)["embedding"]["waiting"]
    assert status_json(env)["embedding"]["waiting"] is None


def test_pending_embeddings_count_the_configured_model_not_another(env: dict[str, str]) -> None:
    assert invoke(["index"], env)[0] == 0
    other = {**env, "ASKVAULT_EMBED_MODEL": "mxbai-embed-large"}
    doc = status_json(other)
    assert doc["pending_embeddings"] == doc["chunks"] > 0
    assert doc["embedding"]["index_model"] == FAKE_EMBED_MODEL
    code, out, _ = invoke(["status"], other)
    assert "mxbai-embed-large has none yet" in out


# -- questions by state ----------------------------------------------------------------------


def _write(vault: Path, rel: str, text: str) -> bytes:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path.read_bytes()


def test_questions_are_counted_by_state_not_all_as_waiting(
    env: dict[str, str], vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    assert invoke(["index"], env)[0] == 0
    _write(vault, "queries/inbox/New one.md", "What do embeds do?\n")
    _write(vault, "queries/inbox/Draft.md", "---\ndraft: true\n---\nHalf a question\n")
    failed = _write(vault, "queries/inbox/Broken.md", "---\nmax_sources: lots\n---\nWhy?\n")
    _write(vault, "queries/inbox/Fixed.md", "Now fixed\n")
    _write(vault, "queries/inbox/Offline.md", "Asked while Ollama was away\n")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    conn = connect(settings.db_path)
    with write_transaction(conn):
        for rel, status, data in (
            ("queries/inbox/Broken.md", "failed", failed),
            ("queries/inbox/Fixed.md", "failed", b"the bytes before the edit"),
            ("queries/inbox/Offline.md", "waiting", b""),
        ):
            answer_store.put_question(
                conn,
                QuestionRow(
                    rel,
                    rel.replace("inbox", "answers"),
                    status,
                    hashlib.sha256(data).hexdigest(),
                    "2026-12-01T12:00:00+00:00",
                ),
            )
    conn.close()
    doc = status_json(env)
    questions = doc["questions"]
    assert questions["draft"] == ["queries/inbox/Draft.md"]
    assert questions["failed"] == ["queries/inbox/Broken.md"]
    assert questions["waiting"] == ["queries/inbox/Offline.md"]
    assert questions["new"] == ["queries/inbox/Fixed.md", "queries/inbox/New one.md"]
    assert doc["queue"] == 3  # new, new after its edit, waiting: not the draft, not the failed
    code, out, _ = invoke(["status"], env)
    assert "questions    3 to answer (2 new, 1 waiting for Ollama), 1 draft, 1 failed" in out
    assert "failed       queries/inbox/Broken.md" in out


# -- stale answers ---------------------------------------------------------------------------


def test_stale_answers_are_listed_whether_marked_or_edited(
    env: dict[str, str], vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    assert invoke(["index"], env)[0] == 0
    marked = _write(vault, "queries/answers/Marked.md", "---\nstatus: stale\n---\nold\n")
    _write(vault, "queries/answers/Edited.md", "---\nstatus: answered\n---\nmine now\n")
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    conn = connect(settings.db_path)
    with write_transaction(conn):
        answer_store.put_answer(
            conn,
            AnswerRow(
                "queries/answers/Marked.md",
                "queries/inbox/Marked.md",
                "stale",
                hashlib.sha256(marked).hexdigest(),
                ("Embeds.md",),
            ),
        )
        answer_store.put_answer(
            conn,
            AnswerRow("queries/answers/Gone.md", "queries/inbox/Gone.md", "stale", "0" * 64, ()),
        )
        meta.set_stale_answers_edited(conn, ["queries/answers/Edited.md"])
    conn.close()
    assert status_json(env)["stale_answers"] == [
        {"path": "queries/answers/Edited.md", "marked": False},
        {"path": "queries/answers/Marked.md", "marked": True},
    ]  # the deleted one is not listed
    code, out, _ = invoke(["status"], env)
    assert "stale        queries/answers/Marked.md (marked stale)" in out
    assert "stale        queries/answers/Edited.md (edited by you" in out


# -- index: exit codes, totals, the closing summary --------------------------------------------


def test_index_exits_0_when_only_embeddings_wait_and_says_so(
    env: dict[str, str], fake_ollama: FakeOllama
) -> None:
    fake_ollama.set_fault("down")
    code, out, err = invoke(["index"], env)
    assert code == 0
    assert "embeddings wait" in err and "word index is complete" in err
    code, out, _ = invoke(["index", "--json"], env)
    doc = json.loads(out)
    assert code == 0 and doc["words_complete"] is True and doc["embeddings"] == "waiting"


def test_index_exits_1_on_a_real_failure(env: dict[str, str], tmp_path: Path) -> None:
    env = {**env, "ASKVAULT_VAULT": str(tmp_path / "no such vault")}
    assert invoke(["index"], env)[0] == 1


def test_embedding_progress_counts_distinct_texts_and_ends_at_its_total(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    same = "# Copy\n\nThe very same paragraph, word for word, in three notes.\n"
    for name in ("Copy A.md", "Copy B.md", "Copy C.md"):
        (vault / name).write_text(same, encoding="utf-8")
    settings = settings_for(
        vault, tmp_path / "state", fake_ollama.url, **{"ollama.embed_batch_size": 2}
    )
    calls: list[tuple[int, int]] = []
    report = index_vault(
        settings, OllamaClients(settings), on_embed=lambda done, total: calls.append((done, total))
    )
    totals = {total for _, total in calls}
    assert len(totals) == 1
    total = totals.pop()
    assert total == report.texts_to_embed == report.embed.texts_embedded
    assert calls[-1] == (total, total), "the bar ends full"
    conn = connect(settings.db_path)
    chunks = store.counts(conn)["chunks"]
    conn.close()
    assert total < chunks, "copies share one text: chunks would overstate the work"


def test_the_closing_summary_covers_the_whole_command(env: dict[str, str]) -> None:
    code, out, _ = invoke(["index", "--json"], env)
    doc = json.loads(out)
    assert doc["total_seconds"] >= doc["seconds"] + doc["embed_wall_seconds"] - 0.01
    code, out, _ = invoke(["index"], env)
    assert code == 0 and " in all" in out and "texts embedded" in out


def test_progress_line_shows_no_eta_at_the_start_then_an_honest_one() -> None:
    now = [0.0]
    line = ProgressLine("scanning", "notes", show=False, clock=lambda: now[0])
    line.update(0, 1000)
    now[0] = 20.0  # the pool took 20 s to start
    line.update(1, 1000)
    assert "ETA" not in line.render(1, 1000)
    for step in range(2, 302):
        now[0] = 20.0 + step * 0.01
        line.update(step, 1000)
    text = line.render(301, 1000)
    assert "301/1000 notes" in text and "30%" in text
    assert "ETA 7.0 s" in text  # 699 notes at 100 a second
    now[0] = 40.0
    line.update(1000, 1000)
    assert line.render(1000, 1000).endswith("100%  40 s")
