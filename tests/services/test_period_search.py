"""Questions about a period over a real index: notes dated as the index keeps them (and
dated again when what dates them changes), searches narrowed on both channels, the pack
and the answer note saying which period, an empty period answered without the model."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from askvault.adapters.db import Connection, connect
from askvault.adapters.ollama import OllamaGenerator
from askvault.app.clients import OllamaClients
from askvault.core.answer_note import render_answer_note
from askvault.core.schema import to_json
from askvault.errors import AskvaultError
from askvault.records import PeriodRequest, QuestionOptions, SearchFilters
from askvault.services.admin.status import collect_status
from askvault.services.answer import answer_question
from askvault.services.documents.search import search_document
from askvault.services.index.index_pass import index_vault
from askvault.services.index.indexer import index_paths, reconcile
from askvault.services.retrieval.context import build_context
from askvault.services.retrieval.search import search
from askvault.settings import Settings
from support.fake_ollama import FakeOllama
from support.settings_factory import settings_for

NOW = datetime(2023, 7, 5, 12, 0)  # a Wednesday
OLD = datetime(2020, 1, 1, 12, 0).timestamp()


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    (root / "Journal").mkdir()
    (root / "Roundup").mkdir()
    notes = {
        # Daily notes in the default format, under the Daily notes folder.
        "Journal/2023-06-27.md": "# Tuesday\n\nRepotted the basil and fed the sourdough starter.",
        "Journal/2023-07-04.md": "# Tuesday\n\nThe sourdough starter smelled of acetone.",
        # Dated file names.
        "Roundup/2022-12-10 Canvas for mindmaps.md": "# Roundup\n\nWhiteboard Canvas arrived.",
        "Roundup/2023-01-14 Canvas use cases.md": "# Roundup\n\nUse cases for Canvas boards.",
        "Roundup/2022-06-04 Synthesis guides.md": "# Roundup\n\nGuides to synthesis.",
        # Dated by a property.
        "Meeting about canvas.md": "---\ndate: 2022-11-20\n---\n# Meeting\n\nCanvas plan.",
        # Dated by its file time only (set below, 2020-01-01).
        "Canvas overview.md": "# Canvas overview\n\nCanvas is a board for notes and cards.",
    }
    for path, text in notes.items():
        (root / path).write_text(text + "\n", encoding="utf-8")
    (root / ".obsidian" / "daily-notes.json").write_text('{"folder": "Journal"}')
    os.utime(root / "Canvas overview.md", (OLD, OLD))
    return root


@pytest.fixture
def idx(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> Iterator[tuple[Settings, Connection]]:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    conn = connect(settings.db_path)
    try:
        yield settings, conn
    finally:
        conn.close()


def _days(conn: Connection) -> dict[str, tuple[str, str]]:
    return {p: (d, s) for p, d, s in conn.execute("SELECT path, note_date, date_source FROM notes")}


def _search(settings: Settings, conn: Connection, query: str, **kw: object) -> list[str]:
    embedder = OllamaClients(settings).query_embedder()
    try:
        result = search(conn, settings, query, embedder=embedder, **kw)  # type: ignore[arg-type]
    finally:
        embedder.close()
    return [h.note_path for h in result.hits]


def test_the_index_dates_each_note_from_the_first_source_that_has_a_day(
    idx: tuple[Settings, Connection],
) -> None:
    _, conn = idx
    days = _days(conn)
    assert days["Journal/2023-07-04.md"] == ("2023-07-04", "daily")
    assert days["Roundup/2022-12-10 Canvas for mindmaps.md"] == ("2022-12-10", "name")
    assert days["Meeting about canvas.md"] == ("2022-11-20", "property")
    assert days["Canvas overview.md"] == ("2020-01-01", "mtime")


def test_status_counts_where_the_days_come_from(idx: tuple[Settings, Connection]) -> None:
    settings, _ = idx
    days = to_json(collect_status(settings, probe=False))["note_days"]
    assert days == {"daily": 2, "name": 3, "property": 1, "mtime": 1, "undated": 0}


def test_a_rename_a_touch_and_an_edit_date_the_note_again(
    idx: tuple[Settings, Connection], vault: Path
) -> None:
    settings, conn = idx
    (vault / "Roundup/2022-06-04 Synthesis guides.md").rename(vault / "Roundup/Synthesis.md")
    later = datetime(2021, 3, 3, 12).timestamp()
    os.utime(vault / "Canvas overview.md", (later, later))
    meeting = vault / "Meeting about canvas.md"
    meeting.write_text(meeting.read_text().replace("2022-11-20", "2022-10-02"))
    reconcile(conn, settings)
    days = _days(conn)
    assert days["Roundup/Synthesis.md"][1] == "mtime"
    assert days["Canvas overview.md"] == ("2021-03-03", "mtime")
    assert days["Meeting about canvas.md"] == ("2022-10-02", "property")


def test_a_watcher_batch_dates_the_notes_it_writes(
    idx: tuple[Settings, Connection], vault: Path
) -> None:
    settings, conn = idx
    (vault / "Journal/2023-07-05.md").write_text("# Wednesday\n\nBaked rye.\n")
    index_paths(conn, settings, ["Journal/2023-07-05.md"])
    assert _days(conn)["Journal/2023-07-05.md"] == ("2023-07-05", "daily")


def test_new_daily_notes_settings_date_the_notes_again_at_the_next_reconcile(
    idx: tuple[Settings, Connection], vault: Path
) -> None:
    settings, conn = idx
    (vault / ".obsidian" / "daily-notes.json").write_text('{"folder": "Elsewhere"}')
    reconcile(conn, settings)
    # No longer daily notes; their names still start with a day.
    assert _days(conn)["Journal/2023-07-04.md"] == ("2023-07-04", "name")


def test_a_period_in_the_query_narrows_the_hits_to_its_notes(
    idx: tuple[Settings, Connection],
) -> None:
    settings, conn = idx
    request = PeriodRequest(now=NOW)
    hits = _search(
        settings, conn, "what did the roundups say about Canvas in late 2022?", period=request
    )
    assert set(hits) == {"Roundup/2022-12-10 Canvas for mindmaps.md", "Meeting about canvas.md"}


@pytest.mark.parametrize("mode", ["words", "vector"])
def test_each_channel_is_narrowed_in_sql(idx: tuple[Settings, Connection], mode: str) -> None:
    settings, conn = idx
    hits = _search(
        settings, conn, "Canvas in January 2023", period=PeriodRequest(now=NOW), fusion_mode=mode
    )
    assert hits == ["Roundup/2023-01-14 Canvas use cases.md"]


def test_what_is_searched_loses_the_words_and_their_hanging_preposition() -> None:
    from askvault.services.retrieval.periods import without_words

    assert without_words("what about Canvas in late 2022?", "late 2022") == "what about Canvas?"
    assert without_words("Notizen von gestern", "gestern") == "Notizen"
    assert without_words("昨天的笔记", "昨天") == "的笔记"
    assert without_words("last week", "last week") == "last week"  # nothing else left


def test_the_periods_words_are_not_searched(idx: tuple[Settings, Connection]) -> None:
    settings, conn = idx
    result = search(
        conn,
        settings,
        "sourdough starter last week",
        period=PeriodRequest(now=NOW),
        fusion_mode="words",
    )
    assert result.period is not None
    assert (result.period.words, result.period.query) == ("last week", "sourdough starter")
    assert (result.period.since, result.period.until, result.period.notes) == (
        "2023-06-26",
        "2023-07-02",
        1,
    )
    assert [h.note_path for h in result.hits] == ["Journal/2023-06-27.md"]


def test_a_query_with_no_period_is_searched_as_before(idx: tuple[Settings, Connection]) -> None:
    settings, conn = idx
    asked = to_json(
        search_document(search(conn, settings, "canvas boards", period=PeriodRequest(now=NOW)))
    )
    before = to_json(
        search_document(
            search(conn, settings, "canvas boards", period=PeriodRequest(from_words=False))
        )
    )
    assert asked == before and "period" not in asked


def test_since_and_until_bound_the_search_and_leave_the_query_whole(
    idx: tuple[Settings, Connection],
) -> None:
    settings, conn = idx
    result = search(
        conn,
        settings,
        "Canvas in 2022",
        filters=SearchFilters(),
        period=PeriodRequest(since="2023-01", until="2023", now=NOW),
    )
    assert result.period is not None and result.period.query == "Canvas in 2022"
    assert {h.note_path for h in result.hits} <= {
        "Roundup/2023-01-14 Canvas use cases.md",
        "Journal/2023-06-27.md",
        "Journal/2023-07-04.md",
    }
    assert "Roundup/2023-01-14 Canvas use cases.md" in {h.note_path for h in result.hits}


def test_a_bound_that_is_no_date_is_an_error_that_says_so(
    idx: tuple[Settings, Connection],
) -> None:
    settings, conn = idx
    with pytest.raises(AskvaultError, match="is not a date"):
        search(conn, settings, "canvas", period=PeriodRequest(since="soonish"))


def test_a_period_with_no_notes_gives_no_hits_and_says_so(
    idx: tuple[Settings, Connection],
) -> None:
    settings, conn = idx
    pack = build_context(conn, settings, "Canvas in March 2019", period=PeriodRequest(now=NOW))
    assert pack.pages == () and pack.period is not None and pack.period.notes == 0
    assert pack.actions[0].startswith("no note falls in “March 2019” (2019-03-01 to 2019-03-31)")


def _answer(settings: Settings, conn: Connection, question: str, **kw: object):  # type: ignore[no-untyped-def]
    embedder = OllamaClients(settings).embedder()
    generator = OllamaGenerator(settings.ollama.host, timeout_s=5)
    try:
        return answer_question(
            conn,
            settings,
            question,
            QuestionOptions(),
            embedder=embedder,
            generator=generator,
            now=NOW,
            **kw,  # type: ignore[arg-type]
        )
    finally:
        generator.close()
        embedder.close()


def test_the_answer_note_says_which_period_and_how_many_notes(
    idx: tuple[Settings, Connection], fake_ollama: FakeOllama
) -> None:
    settings, conn = idx
    result = _answer(settings, conn, "What did the roundups say about Canvas in late 2022?")
    assert len(fake_ollama.requests_to("/api/chat")) == 1  # asked, unlike an empty period
    text = render_answer_note(result.note)
    assert (
        "> [!note] Period\n> Searched the notes of “late 2022” (2022-09-01 to 2022-12-31): "
        "2 notes fell in it." in text
    )
    assert set(result.grounding) <= {
        "Roundup/2022-12-10 Canvas for mindmaps.md",
        "Meeting about canvas.md",
    }


def test_an_empty_period_is_a_no_answer_that_says_so_without_asking_the_model(
    idx: tuple[Settings, Connection], fake_ollama: FakeOllama
) -> None:
    settings, conn = idx
    result = _answer(settings, conn, "What did I write about Canvas in March 2019?")
    assert result.status == "no-answer"
    assert fake_ollama.requests_to("/api/chat") == []
    text = render_answer_note(result.note)
    assert (
        "> [!failure] No answer in your notes\n> No note of your vault falls in “March 2019”"
        in text
    )
    assert "0 notes fell in it" in text


def test_a_question_with_no_period_has_no_period_callout(idx: tuple[Settings, Connection]) -> None:
    settings, conn = idx
    result = _answer(settings, conn, "What is Canvas?")
    assert "[!note] Period" not in render_answer_note(result.note)


def test_ask_since_and_until_narrow_the_answer(idx: tuple[Settings, Connection]) -> None:
    settings, conn = idx
    embedder = OllamaClients(settings).embedder()
    generator = OllamaGenerator(settings.ollama.host, timeout_s=5)
    try:
        result = answer_question(
            conn,
            settings,
            "What is Canvas?",
            QuestionOptions(since="2023-01-01", until="2023-01-31"),
            embedder=embedder,
            generator=generator,
            now=NOW,
        )
    finally:
        generator.close()
        embedder.close()
    assert result.grounding == ["Roundup/2023-01-14 Canvas use cases.md"]
    assert "since 2023-01-01 until 2023-01-31" in render_answer_note(result.note)


def test_the_search_document_carries_the_period(idx: tuple[Settings, Connection]) -> None:
    settings, conn = idx
    doc = to_json(
        search_document(search(conn, settings, "Canvas in 2022", period=PeriodRequest(now=NOW)))
    )
    assert doc["period"] == {
        "words": "2022",
        "since": "2022-01-01",
        "until": "2022-12-31",
        "notes": 3,
        "searched": "Canvas",
    }
    json.dumps(doc)  # plain JSON


@pytest.mark.parametrize("min_chunks", [0, None])
def test_both_vector_paths_keep_only_the_periods_chunks(
    idx: tuple[Settings, Connection], fake_ollama: FakeOllama, min_chunks: int | None
) -> None:
    # min_chunks=0: the sign-bit scan with the period as its mask; None: below the size
    # where it is used, the exact scan with the period as an SQL condition.
    from askvault.adapters import search_store, store

    _, conn = idx
    fp = store.active_fingerprint(conn)
    assert fp is not None
    period = SearchFilters(since="2022-11-01", until="2022-12-31")
    found = search_store.vector_chunks(
        conn,
        fp.id,
        fake_ollama.vector("canvas"),
        k=10,
        filters=period,
        bits_table=fp.bits_table,
        min_chunks=min_chunks,
    )
    paths = {row.path for row in search_store.chunk_rows(conn, [c for c, _ in found]).values()}
    assert paths == {"Roundup/2022-12-10 Canvas for mindmaps.md", "Meeting about canvas.md"}


def test_a_date_given_as_a_value_searches_the_whole_vault(
    idx: tuple[Settings, Connection], fake_ollama: FakeOllama
) -> None:
    # "like 'Monday 3 March' instead of 2025-03-03" is the format the user wants, not the
    # notes of March 2025: none of this vault's notes falls in it, and the question was
    # answered "no note of your vault falls in ..." without the model.
    settings, conn = idx
    result = _answer(
        settings,
        conn,
        "can the Canvas overview date come out like 'Monday 3 March' instead of 2025-03-03?",
    )
    assert len(fake_ollama.requests_to("/api/chat")) == 1
    assert "Canvas overview.md" in result.grounding
    assert "[!note] Period" not in render_answer_note(result.note)
