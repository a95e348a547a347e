"""The answer benchmark's question sets are well formed and true to the Help vault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETS = [
    ROOT / "bench" / "data" / n
    for n in (
        "answer_questions.json",
        "answer_questions_holdout.json",
        "answer_questions_fresh.json",
        "answer_questions_fresh2.json",
        "answer_questions_fresh3.json",
        "answer_questions_fresh4.json",
        "answer_questions_fresh5.json",
        "answer_questions_fresh6.json",
        "answer_questions_fresh7.json",
    )
]
REQUIRED = {"id", "question", "answerable", "expected", "facts"}
# The fresh set (written for issue 21 without sight of the others) adds what a reader needs.
OPTIONAL = {"reference", "quote", "kind"}
HELP_VAULT = ROOT.parent / "shared" / "data" / "vaults" / "obsidian-help-en"


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_question_set_is_well_formed(path: Path) -> None:
    questions = json.loads(path.read_text(encoding="utf-8"))
    ids = [q["id"] for q in questions]
    assert len(ids) == len(set(ids))
    for q in questions:
        assert REQUIRED <= set(q) <= REQUIRED | OPTIONAL, q["id"]
        if q["answerable"]:
            assert q["expected"] and 1 <= len(q["facts"]) <= 3, q["id"]
            assert all(variants and all(v.strip() for v in variants) for variants in q["facts"])
        else:
            assert q["expected"] == [] and q["facts"] == [], q["id"]


def test_the_held_out_set_shares_no_question_or_note_with_the_main_set() -> None:
    main, held, *_ = (json.loads(p.read_text(encoding="utf-8")) for p in SETS)
    assert not {q["question"] for q in main} & {q["question"] for q in held}
    assert not {p for q in main for p in q["expected"]} & {p for q in held for p in q["expected"]}


@pytest.mark.skipif(not HELP_VAULT.is_dir(), reason="needs ../shared/data (the Help vault)")
@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_every_expected_note_exists_and_holds_its_facts(path: Path) -> None:
    for q in json.loads(path.read_text(encoding="utf-8")):
        texts = [(HELP_VAULT / p).read_text(encoding="utf-8").casefold() for p in q["expected"]]
        for variants in q["facts"]:
            assert any(v.casefold() in t for v in variants for t in texts), (q["id"], variants)


def test_the_fresh_set_shares_no_question_with_the_earlier_sets() -> None:
    earlier = {q["question"].casefold() for p in SETS[:2] for q in json.loads(p.read_text())}
    fresh = json.loads(SETS[2].read_text(encoding="utf-8"))
    assert not {q["question"].casefold() for q in fresh} & earlier
    assert sum(q["answerable"] for q in fresh) >= 40
    assert sum(not q["answerable"] for q in fresh) >= 10


@pytest.mark.skipif(not HELP_VAULT.is_dir(), reason="needs ../shared/data (the Help vault)")
def test_every_quote_of_the_fresh_set_is_verbatim_in_its_notes() -> None:
    for q in json.loads(SETS[2].read_text(encoding="utf-8")):
        texts = [
            " ".join((HELP_VAULT / p).read_text(encoding="utf-8").split()) for p in q["expected"]
        ]
        for quote in q.get("quote", []):
            assert any(" ".join(quote.split()) in t for t in texts), (q["id"], quote)


def test_the_second_fresh_set_shares_no_question_with_the_earlier_sets() -> None:
    earlier = {q["question"].casefold() for p in SETS[:3] for q in json.loads(p.read_text())}
    fresh2 = json.loads(SETS[3].read_text(encoding="utf-8"))
    assert not {q["question"].casefold() for q in fresh2} & earlier
    assert sum(q["answerable"] for q in fresh2) >= 30
    assert sum(not q["answerable"] for q in fresh2) >= 10
    assert not {q["id"] for q in fresh2} & {
        q["id"] for p in SETS[:3] for q in json.loads(p.read_text())
    }


def test_the_third_fresh_set_is_new_and_as_large_as_the_issue_asks() -> None:
    earlier = {q["question"].casefold() for p in SETS[:4] for q in json.loads(p.read_text())}
    fresh = json.loads(SETS[4].read_text(encoding="utf-8"))
    assert not {q["question"].casefold() for q in fresh} & earlier
    assert sum(q["answerable"] for q in fresh) >= 40
    assert sum(not q["answerable"] for q in fresh) >= 10
    # Every question says what a blind reader needs: the right answer and its kind.
    assert all(q.get("reference") and q.get("kind") for q in fresh)


def _assert_quotes_verbatim(questions: list[dict]) -> None:
    """Every quote is in one of its question's notes, white space aside."""
    for q in questions:
        texts = [
            " ".join((HELP_VAULT / p).read_text(encoding="utf-8").split()) for p in q["expected"]
        ]
        for quote in q.get("quote", []):
            assert any(" ".join(quote.split()) in t for t in texts), (q["id"], quote)


def test_the_fourth_fresh_set_is_new_its_ids_its_own_and_its_quotes_verbatim() -> None:
    """Written for the next round's check, without sight of any earlier set or reply."""
    earlier = [q for p in SETS[:5] for q in json.loads(p.read_text(encoding="utf-8"))]
    fresh = json.loads(SETS[5].read_text(encoding="utf-8"))
    assert not {q["question"].casefold() for q in fresh} & {
        q["question"].casefold() for q in earlier
    }
    assert not {q["id"] for q in fresh} & {q["id"] for q in earlier}
    assert sum(q["answerable"] for q in fresh) >= 40
    assert sum(not q["answerable"] for q in fresh) >= 10
    assert all(q.get("reference") and q.get("kind") for q in fresh)
    if HELP_VAULT.is_dir():
        _assert_quotes_verbatim(fresh)


def test_the_yes_or_no_set_asks_yes_or_no_both_ways_and_is_new() -> None:
    """The seventh fresh set, written blind for the check of rules on yes/no replies: as
    many questions the notes answer "yes" as "no", and ten no note answers, each new, its
    quotes verbatim."""
    earlier = [q for p in SETS[:-1] for q in json.loads(p.read_text(encoding="utf-8"))]
    fresh = json.loads(SETS[-1].read_text(encoding="utf-8"))
    assert not {q["question"].casefold() for q in fresh} & {
        q["question"].casefold() for q in earlier
    }
    assert not {q["id"] for q in fresh} & {q["id"] for q in earlier}
    kinds = [q["kind"] for q in fresh]
    assert kinds.count("yes") == kinds.count("no") == 15 and kinds.count("unanswerable") == 10
    for q in fresh:
        assert q["answerable"] == (q["kind"] != "unanswerable"), q["id"]
        if q["answerable"]:
            assert q["reference"].split(",")[0].split(".")[0] == q["kind"].capitalize(), q["id"]
    if HELP_VAULT.is_dir():
        _assert_quotes_verbatim(fresh)


PERSONAL = ROOT / "bench" / "data" / "answer_questions_personal.json"
PERSONAL_VAULT = ROOT.parent / "shared" / "data" / "vaults" / "vaultofknowledge"


def _note_text(vault: Path, path: str) -> str:
    return (vault / path).read_text(encoding="utf-8").replace("\r\n", "\n")


def test_the_personal_vault_set_is_well_formed_and_its_ids_its_own() -> None:
    """Written blind over a real personal vault (vaultofknowledge), the owner asking about
    what they wrote: a held-out set no earlier question or reply comes near."""
    questions = json.loads(PERSONAL.read_text(encoding="utf-8"))
    earlier_ids = {q["id"] for p in SETS for q in json.loads(p.read_text(encoding="utf-8"))}
    assert not {q["id"] for q in questions} & earlier_ids
    assert len({q["id"] for q in questions}) == len(questions)
    assert sum(q["answerable"] for q in questions) >= 40
    assert sum(not q["answerable"] for q in questions) >= 10
    for q in questions:
        assert REQUIRED <= set(q) <= REQUIRED | OPTIONAL, q["id"]
        assert q.get("reference") and q.get("kind"), q["id"]
        if q["answerable"]:
            assert q["expected"] and 1 <= len(q["facts"]) <= 3, q["id"]
        else:
            assert q["expected"] == [] and q["facts"] == [], q["id"]


@pytest.mark.skipif(not PERSONAL_VAULT.is_dir(), reason="needs ../shared/data (vaultofknowledge)")
def test_the_personal_vault_sets_notes_hold_its_facts_and_quotes() -> None:
    for q in json.loads(PERSONAL.read_text(encoding="utf-8")):
        texts = [_note_text(PERSONAL_VAULT, p) for p in q["expected"]]
        for variants in q["facts"]:
            assert any(v.casefold() in t.casefold() for v in variants for t in texts), q["id"]
        flat = [" ".join(t.split()) for t in texts]
        for quote in q.get("quote", []):
            assert any(" ".join(quote.split()) in t for t in flat), (q["id"], quote)


def test_the_standalone_follow_up_set_is_each_follow_up_written_out_with_its_notes() -> None:
    """bench/data/answer_questions_followups_standalone.json: every follow-up turn of the
    threads once, by hand as a question of its own ("can it be folded?" -> "Can a callout
    be folded?"), with the turn's own expected notes: the follow-ups' questions asked
    without a thread, to tell the thread's cost from the questions' difficulty."""
    threads = json.loads((ROOT / "bench" / "data" / "followup_threads.json").read_text("utf-8"))
    turns = {
        f"oracle/{t['id']}/{n}": turn
        for t in threads
        for n, turn in enumerate(t["turns"], 1)
        if n > 1
    }
    path = ROOT / "bench" / "data" / "answer_questions_followups_standalone.json"
    questions = json.loads(path.read_text(encoding="utf-8"))
    assert [q["id"] for q in questions] == list(turns)
    for q in questions:
        assert set(q) == {"id", "question", "answerable", "expected"}, q["id"]
        assert q["answerable"] is True and q["expected"] == turns[q["id"]]["expected"]
        assert q["question"].endswith("?") and q["question"] != turns[q["id"]]["question"]
        assert q["question"][0].isupper(), q["id"]


THREAD_SETS = [
    ROOT / "bench" / "data" / n
    for n in (
        "followup_threads.json",
        "followup_threads_heldout.json",
        "followup_threads_third.json",
        "followup_threads_fourth.json",
        "followup_threads_fifth.json",
        "followup_threads_sixth.json",
        "followup_threads_seventh.json",
    )
]


@pytest.mark.parametrize("path", THREAD_SETS, ids=lambda p: p.name)
def test_follow_up_threads_are_well_formed(path: Path) -> None:
    """Two- and three-turn threads, each turn a question with the notes that answer it."""
    threads = json.loads(path.read_text(encoding="utf-8"))
    ids = [t["id"] for t in threads]
    assert len(ids) == len(set(ids)) and len(threads) >= 15
    for thread in threads:
        assert set(thread) == {"id", "turns"} and 2 <= len(thread["turns"]) <= 3, thread["id"]
        for turn in thread["turns"]:
            assert set(turn) == {"question", "expected"}, thread["id"]
            assert turn["question"].strip() and turn["expected"], thread["id"]


@pytest.mark.parametrize(
    "later", [1, 2, 3, 4, 5, 6], ids=["heldout", "third", "fourth", "fifth", "sixth", "seventh"]
)
def test_the_held_out_threads_are_new_topics(later: int) -> None:
    """bench/data/followup_threads_heldout.json was written after the follow-up checks were
    tuned on the first set, before any reply to it was seen, and
    followup_threads_third.json after the carried pages were tuned on both, by a writer
    who saw neither, followup_threads_fourth.json and followup_threads_fifth.json after
    the thread's reach was chosen on all three, and followup_threads_sixth.json and
    followup_threads_seventh.json after the follow-up search was tuned on all five, from
    pages no earlier thread expects, each by a writer who saw no other set: no thread of a
    later set is one of an earlier set's, nor asks one of its questions."""
    sets = [json.loads(p.read_text(encoding="utf-8")) for p in THREAD_SETS]
    held = sets[later]
    for first in sets[:later]:
        assert not {t["id"] for t in first} & {t["id"] for t in held}
        asked = {q["question"].casefold() for t in first for q in t["turns"]}
        assert not asked & {q["question"].casefold() for t in held for q in t["turns"]}


@pytest.mark.skipif(not HELP_VAULT.is_dir(), reason="needs ../shared/data (the Help vault)")
@pytest.mark.parametrize("path", THREAD_SETS, ids=lambda p: p.name)
def test_follow_up_threads_expect_notes_of_the_help_vault(path: Path) -> None:
    for thread in json.loads(path.read_text(encoding="utf-8")):
        for turn in thread["turns"]:
            for note in turn["expected"]:
                assert (HELP_VAULT / note).is_file(), (thread["id"], note)


def test_only_the_questions_that_name_a_period_are_read_as_one() -> None:
    # 738 questions written by people who were not thinking of periods: their dates are
    # values ("like 31.12.2024", "today's date", "a 2000-word target"), events ("a meeting
    # tomorrow") or nothing. Before the value rules, 8 of the 10 periods read here were
    # wrong, and each narrowed a Help question's search to the notes of a day or a year.
    from datetime import datetime

    from askvault.core.periods import find_period

    texts = [q["question"] for path in SETS for q in json.loads(path.read_text("utf-8"))]
    for path in THREAD_SETS:
        for thread in json.loads(path.read_text(encoding="utf-8")):
            texts += [t["question"] for t in thread["turns"]]
    now = datetime(2026, 12, 7, 12, 0)
    read = {q: p.words for q in texts if (p := find_period(q, now)) is not None}
    # "books I finished in the last month" (a filter asked for in a thread) may well be
    # the notes of that month in a reading log: read as one, and kept.
    assert sorted(read.values()) == ["last month", "last week", "this year"], read
