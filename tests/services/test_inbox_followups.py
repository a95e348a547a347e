"""Follow-ups written in an answer note: answered below them, in place, once; the user's
bytes never lost or moved; a save during the answer wins."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from askvault.adapters.vault import write_atomic
from askvault.core.followup import find_follow_ups
from askvault.services.inbox import follow_up_turns
from askvault.settings import Settings
from support import inbox_fixtures
from support.fake_ollama import FakeOllama
from support.inbox_driver import InboxDriver

REPLY = "An embed shows another note inline [[Embeds]]."
FOLLOW_REPLY = "Link a block with a caret id [[Embeds]]."
ANSWER = "queries/answers/Embeds.md"


vault, settings, start = inbox_fixtures.vault, inbox_fixtures.settings, inbox_fixtures.start


def _answered(vault: Path, inbox: InboxDriver, fake_ollama: FakeOllama) -> Path:
    """A first question asked and answered; its answer note."""
    fake_ollama.chat_script = [REPLY, FOLLOW_REPLY, FOLLOW_REPLY]
    (vault / "queries/inbox/Embeds.md").write_text("What does an embed show?\n", encoding="utf-8")
    answer = vault / ANSWER
    inbox.run_until(lambda: (vault / "queries/archive/Embeds.md").exists())
    return answer


def _follow_up(answer: Path, question: str) -> None:
    """Type a `## Follow-up` with `question` under it at the end of the answer note."""
    answer.write_bytes(answer.read_bytes() + f"\n## Follow-up\n{question}\n".encode())


def _chats(fake_ollama: FakeOllama) -> list[str]:
    return [json.dumps(body) for body in fake_ollama.requests_to("/api/chat")]


def test_a_follow_up_is_answered_below_it_and_every_user_byte_is_kept(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    inbox = start()
    answer = _answered(vault, inbox, fake_ollama)
    typed = (
        answer.read_bytes()
        + b"\n## Follow-up\nand how do I link a block of it?\n\n## My notes\nmy own line\n"
    )
    answer.write_bytes(typed)
    inbox.notice([ANSWER])
    inbox.run_until(lambda: b"%% askvault: turn 2 %%" in answer.read_bytes())
    text = answer.read_text(encoding="utf-8")
    head, _, rest = text.partition("%% askvault: turn 2 %%")
    # The user's bytes, in order: everything up to the follow-up, then what followed it.
    assert typed.decode().startswith(head.rstrip("\n") + "\n")
    assert rest.rstrip().endswith("my own line")
    assert "caret id" in rest and "### Sources" in rest and "### Citation report" in rest
    assert "[^2-1]: " in rest and "[^1]" not in rest  # turn 2's footnotes are its own
    assert "> follow-up searched as: and how do I link a block of it? (embed show)" in rest
    assert re.search(r"^> the earlier turn's pages, candidates: .*Embeds\.md", rest, re.M)
    assert re.search(r"^> the thread's pages, one to be cited: .*Embeds\.md", rest, re.M)
    (follow_up,) = find_follow_ups(text)
    assert follow_up.answered
    # The model read the follow-up made standalone (the default form).
    assert "Question: and how do I link a block of it? (embed show)" in _chats(fake_ollama)[-1]


def test_a_follow_up_is_answered_once_even_after_a_restart(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    inbox = start()
    answer = _answered(vault, inbox, fake_ollama)
    _follow_up(answer, "and its alias?")
    inbox.run_until(lambda: b"%% askvault: turn 2 %%" in answer.read_bytes())
    chats = len(_chats(fake_ollama))
    after = answer.read_bytes()
    inbox.restart()
    inbox.run_for(5.0)
    assert answer.read_bytes() == after
    assert len(_chats(fake_ollama)) == chats


def test_a_kill_before_the_rename_leaves_the_note_whole_and_the_restart_answers_it(
    vault: Path,
    start: Callable[..., InboxDriver],
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inbox = start()
    answer = _answered(vault, inbox, fake_ollama)
    typed = answer.read_bytes() + b"\n## Follow-up\nand its alias?\n"
    answer.write_bytes(typed)

    def killed(*_: Any, **__: Any) -> bool:
        raise SystemExit("killed before the rename")

    monkeypatch.setattr(follow_up_turns, "write_atomic", killed)
    with pytest.raises(SystemExit):
        inbox.run_until(lambda: False, within_s=5.0)
    assert answer.read_bytes() == typed
    monkeypatch.setattr(follow_up_turns, "write_atomic", write_atomic)
    inbox.restart()
    inbox.run_until(lambda: b"%% askvault: turn 2 %%" in answer.read_bytes())
    assert answer.read_bytes().count(b"%% askvault: turn 2 %%") == 1


def test_a_save_during_the_answer_wins_and_the_follow_up_is_asked_again(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    inbox = start()
    answer = _answered(vault, inbox, fake_ollama)
    _follow_up(answer, "and its alias?")
    saved: list[bytes] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        if not saved:  # the user saves while the model writes
            saved.append(answer.read_bytes() + b"and where is it set?\n")
            answer.write_bytes(saved[0])
        return FOLLOW_REPLY

    fake_ollama.chat_script = reply
    inbox.run_until(lambda: b"%% askvault: turn 2 %%" in answer.read_bytes())
    text = answer.read_bytes()
    assert text.startswith(saved[0].rstrip(b"\n")), "the user's save is kept whole"
    assert text.count(b"%% askvault: turn 2 %%") == 1


def test_an_unfinished_follow_up_waits_for_the_longer_quiet(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama, settings: Settings
) -> None:
    inbox = start(settle_rule=_real_times)
    answer = _answered(vault, inbox, fake_ollama)
    _follow_up(answer, "and its alias")
    inbox.run_for(10.0)
    assert b"%% askvault" not in answer.read_bytes()
    inbox.run_until(lambda: b"%% askvault: turn 2 %%" in answer.read_bytes(), within_s=120)


def _real_times(version: Any, times: Any) -> float:
    """The product's rule with its default times (3 s, 60 s) whatever the settings."""
    from askvault.core.settling import SettleTimes, settle_wait_s

    return settle_wait_s(version, SettleTimes(3.0, 60.0))


def test_a_second_follow_up_is_turn_3_and_carries_the_first_question(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    inbox = start()
    answer = _answered(vault, inbox, fake_ollama)
    _follow_up(answer, "and its alias?")
    inbox.run_until(lambda: b"%% askvault: turn 2 %%" in answer.read_bytes())
    _follow_up(answer, "what about links?")
    inbox.run_until(lambda: b"%% askvault: turn 3 %%" in answer.read_bytes())
    assert [f.answered for f in find_follow_ups(answer.read_text(encoding="utf-8"))] == [
        True,
        True,
    ]


def test_a_note_askvault_did_not_write_is_never_touched(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [REPLY]
    (vault / "queries/answers").mkdir(parents=True, exist_ok=True)
    mine = vault / "queries/answers/Mine.md"
    mine.write_bytes(b"# Mine\n\n## Follow-up\nand this?\n")
    inbox = start()
    inbox.run_for(5.0)
    assert mine.read_bytes() == b"# Mine\n\n## Follow-up\nand this?\n"
    assert _chats(fake_ollama) == []


def test_a_follow_up_while_ollama_is_away_writes_nothing_and_is_answered_later(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    inbox = start()
    answer = _answered(vault, inbox, fake_ollama)
    typed = answer.read_bytes() + b"\n## Follow-up\nand its alias?\n"
    answer.write_bytes(typed)
    fake_ollama.set_fault("down")
    inbox.run_for(5.0)
    assert answer.read_bytes() == typed
    fake_ollama.recover()
    inbox.run_until(lambda: b"%% askvault: turn 2 %%" in answer.read_bytes(), within_s=120)


def test_a_page_a_follow_up_cited_changing_lists_the_note_as_stale(
    vault: Path, start: Callable[..., InboxDriver], fake_ollama: FakeOllama
) -> None:
    from askvault.adapters import meta

    inbox = start()
    answer = _answered(vault, inbox, fake_ollama)
    fake_ollama.chat_script = ["The second section explains fermentation of rye [[Deep Note]]."]
    _follow_up(answer, "and what about the fermentation of rye?")
    inbox.run_until(lambda: b"%% askvault: turn 2 %%" in answer.read_bytes())
    assert "[[Deep Note]]" in answer.read_text(encoding="utf-8").split("turn 2")[1]
    assert meta.stale_answers_edited(inbox.conn) == []
    deep = vault / "folder/Deep Note.md"
    deep.write_text("# Deep Note\n\nRewritten.\n", encoding="utf-8")
    _reindex(inbox)
    inbox.on_notes_changed(["folder/Deep Note.md"], [])
    inbox.run_until(lambda: meta.stale_answers_edited(inbox.conn) == [ANSWER])
    assert b"Stale answer" not in answer.read_bytes(), "the note is the user's: not rewritten"


def _reindex(inbox: InboxDriver) -> None:
    from askvault.app.clients import OllamaClients
    from askvault.services.index.index_pass import index_vault

    index_vault(inbox.settings, OllamaClients(inbox.settings))
