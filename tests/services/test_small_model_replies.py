"""What small local models really reply, through the whole answer pipeline (real index, the
fake Ollama scripted with those replies), with a golden answer note for each.

Regenerate with `UPDATE_GOLDEN=1 pytest tests/services/test_small_model_replies.py`
and review the diff.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest

from askvault.adapters.db import Connection
from askvault.app.clients import OllamaClients
from askvault.core.answer_note import render_answer_note
from askvault.core.own_question import OWN_QUESTION_SYSTEM_PROMPT
from askvault.core.verification import JUDGE_SYSTEM_PROMPT
from askvault.records import QuestionOptions
from askvault.services.answer import AnswerResult, answer_question
from askvault.settings import Settings
from support.fake_ollama import FakeOllama
from support.vault_factory import make_fixture_vault

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
ASKED = "2025-01-02T10:00:00+00:00"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = make_fixture_vault(tmp_path / "vault")
    (root / "Einbettungen.md").write_text(
        "# Einbettungen\n\nEine Einbettung zeigt eine andere Notiz direkt in der aktuellen "
        "Notiz an.\n",
        encoding="utf-8",
    )
    (root / "Tabs.md").write_text(
        "# Tabs\n\n## Close a tab\n\nTo close the active tab, press Ctrl+W (Cmd+W on macOS)."
        "\n\n## Reopen a closed tab\n\nTo reopen the tab you closed last, press Ctrl+Shift+T "
        "(Cmd+Shift+T on macOS).\n",
        encoding="utf-8",
    )
    (root / "Sidebar.md").write_text(
        "# Sidebar\n\n## Show or hide the sidebar\n\nSelect the sidebar toggle to show or "
        "hide the sidebar.\n",
        encoding="utf-8",
    )
    (root / "Publish security.md").write_text(
        "# Publish security\n\n## Password protection\n\nYou can protect your whole site "
        "with a password. Individual password protection for published notes is currently "
        "not supported.\n",
        encoding="utf-8",
    )
    (root / "Snapshots.md").write_text(
        "# Snapshots\n\nBy default, snapshots are saved a minimum of 5 minutes from each other, "
        "and kept for 7 days.\n",
        encoding="utf-8",
    )
    return root


def _ask(
    conn: Connection,
    settings: Settings,
    question: str,
    options: QuestionOptions | None = None,
) -> AnswerResult:
    embedder = OllamaClients(settings).embedder()
    generator = OllamaClients(settings).generator()
    try:
        return answer_question(
            conn,
            settings,
            question,
            options or QuestionOptions(),
            embedder=embedder,
            generator=generator,
            asked=ASKED,
        )
    finally:
        generator.close()
        embedder.close()


def _assert_golden(name: str, result: AnswerResult) -> str:
    text = render_answer_note(result.note)
    text = re.sub(r'^answered: ".*"$', 'answered: "<time>"', text, flags=re.MULTILINE)
    text = re.sub(r'^index_as_of: ".*"$', 'index_as_of: "<time>"', text, flags=re.MULTILINE)
    text = re.sub(r"^> time: .*$", "> time: <stages>", text, flags=re.MULTILINE)
    path = GOLDEN / f"small_model_{name}.md"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text
    return text


def _number_of(page: str) -> Any:
    """A scripted reply that cites `page` by its excerpt number, as small models do."""

    def reply(messages: list[dict[str, Any]]) -> str:
        user = messages[-1]["content"]
        number = re.search(r"Excerpt \[(\d+)\] from \[\[" + re.escape(page), user)
        assert number, f"{page} was not among the excerpts"
        return f"Snapshots are saved every 5 minutes and kept for 7 days. [{number.group(1)}]"

    return reply


def test_reply_without_any_link_gets_the_link_of_the_excerpt_that_supports_it(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [
        "Snapshots are saved a minimum of 5 minutes from each other and kept for 7 days."
    ]
    result = _ask(conn, settings, "How often are snapshots saved and how long are they kept?")
    text = _assert_golden("no_links", result)
    assert result.status == "answered"
    assert "kept for 7 days. [[Snapshots]]" in result.answer
    assert "link added by askvault" in text
    assert 'sources:\n  - "[[Snapshots]]"' in text


def test_numbered_citation_becomes_the_excerpt_s_wikilink(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _number_of("Snapshots")
    result = _ask(conn, settings, "How often are snapshots saved and how long are they kept?")
    assert result.status == "answered"
    assert result.answer == (
        "Snapshots are saved every 5 minutes and kept for 7 days. [[Snapshots]][^1]"
    )
    (citation,) = result.report.citations
    assert not citation.added and citation.support == "supported"


def test_wrong_refusal_is_a_no_answer_that_shows_the_closest_passages(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = ["The notes do not contain the answer."]
    result = _ask(conn, settings, "How long are snapshots kept?")
    text = _assert_golden("wrong_refusal", result)
    assert result.status == "no-answer"
    assert "## Closest passages found (not an answer)" in text and "kept for 7 days" in text


def test_invented_fact_with_an_invented_link_is_never_published_as_an_answer(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [
        "The Wi-Fi password of my home network is [[Home Network]]: 192.168.178.1."
    ]
    result = _ask(conn, settings, "What is the Wi-Fi password of my home network?")
    text = _assert_golden("invented_link", result)
    assert result.status == "no-answer"
    assert "[[Home Network]]" not in text.split("## Citation report")[0]
    assert "The model's unverified reply" in text and "⚠️" in text


def test_paraphrased_refusal_is_recognised(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [
        "I couldn't find any information about the capital of Mars in the provided notes."
    ]
    result = _ask(conn, settings, "What is the capital of Mars?")
    _assert_golden("paraphrased_refusal", result)
    assert result.status == "no-answer" and result.report.refusals == 1


def test_links_after_the_full_stop_credit_the_sentence_they_follow(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [
        "An embed shows another note inline. [[Embeds]] Snapshots are kept for 7 days. "
        "[[Snapshots]]"
    ]
    result = _ask(conn, settings, "What does an embed show and how long are snapshots kept?")
    text = _assert_golden("link_after_full_stop", result)
    by_target = {c.target: [s.sentence for s in c.supports] for c in result.report.citations}
    assert by_target["Embeds"] == ["An embed shows another note inline."]
    assert by_target["Snapshots"] == ["Snapshots are kept for 7 days."]
    assert result.status == "answered" and "⚠️" not in result.answer
    assert "2 of 2 supported" in text


def test_answer_in_the_notes_language_is_checked_like_any_other(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [
        "Eine Einbettung zeigt eine andere Notiz direkt in der aktuellen Notiz an. [[Einbettungen]]"
    ]
    result = _ask(conn, settings, "Was zeigt eine Einbettung?")
    _assert_golden("other_language", result)
    assert result.status == "answered" and result.report.supported_claims == 1


def test_refusal_in_the_question_s_language_is_a_no_answer(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = ["Die Notizen enthalten keine Antwort auf diese Frage."]
    result = _ask(conn, settings, "Wie hoch ist der Mount Everest?")
    assert result.status == "no-answer" and result.report.refusals == 1


def test_half_supported_answer_is_published_with_the_rest_flagged(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [
        "Snapshots are kept for 7 days [[Snapshots]]. They are also uploaded to a cloud server "
        "every night [[Snapshots]]."
    ]
    result = _ask(conn, settings, "How long are snapshots kept?")
    text = _assert_golden("half_supported", result)
    assert result.status == "answered"
    assert "⚠️ They are also uploaded to a cloud server every night." in result.answer
    assert "> [!warning] Not found in your notes" in text
    assert "citations_unsupported: 0" in text  # the link backs its other sentence


def test_an_answer_most_of_whose_sentences_are_not_in_the_notes_is_withheld(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    """One sentence found, two not: the reply is shown with its markers, and the note says
    how many of its sentences the notes hold (decision: mostly-unsupported)."""
    fake_ollama.chat_script = [
        "Snapshots are kept for 7 days [[Snapshots]]. They are also uploaded to a cloud server "
        "every night [[Snapshots]]. You can restore them from the web dashboard."
    ]
    result = _ask(conn, settings, "How long are snapshots kept?")
    text = _assert_golden("mostly_unsupported", result)
    assert result.status == "no-answer" and result.decided_by == "mostly-unsupported"
    assert "only 1 of its 3 sentences is" in text
    assert "[[Snapshots]]" not in result.answer  # withheld for a reason: its links as text


def test_trace_names_prompt_tokens_and_the_time_of_each_stage(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = ["Snapshots are kept for 7 days [[Snapshots]]."]
    result = _ask(conn, settings, "How long are snapshots kept?")
    trace = "\n".join(result.note.trace)
    assert re.search(r"prompt ~\d+ tokens \(10 counted by the model\)", trace)
    assert set(result.timings) == {"retrieval_s", "prompt_eval_s", "generation_s", "checks_s"}
    chat = fake_ollama.requests_to("/api/chat")[-1]
    assert chat["options"]["temperature"] == settings.ollama.temperature
    assert chat["options"]["num_predict"] == settings.ollama.num_predict
    assert result.prompt_tokens <= settings.queries.excerpt_tokens + 300


def test_supported_reply_to_a_question_far_from_every_note_is_not_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    """A near miss: the model quotes a real sentence for a question the vault is not about.
    Retrieval's own distance says nothing is close, so it ends as a no-answer, unlinked."""
    fake_ollama.chat_script = ["Snapshots are kept for 7 days [[Snapshots]]."]
    near = dataclasses.replace(settings.queries, max_distance=0.3)
    result = _ask(
        conn,
        dataclasses.replace(settings, queries=near),
        "How long are snapshots kept on the kanban board lane?",
    )
    text = _assert_golden("far_from_every_note", result)
    assert result.report.supported_claims == 1  # the sentence itself is in the notes
    assert result.status == "no-answer"
    assert "Nothing in your notes is close to the question" in text
    reply_part = text.split("## Closest passages found")[0]
    assert "[[Snapshots]]" not in reply_part  # the unpublished reply adds no graph edge
    assert "sources: []" in text and result.cited_paths == []


def test_reply_about_a_subject_no_note_mentions_is_not_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    """A near miss the distance cannot see: the question names a plugin the vault never
    mentions, and the model answers with a real sentence of the notes. The reply names the
    question's subject, no note does: a no-answer that says so, unlinked."""
    fake_ollama.chat_script = [
        "The Excalidraw plugin keeps its drawings like snapshots. "
        "Snapshots are kept for 7 days [[Snapshots]]."
    ]
    result = _ask(conn, settings, "how long does the excalidraw plugin keep snapshots of drawings?")
    text = _assert_golden("unknown_subject", result)
    assert result.report.supported_claims == 1  # the copied sentence is in the notes
    assert result.status == "no-answer"
    assert "no note mentions “Excalidraw”" in text
    reply_part = text.split("## Closest passages found")[0]
    assert "[[Snapshots]]" not in reply_part
    assert "sources: []" in text and result.cited_paths == []


def test_a_subject_some_note_mentions_is_answered_with_its_claim_flagged(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    """ "Windows" is in the vault (the CRLF note) but not among the excerpts (one page is
    sent): the notes know the subject, so the reply is published, its unchecked claim
    flagged."""
    fake_ollama.chat_script = [
        "Snapshots are kept for 7 days [[Snapshots]]. The same holds on Windows laptops."
    ]
    result = _ask(
        conn, settings, "how long are snapshots kept on windows?", QuestionOptions(max_sources=1)
    )
    assert [e.path for e in result.excerpts] == ["Snapshots.md"]
    assert result.status == "answered" and not result.reason
    assert [c.verdict for c in result.report.claims] == ["supported", "unsupported"]
    assert "⚠️ The same holds on Windows laptops." in result.answer


def test_a_name_of_the_question_the_excerpts_mention_is_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = ["By default, Snapshots are kept for 7 days [[Snapshots]]."]
    result = _ask(conn, settings, "how long are snapshots kept?")
    assert result.status == "answered" and not result.reason


def test_same_reply_to_a_close_question_is_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = ["Snapshots are kept for 7 days [[Snapshots]]."]
    near = dataclasses.replace(settings.queries, max_distance=0.9)
    result = _ask(conn, dataclasses.replace(settings, queries=near), "How long are snapshots kept?")
    assert result.status == "answered" and not result.reason


def test_no_distance_cut_off_for_an_embedding_model_never_measured(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    """The default (0) applies only a measured cut-off; the suite's model has none."""
    fake_ollama.chat_script = ["Snapshots are kept for 7 days [[Snapshots]]."]
    assert settings.queries.max_distance == 0
    result = _ask(conn, settings, "How long are snapshots kept on the kanban board lane?")
    assert result.status == "answered"
    assert any(t.startswith("nearest passage at cosine distance") for t in result.note.trace)


def test_sources_name_a_page_by_its_path_when_another_note_has_its_name(
    vault: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    """`## Sources`, `sources:` and the supporting pages write the link search wrote:
    `[[Archive/Snapshots]]` when two notes are called Snapshots (it was `[[Snapshots]]` in
    `## Sources`, which Obsidian may resolve to the other note)."""
    from askvault.adapters.db import connect
    from askvault.services.index.index_pass import index_vault
    from support.settings_factory import settings_for

    (vault / "Archive").mkdir()
    (vault / "Archive" / "Snapshots.md").write_text(
        "# Snapshots\n\nOld snapshots were kept for 3 days.\n", encoding="utf-8"
    )
    settings = settings_for(vault, tmp_path / "state2", fake_ollama.url)
    index_vault(settings, OllamaClients(settings))
    fake_ollama.chat_script = ["Old snapshots were kept for 3 days [[Archive/Snapshots]]."]
    conn = connect(settings.db_path)
    try:
        result = _ask(conn, settings, "How long were old snapshots kept?")
    finally:
        conn.close()
    text = render_answer_note(result.note)
    assert result.status == "answered"
    assert 'sources:\n  - "[[Archive/Snapshots]]"' in text
    sources = text.split("## Sources")[1].split("##")[0]
    assert "[[Archive/Snapshots]]" in sources and "[[Snapshots]]" not in sources


def _excerpt_number(messages: list[dict[str, Any]], link: str) -> str:
    found = re.search(r"Excerpt \[(\d+)\] from " + re.escape(link), messages[-1]["content"])
    assert found, f"{link} was not among the excerpts"
    return found.group(1)


def test_a_link_that_backs_nothing_leaves_no_bare_page_and_heading_in_the_text(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [
        "To close the active tab, press Ctrl+W [[Sidebar#Show or hide the sidebar]] "
        "[[Tabs#Close a tab]]."
    ]
    result = _ask(conn, settings, "how do i close the tab i am in")
    text = _assert_golden("unsupported_link_beside_a_supported_one", result)
    assert result.status == "answered"
    assert result.answer == "To close the active tab, press Ctrl+W [[Tabs#Close a tab]][^1]."
    assert "Sidebar" not in text.split("### Supporting pages")[0].split("[!question]")[1]
    assert "[^1]: “To close the active tab, press Ctrl+W (Cmd+W on macOS).”" in text


def test_the_same_link_twice_in_a_row_is_published_once(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    def reply(messages: list[dict[str, Any]]) -> str:
        n = _excerpt_number(messages, "[[Tabs#Reopen a closed tab]]")
        return f"To reopen the tab you closed last, press Ctrl+Shift+T [[Tabs#Reopen a closed tab]] [{n}]."

    fake_ollama.chat_script = reply
    result = _ask(conn, settings, "i closed a tab by mistake, how do i get it back")
    _assert_golden("same_link_twice", result)
    assert result.answer.count("[[Tabs#Reopen a closed tab]]") == 1
    assert result.answer.endswith("Ctrl+Shift+T [[Tabs#Reopen a closed tab]][^1].")


def test_a_reply_that_parrots_the_prompt_s_list_is_published_once_without_the_echoes(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [
        "The setting is Ctrl+Shift+T. The key is Ctrl+Shift+T. The step is Ctrl+Shift+T. "
        "The name or number the excerpts give is Ctrl+Shift+T."
    ]
    result = _ask(conn, settings, "i closed a tab by mistake, how do i get it back")
    text = _assert_golden("prompt_echo", result)
    assert result.status == "answered"
    assert result.answer.startswith("The setting is Ctrl+Shift+T.")
    assert "The key is" not in text and "the excerpts give" not in text
    assert len(result.report.repeats) == 3 and len(result.report.claims) == 1


def test_a_marker_opens_the_sentence_it_flags(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = [
        "To reopen the tab you closed last, press Ctrl+Shift+T [[Tabs#Reopen a closed tab]]. "
        "You can also reopen it from the tab menu [[Tabs#Reopen a closed tab]]."
    ]
    result = _ask(conn, settings, "i closed a tab by mistake, how do i get it back")
    _assert_golden("flag_opens_its_sentence", result)
    first, second = result.answer.split(". ", 1)
    assert "⚠️" not in first and second.startswith("⚠️ You can also reopen it")
    # The link stays after the claim it backs, and goes from the one it does not.
    assert second == "⚠️ You can also reopen it from the tab menu."


def _verifying(settings: Settings, mode: str) -> Settings:
    """`settings` with `queries.verify = mode` (judge, again)."""
    return dataclasses.replace(settings, queries=dataclasses.replace(settings.queries, verify=mode))


def _judging(verdict: str, answer: str) -> Any:
    """A scripted model: `answer` to the question, `verdict` to askvault's check of it."""

    def reply(messages: list[dict[str, Any]]) -> str:
        if messages[0]["content"] == JUDGE_SYSTEM_PROMPT:
            return verdict
        return answer

    return reply


def test_an_answer_judged_wrong_for_the_question_is_not_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    # The right page, the wrong line: Ctrl+W is on the page, but it closes a tab.
    fake_ollama.chat_script = _judging(
        '{"verdict": "no"}', "To close the active tab, press Ctrl+W [[Tabs#Close a tab]]."
    )
    judging = _verifying(settings, "judge")
    result = _ask(conn, judging, "i closed a tab by mistake, how do i get it back")
    text = _assert_golden("judged_wrong", result)
    assert result.status == "no-answer" and result.report.supported_claims == 1
    assert "do not answer the question as asked" in text
    judge = fake_ollama.requests_to("/api/chat")[-1]
    assert judge["format"]["properties"]["verdict"]["enum"] == ["yes", "no"]
    assert judge["options"]["num_predict"] <= 16
    assert (
        "> To close the active tab, press Ctrl+W (Cmd+W on macOS)."
        in (judge["messages"][1]["content"])
    )


def test_an_answer_judged_right_is_published_as_the_lexical_check_says(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _judging(
        '{"verdict": "yes"}',
        "To reopen the tab you closed last, press Ctrl+Shift+T [[Tabs#Reopen a closed tab]].",
    )
    judging = _verifying(settings, "judge")
    result = _ask(conn, judging, "i closed a tab by mistake, how do i get it back")
    assert result.status == "answered" and result.verification.judged.verdict == "yes"
    assert "verify_s" in result.timings


def test_a_reply_with_nothing_to_judge_asks_no_verdict(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _judging('{"verdict": "yes"}', "The notes do not say.")
    judging = _verifying(settings, "judge")
    result = _ask(conn, judging, "What is the capital of Mars?")
    assert result.status == "no-answer" and result.verification.judged is None
    assert len(fake_ollama.requests_to("/api/chat")) == 1


def test_an_unreadable_verdict_leaves_the_lexical_decision(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _judging(
        "I am not sure.",
        "To reopen the tab you closed last, press Ctrl+Shift+T [[Tabs#Reopen a closed tab]].",
    )
    judging = _verifying(settings, "judge")
    result = _ask(conn, judging, "i closed a tab by mistake, how do i get it back")
    assert result.status == "answered" and result.verification.judged.verdict is None


def test_a_yes_that_the_note_refuses_is_a_no_answer_quoting_the_note(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    # What Qwen2.5-Coder-1.5B replied: the question's words, a yes, and a real link.
    fake_ollama.chat_script = [
        "Yes, you can put a password on just one published note "
        "[[Publish security#Password protection]]."
    ]
    result = _ask(conn, settings, "can i put a password on just one published note?")
    text = _assert_golden("yes_the_note_refuses", result)
    assert result.status == "no-answer" and result.decided_by == "reversed"
    assert "is currently not supported" in text
    assert "[[Publish security#Password protection]]." not in result.note.answer


def test_a_no_that_the_note_backs_in_other_words_is_published_with_its_quote(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = ["No, a single published note cannot have its own password."]
    result = _ask(conn, settings, "can i put a password on just one published note?")
    _assert_golden("no_the_note_backs", result)
    assert result.status == "answered"
    (first,) = result.report.claims
    assert first.quote == (
        "Individual password protection for published notes is currently not supported."
    )


def test_a_desktop_shortcut_for_a_phone_question_is_a_no_answer(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    # What Qwen2.5-Coder-1.5B replied to "on android ... how do i bring up the quick
    # switcher": the desktop chord, word for word from the page.
    fake_ollama.chat_script = [
        "To close the active tab, press Ctrl+W (Cmd+W on macOS) [[Tabs#Close a tab]]."
    ]
    result = _ask(conn, settings, "on my android phone, how do i close the tab i'm in?")
    text = _assert_golden("desktop_key_for_a_phone", result)
    assert result.status == "no-answer" and result.decided_by == "nothing-supported"
    (claim,) = result.report.claims
    assert claim.verdict == "unsupported" and "mobile" in claim.reason
    assert "[[Tabs#Close a tab]]" not in result.note.answer
    assert "⚠️" in text


def _asked_twice(first: str, second: str) -> Any:
    """A scripted model: `first` to the question, `second` when asked again."""
    replies = iter([first, second])

    def reply(messages: list[dict[str, Any]]) -> str:
        return next(replies)

    return reply


def test_asked_again_an_answer_from_the_same_sentence_is_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _asked_twice(
        "To reopen the tab you closed last, press Ctrl+Shift+T.",
        "Press Ctrl+Shift+T to reopen the tab you closed last.",
    )
    result = _ask(
        conn, _verifying(settings, "again"), "i closed a tab by mistake, how do i get it back"
    )
    assert result.status == "answered" and result.decided_by == "supported"
    first, second = fake_ollama.requests_to("/api/chat")
    # The same question, the excerpts in the other order.
    assert first["messages"][0] == second["messages"][0]
    assert first["messages"][1]["content"] != second["messages"][1]["content"]
    assert "verify_s" in result.timings


def test_asked_again_an_answer_from_another_line_is_withheld(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _asked_twice(
        "To reopen the tab you closed last, press Ctrl+Shift+T.",
        "To close the active tab, press Ctrl+W.",
    )
    result = _ask(
        conn, _verifying(settings, "again"), "i closed a tab by mistake, how do i get it back"
    )
    assert result.status == "no-answer" and result.decided_by == "unsteady"
    assert "in another order" in result.reason


def test_asked_again_when_the_second_request_fails_the_first_reply_stands(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _asked_twice(
        "To reopen the tab you closed last, press Ctrl+Shift+T.", "unused"
    )
    fake_ollama.set_fault("500", paths=("/api/chat",), after=1)  # the second one fails
    result = _ask(
        conn, _verifying(settings, "again"), "i closed a tab by mistake, how do i get it back"
    )
    assert result.status == "answered" and result.decided_by == "supported"


@pytest.mark.parametrize("mode", ["again", "doubtful"])
def test_a_reply_nothing_supports_is_not_asked_again(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama, mode: str
) -> None:
    fake_ollama.chat_script = _asked_twice("The Wi-Fi password is hunter2.", "unused")
    result = _ask(conn, _verifying(settings, mode), "what is my wifi password?")
    assert result.status == "no-answer"
    assert len(fake_ollama.requests_to("/api/chat")) == 1


# One sentence found in the notes, one not: what `doubtful` asks again.
PARTLY_BACKED = (
    "To reopen the tab you closed last, press Ctrl+Shift+T. "
    "Closed tabs are also kept in the trash folder for a month."
)


def test_doubtful_a_reply_the_notes_back_in_full_is_asked_once(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _asked_twice(
        "To reopen the tab you closed last, press Ctrl+Shift+T.", "To close a tab, press Ctrl+W."
    )
    doubtful = _verifying(settings, "doubtful")
    result = _ask(conn, doubtful, "i closed a tab by mistake, how do i get it back")
    assert result.status == "answered" and result.decided_by == "supported"
    assert len(fake_ollama.requests_to("/api/chat")) == 1
    assert "verify_s" not in result.timings


def test_doubtful_a_reply_backed_in_part_is_asked_again_and_withheld_when_unsteady(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    # One sentence found in the notes, one not: asked again, and the second reply rests
    # on another line of the page.
    fake_ollama.chat_script = _asked_twice(PARTLY_BACKED, "To close the active tab, press Ctrl+W.")
    doubtful = _verifying(settings, "doubtful")
    result = _ask(conn, doubtful, "i closed a tab by mistake, how do i get it back")
    assert result.report.supported_claims == 1 and len(result.report.claims) == 2
    assert result.status == "no-answer" and result.decided_by == "unsteady"
    assert len(fake_ollama.requests_to("/api/chat")) == 2


def test_doubtful_a_reply_backed_in_part_and_steady_is_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _asked_twice(
        PARTLY_BACKED, "Press Ctrl+Shift+T to reopen the tab you closed last."
    )
    doubtful = _verifying(settings, "doubtful")
    result = _ask(conn, doubtful, "i closed a tab by mistake, how do i get it back")
    assert result.status == "answered" and "verify_s" in result.timings


def _cited_on_its_own_line(messages: list[dict[str, Any]]) -> str:
    """Two sentences, then the excerpt's number alone on a line, as the 1.5B model ends a
    reply ("...lines of text.\\n\\nExcerpt [2]")."""
    user = messages[-1]["content"]
    number = re.search(r"Excerpt \[(\d+)\] from \[\[Snapshots", user)
    assert number, "Snapshots was not among the excerpts"
    return (
        "Snapshots are saved a minimum of 5 minutes from each other. They are kept for 7 days."
        f"\n\nExcerpt [{number.group(1)}]"
    )


def test_a_citation_on_a_line_of_its_own_cites_the_sentence_before_it_once(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _cited_on_its_own_line
    result = _ask(conn, settings, "How often are snapshots saved and how long are they kept?")
    _assert_golden("citation_on_its_own_line", result)
    assert result.status == "answered"
    # Not a line of its own read as a claim ("Snapshots [[Snapshots]][^1]
    # [[Snapshots]][^1]", the link as a word and every claim's marks there): each
    # sentence is followed by its own link and footnote.
    assert result.answer == (
        "Snapshots are saved a minimum of 5 minutes from each other. [[Snapshots]][^1] "
        "They are kept for 7 days. [[Snapshots]][^1]"
    )


def test_a_copied_excerpt_header_cites_the_quote_under_it(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    def reply(messages: list[dict[str, Any]]) -> str:
        number = re.search(r"Excerpt \[(\d+)\] from \[\[Snapshots", messages[-1]["content"])
        assert number
        return (
            "Snapshots are kept for 7 days.\n\n"
            f"Excerpt [{number.group(1)}] from [[Snapshots]]:\n"
            "> By default, snapshots are saved a minimum of 5 minutes from each other."
        )

    fake_ollama.chat_script = reply
    result = _ask(conn, settings, "How often are snapshots saved and how long are they kept?")
    _assert_golden("copied_excerpt_header", result)
    assert result.status == "answered"
    assert "Excerpt" not in result.answer and "Snapshots:" not in result.answer
    assert result.answer.endswith("from each other. [[Snapshots]][^1]")


def test_a_sentence_that_only_points_at_an_excerpt_leaves_no_link_twice_and_no_flag(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    """ "... port 443. This is mentioned in Excerpt [1]." was published as the sentence,
    its link, then "This is mentioned in [[Page]]" (the link twice in a row, the second a
    claim flagged ⚠️); "Excerpt [1], excerpt [2], ..." under an answer as "[[Page]],,,,,,"
    (Qwen2.5-Coder-1.5B, the sixth fresh set)."""

    def reply(messages: list[dict[str, Any]]) -> str:
        number = re.search(r"Excerpt \[(\d+)\] from \[\[Snapshots", messages[-1]["content"])
        assert number
        n = number.group(1)
        return (
            f"Snapshots are saved a minimum of 5 minutes from each other. This is mentioned "
            f"in Excerpt [{n}]. They are kept for 7 days.\n\nExcerpt [{n}], excerpt [{n}]"
        )

    fake_ollama.chat_script = reply
    result = _ask(conn, settings, "How often are snapshots saved and how long are they kept?")
    _assert_golden("pointer_sentence", result)
    assert result.status == "answered"
    assert result.answer == (
        "Snapshots are saved a minimum of 5 minutes from each other. [[Snapshots]][^1] "
        "They are kept for 7 days. [[Snapshots]][^1]"
    )
    assert "mentioned" not in result.answer and "⚠️" not in result.answer
    assert len(result.report.claims) == 2


# -- the question the answer answers (core/own_question.py) ---------------------------------


def _own_question_at(settings: Settings, cut: float, *, on: bool = True) -> Settings:
    """`settings` with the own-question check on (or off) at cut-off `cut` (the fake's
    embedding model has no measured one)."""
    queries = dataclasses.replace(settings.queries, own_question=on, min_own_question_cosine=cut)
    return dataclasses.replace(settings, queries=queries)


def _own_question_model(answer: str, own: str) -> Any:
    """A scripted model: `answer` to the question, `own` when asked which question the
    answer answers."""

    def reply(messages: list[dict[str, Any]]) -> str:
        if messages[0]["content"] == OWN_QUESTION_SYSTEM_PROMPT:
            return own
        return answer

    return reply


TAB_QUESTION = "i closed a tab by mistake, how do i get it back"
CLOSE_REPLY = "To close the active tab, press Ctrl+W [[Tabs#Close a tab]]."
# At cosine 0.16 from TAB_QUESTION by the fake's embeddings (the same question: 1.0).
CLOSE_QUESTION = "What closes the active tab in Obsidian?"


def test_a_reply_that_answers_another_question_is_not_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    # The right page, the wrong line: every word of the reply is in the note, and the
    # question it answers is another one.
    fake_ollama.chat_script = _own_question_model(CLOSE_REPLY, CLOSE_QUESTION)
    result = _ask(conn, _own_question_at(settings, 0.5), TAB_QUESTION)
    text = _assert_golden("another_question", result)
    assert result.status == "no-answer" and result.decided_by == "another-question"
    assert result.report.supported_claims == 1  # the lexical check alone published it
    assert "“What closes the active tab in Obsidian?”, not to the one asked" in text
    assert result.own_question.cosine is not None and result.own_question.cosine < 0.5
    asked = fake_ollama.requests_to("/api/chat")[-1]
    assert "format" not in asked or not asked["format"]  # plain text: no grammar to wait for
    assert asked["options"]["num_predict"] <= 60
    # The answer alone: not the user's question, not the excerpts, no link syntax.
    content = asked["messages"][1]["content"]
    assert "To close the active tab, press Ctrl+W" in content
    assert TAB_QUESTION not in content and "[[" not in content and "Excerpt" not in content
    assert fake_ollama.embedded_inputs[-2:] == [
        TAB_QUESTION,
        "What closes the active tab in Obsidian?",
    ]


def _follow_up(settings: Settings, conn: Connection, follow_up: str, earlier: list[str]) -> Any:
    from askvault.services.answer import answer_follow_up

    embedder = OllamaClients(settings).embedder()
    generator = OllamaClients(settings).generator()
    try:
        return answer_follow_up(
            conn,
            settings,
            follow_up,
            earlier,
            embedder=embedder,
            generator=generator,
            asked=ASKED,
        ).result
    finally:
        generator.close()
        embedder.close()


REOPEN_FIRST = "How do I reopen a closed tab?"
CLOSE_ASKED = "and close one? (reopen closed tab)"  # "and close one?" made standalone
CLOSE_OWN = "And close one?"
REOPEN_REPLY = "To reopen the tab you closed last, press Ctrl+Shift+T [[Tabs#Reopen a closed tab]]."


def test_a_follow_ups_reply_that_answers_the_earlier_question_again_is_not_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    # "and close one?" after "How do I reopen a closed tab?": the reply is the first turn's
    # answer again, backed word for word by the note, and the model's own question for it
    # is the first question (cosine 1.0 from it, less from the follow-up asked).
    fake_ollama.chat_script = _own_question_model(REOPEN_REPLY, REOPEN_FIRST)
    result = _follow_up(_own_question_at(settings, 0.01), conn, "and close one?", [REOPEN_FIRST])
    assert result.question == CLOSE_ASKED
    assert result.report.supported_claims == 1  # the lexical check alone published it
    assert result.status == "no-answer" and result.decided_by == "earlier-question"
    assert "not to the follow-up" in _assert_golden("earlier_question", result)
    own = result.own_question
    assert own.earlier_cosine == pytest.approx(1.0, abs=0.01)
    assert own.cosine is not None and own.cutoff is not None
    assert own.cutoff <= own.cosine < own.earlier_cosine  # near enough, but nearer the first
    assert result.reason == (
        "The reply reads as the answer to an earlier question of this note, “How do I reopen "
        "a closed tab?”, not to the follow-up, so it is not published as an answer."
    )
    # One embedding request for the user's question, the model's and the earlier one.
    assert fake_ollama.embedded_inputs[-3:] == [CLOSE_ASKED, REOPEN_FIRST, REOPEN_FIRST]


def test_a_follow_ups_reply_nearer_the_follow_up_than_any_earlier_question_is_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _own_question_model(CLOSE_REPLY, CLOSE_OWN)
    earlier = [REOPEN_FIRST, "  ", "and on macOS?"]  # a blank earlier question is left out
    result = _follow_up(_own_question_at(settings, 0.01), conn, "and close one?", earlier)
    assert result.status == "answered" and result.decided_by == "supported"
    own = result.own_question
    assert own.cosine is not None and own.earlier_cosine is not None
    assert own.earlier_cosine < own.cosine, (own.earlier_cosine, own.cosine)
    assert fake_ollama.embedded_inputs[-4:] == [
        CLOSE_ASKED,
        CLOSE_OWN,
        REOPEN_FIRST,
        "and on macOS?",
    ]


@pytest.mark.parametrize(
    ("cosine", "earlier", "answers_earlier"),
    [
        (0.5, 0.6, True),
        (0.6, 0.6, False),
        (0.6, 0.5, False),
        (None, 0.9, False),
        (0.5, None, False),
    ],
)
def test_answers_earlier_only_when_an_earlier_question_is_strictly_nearer(
    cosine: float | None, earlier: float | None, answers_earlier: bool
) -> None:
    from askvault.services.answer.own_question import OwnQuestion

    own = OwnQuestion("Q?", cosine, 0.3, earlier_cosine=earlier)
    assert own.answers_earlier is answers_earlier


def test_a_reply_that_answers_the_question_asked_is_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _own_question_model(
        "To reopen the tab you closed last, press Ctrl+Shift+T [[Tabs#Reopen a closed tab]].",
        "I closed a tab by mistake, how do I get it back?",
    )
    result = _ask(conn, _own_question_at(settings, 0.5), TAB_QUESTION)
    assert result.status == "answered" and result.decided_by == "supported"
    assert result.own_question.cosine == pytest.approx(1.0, abs=0.01)
    assert result.own_question.earlier_cosine is None  # a first question: no thread
    assert "own_question_s" in result.timings


@pytest.mark.parametrize(
    "own",
    [
        "You reopen it with Ctrl+Shift+T.",  # an answer, not a question
        "",
        "Why " + "x" * 400 + "?",
    ],
)
def test_an_unreadable_own_question_leaves_the_lexical_decision(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama, own: str
) -> None:
    fake_ollama.chat_script = _own_question_model(CLOSE_REPLY, own)
    result = _ask(conn, _own_question_at(settings, 0.5), TAB_QUESTION)
    assert result.status == "answered" and result.own_question.question is None
    assert result.own_question.error


def test_the_own_question_is_not_asked_when_off_or_not_measured_or_not_published(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    answer, own = CLOSE_REPLY, CLOSE_QUESTION
    for checked in (
        _own_question_at(settings, 0.5, on=False),  # off
        _own_question_at(settings, 0.0),  # the fake's embedding model has no cut-off
    ):
        fake_ollama.chat_script = _own_question_model(answer, own)
        before = len(fake_ollama.requests_to("/api/chat"))
        result = _ask(conn, checked, TAB_QUESTION)
        assert result.status == "answered" and result.own_question.question is None
        assert len(fake_ollama.requests_to("/api/chat")) == before + 1
    # A reply withheld anyway is not asked about.
    fake_ollama.chat_script = _own_question_model("The notes do not say.", own)
    before = len(fake_ollama.requests_to("/api/chat"))
    result = _ask(conn, _own_question_at(settings, 0.5), "What is the capital of Mars?")
    assert result.status == "no-answer" and result.decided_by == "refusal"
    assert len(fake_ollama.requests_to("/api/chat")) == before + 1


def test_a_model_that_fails_on_the_own_question_leaves_the_lexical_decision(
    conn: Connection, settings: Settings, fake_ollama: FakeOllama
) -> None:
    fake_ollama.chat_script = _own_question_model(CLOSE_REPLY, CLOSE_QUESTION)
    fake_ollama.set_fault("500", paths=("/api/chat",), after=1)  # the second request fails
    result = _ask(conn, _own_question_at(settings, 0.5), TAB_QUESTION)
    assert result.status == "answered" and result.own_question.question is None
    assert result.own_question.error
