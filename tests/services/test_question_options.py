"""Question options in askvault's own namespace (issue 14 item 1): `ask_*` keys narrow the
search, ordinary properties never do, unknown or misspelt keys are warned about in the
answer note, and the options in force are shown in the note and its trace."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from askvault.core.answer_note import AnswerNote, render_answer_note
from askvault.services.inbox.question_options import read_question_options
from support import inbox_fixtures
from support.fake_ollama import FakeOllama
from support.inbox_driver import InboxDriver

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
REPLY = "An embed shows another note inline [[Embeds]]."


vault, settings, start = inbox_fixtures.vault, inbox_fixtures.settings, inbox_fixtures.start


def _answered(inbox: InboxDriver, vault: Path, stem: str) -> str:
    inbox.run_until(lambda: (vault / f"queries/archive/{stem}.md").exists())
    return (vault / f"queries/answers/{stem}.md").read_text(encoding="utf-8")


def test_a_template_tags_property_never_narrows_the_search(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(
        "---\ntags: [physics, question]\nlanguage: en\nmodel: gpt\n---\nWhat does an embed show?\n",
        encoding="utf-8",
    )
    inbox = start()
    text = _answered(inbox, vault, "Q")
    assert "status: answered" in text and "0 page(s) retrieved" not in text
    assert "Question options" not in text, "ordinary properties are not options"


def test_ask_options_narrow_the_search_and_are_shown_in_the_note_and_its_trace(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    prompts: list[str] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        prompts.append(str(messages))
        return "The second section explains fermentation of rye [[Deep Note]]."

    fake_ollama.chat_script = reply
    (vault / "queries/inbox/Q.md").write_text(
        "---\nask_folders: [folder]\nask_max_sources: 2\ntags: [bread]\n---\n"
        "What does the second section explain?\n",
        encoding="utf-8",
    )
    inbox = start()
    text = _answered(inbox, vault, "Q")
    narrowed = "Narrowed by this question's options: folders `folder`; at most 2 source(s)."
    assert f"> [!note] Question options\n> {narrowed}" in text
    assert f"> options: {narrowed}" in text  # the trace
    assert "Embeds" not in prompts[0] and "fermentation" in prompts[0]


def test_unknown_and_misspelt_option_keys_are_warned_about_in_the_answer_note(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(
        "---\nfoldrs: [folder]\nask_tagz: [x]\nask_colour: red\n---\nWhat does an embed show?\n",
        encoding="utf-8",
    )
    inbox = start()
    text = _answered(inbox, vault, "Q")
    assert "> Unknown option `foldrs:` is ignored. Did you mean `ask_folders:`?" in text
    assert "> Unknown option `ask_tagz:` is ignored. Did you mean `ask_tags:`?" in text
    assert "> Unknown option `ask_colour:` is ignored. Known options: `ask_folders`" in text
    assert "status: answered" in text  # warnings, not errors: the search is not narrowed


def test_invalid_ask_values_fail_naming_the_key_as_written(vault: Path) -> None:
    reading = read_question_options({"ask_folders": ["../out"], "max_sources": 0}, vault)
    assert reading.errors == [
        "ask_folders: '../out' is outside the vault",
        "max_sources: must be a whole number >= 1 (got 0)",
    ]


@pytest.mark.parametrize(
    "frontmatter,since,until",
    [
        ({"ask_since": date(2024, 1, 5)}, "2024-01-05", None),  # YAML reads a date as a date
        ({"ask_until": datetime(2024, 3, 1, 10, 30)}, None, "2024-03-01"),
        ({"ask_since": 2023, "ask_until": "2023-06"}, "2023", "2023-06"),  # a year as a number
        ({"ask_since": "last week"}, "last week", None),  # words, read when answered
        ({"ask_since": "  2022-09  "}, "2022-09", None),
    ],
    ids=["date_property", "datetime_property", "year_number", "words", "spaces"],
)
def test_ask_since_and_until_are_read_as_the_bounds_of_ask_since_until(
    vault: Path, frontmatter: dict[str, Any], since: str | None, until: str | None
) -> None:
    reading = read_question_options(frontmatter, vault)
    assert reading.errors == []
    assert (reading.options.since, reading.options.until) == (since, until)
    shown = [f"since `{since}`"] * bool(since) + [f"until `{until}`"] * bool(until)
    assert reading.notices == ["Narrowed by this question's options: " + "; ".join(shown) + "."]


@pytest.mark.parametrize(
    "frontmatter,error",
    [
        (
            {"ask_until": "banana"},
            "ask_until: 'banana' is not a date (try 2024-01-05, 2024-01 or 'last week')",
        ),
        ({"ask_since": ""}, "ask_since: must be a non-empty text (got '')"),
        ({"ask_since": True}, "ask_since: must be a non-empty text (got True)"),
        ({"ask_since": 2024, "ask_until": 2023}, "ask_since: '2024' is after ask_until: '2023'"),
    ],
    ids=["no_date", "empty", "boolean", "reversed"],
)
def test_an_ask_period_that_is_no_date_fails_naming_the_key(
    vault: Path, frontmatter: dict[str, Any], error: str
) -> None:
    reading = read_question_options(frontmatter, vault)
    assert reading.errors == [error]
    assert (reading.options.since, reading.options.until) == (None, None)


def test_ask_until_before_every_note_gives_a_no_answer_without_asking_the_model(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(
        "---\nask_until: 1999\n---\nWhat does an embed show?\n", encoding="utf-8"
    )
    inbox = start()
    text = _answered(inbox, vault, "Q")
    assert "status: no-answer" in text
    assert "Narrowed by this question's options: until `1999`." in text
    assert "No note of your vault falls in “until 1999”" in text
    assert fake_ollama.requests_to("/api/chat") == []


def test_ask_since_keeps_the_notes_of_its_period_and_says_which(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    (vault / "queries/inbox/Q.md").write_text(
        "---\nask_since: 2000-01-01\n---\nWhat does an embed show?\n", encoding="utf-8"
    )
    inbox = start()
    text = _answered(inbox, vault, "Q")
    assert "status: answered" in text
    period = "> [!note] Period\n> Searched the notes of “since 2000-01-01” (since 2000-01-01): "
    assert period in text and " notes fell in it." in text


@pytest.mark.parametrize(
    "frontmatter,notices",
    [
        (
            {
                "tags": ["physics"],
                "tag": "x",
                "aliases": ["a"],
                "language": "en",
                "model": "m",
                "cssclasses": ["wide"],
                "date": "2026-12-01",
                "sources": ["[[A]]"],
                "draft": False,
            },
            [],
        ),
        (
            {"folders": ["folder"]},
            [
                "Narrowed by this question's options: folders `folder`.",
                "`folders:` is read as `ask_folders:`; rename it, the bare name may stop working.",
            ],
        ),
        (
            {"folders": ["nope"], "ask_folders": "folder"},
            [
                "Narrowed by this question's options: folders `folder`.",
                "`folders:` is ignored: `ask_folders:` is set (remove `folders:`).",
            ],
        ),
        (
            {"Ask_Tags": "a", "max_source": 3},
            [
                "Unknown option `Ask_Tags:` is ignored. Did you mean `ask_tags:`?",
                "Unknown option `max_source:` is ignored. Did you mean `ask_max_sources:`?",
            ],
        ),
        (
            {"ask_tags": "#a, b", "ask_model": "llama3.2", "ask_language": "fr"},
            [
                "Narrowed by this question's options: tags `#a`, `#b`; model `llama3.2`; "
                "language `fr`."
            ],
        ),
    ],
    ids=["ordinary_properties", "legacy_name_read", "legacy_and_new_both", "typos", "every_option"],
)
def test_read_question_options_notices(
    vault: Path, frontmatter: dict[str, Any], notices: list[str]
) -> None:
    reading = read_question_options(frontmatter, vault)
    assert reading.errors == [] and reading.notices == notices


def test_the_options_callout_matches_golden(vault: Path) -> None:
    reading = read_question_options({"ask_folders": "folder", "foldr": "x"}, vault)
    text = render_answer_note(
        AnswerNote(
            question="What does the second section explain?",
            status="answering",
            asked="2026-12-01T10:00:00+01:00",
            model="llama3.2",
            embed_model="nomic-embed-text",
            options=tuple(reading.notices),
        )
    )
    path = GOLDEN / "answer_options.md"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text
