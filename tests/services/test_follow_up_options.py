"""A question's `ask_*` options carried to its follow-ups (issue 23 part 1): the answer note
keeps them as its own `ask_*` properties (a period as the days it was read to be), a
follow-up is answered with them, and the user's change to them, a period the follow-up
names itself, or an option given with the follow-up overrides them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from askvault.core.answer_note import AnswerNote, render_frontmatter
from askvault.core.followup import carried_options
from askvault.core.notes import parse_note
from askvault.records import PeriodScope, QuestionOptions
from askvault.services.inbox.question_options import follow_up_options
from support import inbox_fixtures
from support.fake_ollama import FakeOllama
from support.inbox_driver import InboxDriver

REPLY = "An embed shows another note inline [[Embeds]]."
DEEP = "The second section explains fermentation of rye [[Deep Note]]."
ANSWER = "queries/answers/Embeds.md"
NOW = datetime(2026, 12, 2, 12, 0)


vault, settings, start = inbox_fixtures.vault, inbox_fixtures.settings, inbox_fixtures.start


def _answered(vault: Path, inbox: InboxDriver, question_note: str) -> Path:
    """`question_note` asked as queries/inbox/Embeds.md and answered; its answer note."""
    (vault / "queries/inbox/Embeds.md").write_text(question_note, encoding="utf-8")
    inbox.run_until(lambda: (vault / "queries/archive/Embeds.md").exists())
    return vault / ANSWER


def _follow_up(inbox: InboxDriver, answer: Path, question: str, turn: int = 2) -> str:
    """Type a follow-up at the end of the note and wait for its turn; the turn's text."""
    answer.write_bytes(answer.read_bytes() + f"\n## Follow-up\n{question}\n".encode())
    mark = f"%% askvault: turn {turn} %%"
    inbox.run_until(lambda: mark.encode() in answer.read_bytes())
    return answer.read_text(encoding="utf-8").split(mark, 1)[1]


def _sent_pages(fake: FakeOllama) -> str:
    """The excerpt headers of the last prompt the model got."""
    user = fake.requests_to("/api/chat")[-1]["messages"][1]["content"]
    return "\n".join(line for line in user.splitlines() if line.startswith("Excerpt ["))


# -- what the answer note keeps ----------------------------------------------------------


def test_the_answer_note_keeps_the_options_set_as_ask_properties_and_no_others() -> None:
    options = QuestionOptions(folders=("folder",), tags=("intro",), max_sources=2, language="fr")
    note = AnswerNote(question="q?", status="answered", asked="t", asked_with=options)
    properties = parse_note("a.md", render_frontmatter(note) + "\n").frontmatter
    assert {k: v for k, v in properties.items() if k.startswith("ask_")} == {
        "ask_folders": ["folder"],
        "ask_tags": ["intro"],
        "ask_max_sources": 2,
        "ask_language": "fr",
    }
    plain = render_frontmatter(AnswerNote(question="q?", status="answered", asked="t"))
    assert "ask_" not in plain


def test_a_period_option_is_kept_as_the_days_it_was_read_to_be() -> None:
    words = QuestionOptions(folders=("folder",), since="last week")
    scope = PeriodScope("last week", "2026-11-23", None, 4, "q")
    assert carried_options(words, scope) == QuestionOptions(
        folders=("folder",), since="2026-11-23", until=None
    )
    # No period option: a period the question's words named is the question's, not kept.
    assert carried_options(QuestionOptions(), scope) == QuestionOptions()
    assert carried_options(words, None) == words


def test_follow_up_options_read_only_the_notes_ask_keys_and_let_given_ones_win(
    vault: Path,
) -> None:
    properties = {
        "question": "q?",
        "status": "answered",
        "sources": ["[[Embeds]]"],
        "embed_model": "x",
        "ask_folders": ["folder"],
        "ask_language": "fr",
        "ask_since": "2026-11-23",
        "ask_until": "2026-11-29",
    }
    kept = follow_up_options(properties, "and rye?", vault, now=NOW)
    assert kept.errors == []
    assert kept.options == QuestionOptions(
        folders=("folder",), language="fr", since="2026-11-23", until="2026-11-29"
    )
    assert kept.notices == [
        "Narrowed by this question's options: folders `folder`; language `fr`; since "
        "`2026-11-23`; until `2026-11-29`."
    ]
    given = follow_up_options(
        properties, "and rye?", vault, given=QuestionOptions(folders=("queries",)), now=NOW
    )
    assert given.options.folders == ("queries",) and given.options.language == "fr"


def test_a_period_given_or_named_by_the_follow_up_replaces_the_kept_one_whole(
    vault: Path,
) -> None:
    properties = {"ask_since": "2026-11-23", "ask_until": "2026-11-29"}
    named = follow_up_options(properties, "and what did I write yesterday?", vault, now=NOW)
    assert (named.options.since, named.options.until) == (None, None)
    given = follow_up_options(
        properties, "and rye?", vault, given=QuestionOptions(since="2025"), now=NOW
    )
    assert (given.options.since, given.options.until) == ("2025", None)


def test_an_invalid_option_the_user_wrote_into_the_answer_note_is_an_error(
    vault: Path,
) -> None:
    reading = follow_up_options({"ask_folders": ["nowhere"], "ask_tagz": ["x"]}, "and?", vault)
    assert reading.errors == ["ask_folders: 'nowhere' is not a folder of the vault"]
    assert any("Did you mean `ask_tags:`?" in n for n in reading.notices)


# -- the inbox: carried, overridden, a period -------------------------------------------


def test_a_follow_up_is_answered_with_the_first_questions_folder(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [DEEP, DEEP]
    inbox = start()
    answer = _answered(vault, inbox, "---\nask_folders: [folder]\n---\nWhat is about rye?\n")
    properties = parse_note(ANSWER, answer.read_text(encoding="utf-8")).frontmatter
    assert properties["ask_folders"] == ["folder"]
    turn = _follow_up(inbox, answer, "and what about embeds?")
    # Embeds.md matches the follow-up's words best, but the first question's folder holds.
    pages = _sent_pages(fake_ollama).splitlines()
    assert pages and all("[[Deep Note" in p for p in pages), pages
    assert "> Narrowed by this question's options: folders `folder`." in turn
    assert "> options: Narrowed by this question's options: folders `folder`." in turn


def test_the_users_change_to_the_answer_notes_options_overrides_them(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [DEEP, REPLY]
    inbox = start()
    answer = _answered(vault, inbox, "---\nask_folders: [folder]\n---\nWhat is about rye?\n")
    text = answer.read_text(encoding="utf-8")
    answer.write_text(text.replace('ask_folders:\n  - "folder"\n', ""), encoding="utf-8")
    turn = _follow_up(inbox, answer, "and what about embeds?")
    assert "[[Embeds" in _sent_pages(fake_ollama)
    assert "Question options" not in turn


def test_a_period_option_is_carried_and_a_follow_up_naming_its_own_period_replaces_it(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    inbox = start()
    answer = _answered(
        vault,
        inbox,
        "---\nask_since: 1999-01\nask_until: 1999-12\n---\nWhat does an embed show?\n",
    )
    properties = parse_note(ANSWER, answer.read_text(encoding="utf-8")).frontmatter
    assert (properties["ask_since"], properties["ask_until"]) == ("1999-01-01", "1999-12-31")
    chats = len(fake_ollama.requests_to("/api/chat"))
    # The fixture's notes are all of today: none falls in 1999, so the model is not asked.
    turn = _follow_up(inbox, answer, "and its alias?")
    assert "1999-01-01 to 1999-12-31" in turn and "No note of your vault falls in" in turn
    assert len(fake_ollama.requests_to("/api/chat")) == chats
    fake_ollama.chat_script = [REPLY]
    turn = _follow_up(inbox, answer, "and what did I write about it in the last 3 days?", 3)
    assert "1999" not in turn.split("## Sources")[0]
    assert len(fake_ollama.requests_to("/api/chat")) == chats + 1


def test_a_follow_up_reads_its_period_from_its_own_words_then_its_first_questions(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY, REPLY]
    inbox = start()
    # "how it was yesterday" is no period; the follow-up's search carries "back
    # yesterday" out of that sentence, which must not narrow it to yesterday's notes.
    answer = _answered(vault, inbox, "How do I roll an embed back to how it was yesterday?\n")
    assert "Searched the notes of" not in answer.read_text(encoding="utf-8")
    turn = _follow_up(inbox, answer, "and its alias?")
    assert "Searched the notes of" not in turn and "No note of your vault" not in turn
    assert "[[Embeds" in _sent_pages(fake_ollama)
    # A first question that names a period: its elliptic follow-ups keep it (the fixture's
    # notes are all of today, none of 1999, so the model is not asked).
    (vault / "queries/inbox/Old.md").write_text(
        "What did I write about embeds in 1999?\n", encoding="utf-8"
    )
    inbox.run_until(lambda: (vault / "queries/archive/Old.md").exists())
    old = vault / "queries/answers/Old.md"
    assert "No note of your vault falls in “1999”" in old.read_text(encoding="utf-8")
    chats = len(fake_ollama.requests_to("/api/chat"))
    turn = _follow_up(inbox, old, "and its alias?")
    assert "No note of your vault falls in “1999”" in turn
    assert len(fake_ollama.requests_to("/api/chat")) == chats
    # Its own period replaces the first question's.
    fake_ollama.chat_script = [REPLY]
    turn = _follow_up(inbox, old, "and what did I write about it in the last 3 days?", 3)
    assert "1999" not in turn.split("## Sources")[0]
    assert len(fake_ollama.requests_to("/api/chat")) == chats + 1


def test_an_invalid_option_in_the_answer_note_gives_a_failed_turn_that_says_why(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    inbox = start()
    answer = _answered(vault, inbox, "What does an embed show?\n")
    text = answer.read_text(encoding="utf-8")
    answer.write_text(text.replace("---\n\n", 'ask_folders: ["gone"]\n---\n\n', 1), "utf-8")
    chats = len(fake_ollama.requests_to("/api/chat"))
    turn = _follow_up(inbox, answer, "and its alias?")
    assert "> [!failure] This question could not be answered" in turn
    assert "ask_folders: 'gone' is not a folder of the vault" in turn
    assert len(fake_ollama.requests_to("/api/chat")) == chats
