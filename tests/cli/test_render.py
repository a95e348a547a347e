"""cli/render.status_lines: `askvault status`'s text, part by part, from a status document
(the dict `--json` prints), including the parts no command test reaches: the vault gone,
a command that writes the index, how notes are dated, failed texts, the skipped files."""

from __future__ import annotations

from typing import Any

from askvault.cli.render import status_lines


def _doc(**changes: Any) -> dict[str, Any]:
    """A status document of a small idle index, with `changes` (an `embedding` or
    `ollama` dict is merged into the default one)."""
    embedding = {
        "model": "all-minilm",
        "fingerprint": "all-minilm@abc/64",
        "index_model": "all-minilm",
        "building": None,
        "waiting": None,
        "rate_per_s": None,
        "eta_s": None,
    }
    ollama = {
        "url": "http://127.0.0.1:11434",
        "reachable": True,
        "refused": None,
        "embed_model": "all-minilm",
        "chat_model": "llama3.2",
        "error": None,
        "hint": None,
    }
    doc: dict[str, Any] = {
        "vault": "/notes",
        "index": "/state/index.sqlite",
        "notes": 3,
        "chunks": 5,
        "embedded_chunks": 5,
        "pending_embeddings": 0,
        "skipped": [],
        "note_days": None,
        "embed_failures": [],
        "last_change_indexed_at": "2025-01-01T10:00:00+01:00",
        "vault_unavailable": None,
        "questions": {s: [] for s in ("new", "answering", "waiting", "filing", "draft", "failed")},
        "follow_ups": [],
        "stale_answers": [],
        "daemon": None,
        "writer": None,
        "scan": None,
        "config": None,
    }
    embedding.update(changes.pop("embedding", {}))
    ollama.update(changes.pop("ollama", {}))
    doc.update(changes, embedding=embedding, ollama=ollama)
    return doc


def _starting(lines: list[str], head: str) -> list[str]:
    return [line for line in lines if line.startswith(head)]


def test_an_idle_index_shows_its_parts_in_order_one_line_each() -> None:
    assert status_lines(_doc()) == [
        "vault        /notes",
        "index        /state/index.sqlite",
        "notes        3 (5 chunks, 5 embedded, 0 pending for all-minilm)",
        "last change  2025-01-01T10:00:00+01:00",
        "ollama       http://127.0.0.1:11434 (reachable; embed all-minilm, chat llama3.2)",
        "questions    0 to answer, 0 drafts, 0 failed",
        "daemon       not running",
    ]


def test_a_vault_that_is_not_there_is_said_under_its_path() -> None:
    lines = status_lines(_doc(vault_unavailable="the folder is empty"))
    assert lines[:3] == [
        "vault        /notes",
        "vault        NOT THERE: the folder is empty (retried by the daemon)",
        "index        /state/index.sqlite",
    ]


def test_the_daemon_line_names_its_pid_or_the_command_that_writes_the_index() -> None:
    assert _starting(status_lines(_doc(daemon=4242)), "daemon") == ["daemon       pid 4242"]
    writer = {"command": "index", "pid": 77}
    assert _starting(status_lines(_doc(writer=writer)), "daemon") == [
        "daemon       not running; `askvault index` (pid 77) writes the index"
    ]
    # A lock file that names no command or pid (written by an older version): '?'.
    unknown = {"command": None, "pid": None}
    assert _starting(status_lines(_doc(writer=unknown)), "daemon") == [
        "daemon       not running; `askvault ?` (pid ?) writes the index"
    ]


def test_the_daemon_wins_over_a_writer_both_named() -> None:
    doc = _doc(daemon=4242, writer={"command": "index", "pid": 77})
    assert _starting(status_lines(doc), "daemon") == ["daemon       pid 4242"]


def test_twenty_skipped_files_are_listed_and_the_rest_counted() -> None:
    twenty = [{"path": f"big {i}.md", "reason": "too large"} for i in range(20)]
    lines = status_lines(_doc(skipped=twenty))
    assert len(_starting(lines, "skipped")) == 20 and "more (see --json)" not in lines[-1]
    lines = status_lines(_doc(skipped=[*twenty, {"path": "x.md", "reason": "binary"}]))
    assert _starting(lines, "skipped")[0] == "skipped      big 0.md: too large"
    assert lines[-1] == "skipped      … and 1 more (see --json)"
    assert len(_starting(lines, "skipped")) == 21


def test_note_days_say_where_days_come_from_and_the_undated_only_when_some_are() -> None:
    days = {"daily": 4, "name": 2, "property": 1, "mtime": 9, "undated": 0}
    line = "note days    4 daily-note names, 2 dated file names, 1 date properties, 9 file times"
    assert _starting(status_lines(_doc(note_days=days)), "note days") == [line]
    days["undated"] = 3
    assert _starting(status_lines(_doc(note_days=days)), "note days") == [
        line + ", 3 not dated yet"
    ]


def test_at_most_five_failed_texts_are_listed() -> None:
    failures = [
        {"file": f"n{i}.md", "reason": "Ollama refused this text: too long", "attempts": 2}
        for i in range(7)
    ]
    lines = _starting(status_lines(_doc(embed_failures=failures)), "not embedded")
    assert len(lines) == 5
    assert lines[0] == (
        "not embedded n0.md: Ollama refused this text: too long "
        "(tried 2x, retried later; searchable by words)"
    )


def test_what_embedding_waits_for_follows_the_index_lines() -> None:
    lines = status_lines(_doc(embedding={"waiting": "Ollama is not reachable"}))
    assert lines[lines.index("embedding    waiting: Ollama is not reachable") + 1].startswith(
        "last change"
    )


def test_the_rate_shows_the_time_left_only_while_texts_wait() -> None:
    running = {"rate_per_s": 2.5, "eta_s": 120.0}
    idle = status_lines(_doc(embedding=running))
    assert "embedding    running: 2.5 texts/s" in idle
    busy = status_lines(_doc(embedding=running, pending_embeddings=300))
    assert "embedding    running: 2.5 texts/s, about 2 min 00 s left" in busy


def test_a_model_switch_before_its_first_vector_names_who_builds_them() -> None:
    switch = {"model": "nomic-embed-text", "fingerprint": None}
    lines = status_lines(_doc(embedding=switch))
    assert lines[2].startswith("notes        3 (5 chunks: 5 embedded with all-minilm, which")
    assert "nomic-embed-text has none yet (`askvault index` builds them)" in lines[3]
    assert "(the daemon builds them)" in status_lines(_doc(embedding=switch, daemon=1))[3]


def test_ollama_not_probed_and_a_refused_host_with_its_hint() -> None:
    lines = status_lines(_doc(ollama={"reachable": None}))
    assert "ollama       http://127.0.0.1:11434 (not probed; embed all-minilm, chat llama3.2)" in (
        lines
    )
    refused = {"refused": True, "error": "not a local host", "hint": "set allow_remote_ollama"}
    lines = status_lines(_doc(ollama=refused))
    at = lines.index("ollama       REFUSED: not a local host")
    assert lines[at + 1] == "             set allow_remote_ollama"
