"""The user docs state one default per setting, the code's: every value README.md and
docs/how-to give for a setting (`queries.excerpt_tokens = 1000`, `poll_interval_s` (2 s),
3 s (`queries.settle_s`), "waits a minute", the models `ollama pull` fetches by default,
whether `tags:` narrows the search) is read from the page and compared with Settings and
the code, so two pages can no longer disagree (obsidian.md once said a `tags:` property
narrows the search while README and question-notes.md said it never does)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from askvault.core.backoff import BACKOFF_FIRST_S, BACKOFF_MAX_S
from askvault.services.inbox.question_options import read_question_options
from askvault.settings import SECTIONS, Settings

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs" / "how-to").glob("*.md"))]
FENCE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)


def _defaults() -> dict[str, Any]:
    """Every dotted key with its default, and each bare key that only one section has."""
    settings = Settings()
    out: dict[str, Any] = {f.name: getattr(settings, f.name) for f in fields(Settings)}
    bare: dict[str, list[str]] = {}
    for section in SECTIONS:
        for f in fields(getattr(settings, section)):
            out[f"{section}.{f.name}"] = getattr(getattr(settings, section), f.name)
            bare.setdefault(f.name, []).append(f"{section}.{f.name}")
    for name, keys in bare.items():
        if len(keys) == 1:
            out.setdefault(name, out[keys[0]])
    return {k: v for k, v in out.items() if k not in SECTIONS}


DEFAULTS = _defaults()
KEY = r"(?:[a-z_]+\.)?[a-z_]+"
DURATION = r"(?:a minute|an hour|\d+(?:\.\d+)? (?:s|minutes?))"
# The word right before `key = value` that makes it an instruction, not the default.
INSTRUCTION_WORDS = {"set", "put", "unless", "with", "to", "force", "or"}


@dataclass(frozen=True)
class Claim:
    """A value a page states for a setting (or a fact of the code), and where."""

    page: str
    line: int
    subject: str
    stated: Any

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.subject} = {self.stated!r}"


def seconds(text: str) -> float:
    """A duration as the docs write it, in seconds: `3 s`, `10 minutes`, `a minute`."""
    text = text.strip()
    if text in ("a minute", "an hour"):
        return 60.0 if text == "a minute" else 3600.0
    number, unit = text.split()
    return float(number) * (60.0 if unit.startswith("minute") else 1.0)


def _value(raw: str) -> Any:
    """A value as a page writes it: TOML (`1000`, `true`, `"auto"`), `auto`, or `2 s`."""
    raw = raw.strip().strip("`")
    if re.fullmatch(r"\d+(?:\.\d+)? s", raw):
        return seconds(raw)
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


# (pattern, subject): each match states the subject's value in group 1 (and 2).
PHRASES: list[tuple[str, str]] = [
    # `queries.settle_s`: "3 s (`queries.settle_s`)"; the unfinished wait in words
    (rf"(?:waits|taken once unchanged for|after) ({DURATION}) (?:without change|of quiet)",
     "queries.unfinished_settle_s"),
    (rf"unfinished for longer than ({DURATION})", "queries.unfinished_settle_s"),
    (rf"a reconcile at start-up, every ({DURATION})", "daemon.reconcile_interval_s"),
    (rf"retries by itself \(({DURATION}), doubling to ({DURATION})\)", "backoff"),
    (r"ollama pull ([\w.:-]+)\s+# the default embedding model", "ollama.embed_model"),
    (r"ollama pull ([\w.:-]+)\s+# the default chat model", "ollama.chat_model"),
    (r"default models pulled \(`ollama pull ([\w.:-]+) && ollama pull ([\w.:-]+)`",
     "default models"),
]  # fmt: skip


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _prose(text: str) -> str:
    """The page without its fenced blocks (same line numbers)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def setting_claims(page: str, text: str) -> list[Claim]:
    """Values a page's prose states for settings by name."""
    prose = _prose(text)
    claims = []
    # `queries.excerpt_tokens = 1000` (unless the word before makes it an instruction)
    for m in re.finditer(rf"(\w*)\W{{0,3}}`({KEY}) = ([^`]+)`", prose):
        placeholder = m.group(3).strip() in ("…", "...")
        if (
            m.group(1).lower() not in INSTRUCTION_WORDS
            and m.group(2) in DEFAULTS
            and not placeholder
        ):
            claims.append(Claim(page, _line_of(prose, m.start(2)), m.group(2), _value(m.group(3))))
    # `poll_interval_s` (2 s), `log_level` (`info`) -- not a list of choices (`a` | `b`)
    for m in re.finditer(rf"`({KEY})` \(([^()|,;]+)\)", prose):
        value = m.group(2).strip()
        if m.group(1) in DEFAULTS and re.fullmatch(r"`[^`]+`|\d+(?:\.\d+)?(?: s)?", value):
            claims.append(Claim(page, _line_of(prose, m.start(1)), m.group(1), _value(value)))
    # 3 s (`queries.settle_s`), (`queries.unfinished_settle_s`, 60 s)
    for m in re.finditer(rf"({DURATION}) \(`({KEY})`\)|\(`({KEY})`, ({DURATION})\)", prose):
        key, raw = (m.group(2), m.group(1)) if m.group(2) else (m.group(3), m.group(4))
        if key in DEFAULTS:
            claims.append(Claim(page, _line_of(prose, m.start()), key, seconds(raw)))
    return claims


def phrase_claims(page: str, text: str) -> list[Claim]:
    """Values stated in words (and the models a page says are the defaults); a phrase may
    wrap to the next line."""
    claims = []
    for pattern, subject in PHRASES:
        for m in re.finditer(pattern.replace(" ", r"\s+"), text):
            stated: Any = m.groups() if len(m.groups()) > 1 else m.group(1)
            if re.search(DURATION, m.group(1)):
                stated = (
                    tuple(map(seconds, stated)) if isinstance(stated, tuple) else seconds(stated)
                )
            claims.append(Claim(page, _line_of(text, m.start()), subject, stated))
    return claims


TAGS_SENTENCE = re.compile(r"[^.|]*`tags:`[^.|]*")
NARROWS = re.compile(r"\b(narrow|narrows|filters?|limits?|changes?)\b", re.I)
NEVER = re.compile(r"\b(never|not|no longer|nothing)\b", re.I)


def tags_claims(page: str, text: str) -> list[Claim]:
    """What each sentence about a question's `tags:` property says it does to the search."""
    claims = []
    prose = _prose(text)
    for m in TAGS_SENTENCE.finditer(prose):
        sentence = m.group(0)
        if NARROWS.search(sentence) and re.search(r"\b(search|anything)\b", sentence):
            narrows = not NEVER.search(sentence)
            line = _line_of(prose, m.start() + sentence.index("`tags:`"))
            claims.append(Claim(page, line, "a question's tags: narrows the search", narrows))
    return claims


def _truth(subject: str) -> Any:
    if subject == "backoff":
        return (BACKOFF_FIRST_S, BACKOFF_MAX_S)
    if subject == "default models":
        return (DEFAULTS["ollama.embed_model"], DEFAULTS["ollama.chat_model"])
    if subject == "a question's tags: narrows the search":
        reading = read_question_options({"tags": ["physics"]}, REPO)
        return bool(reading.options.tags)
    return DEFAULTS[subject]


def every_claim(pages: dict[str, str]) -> list[Claim]:
    claims: list[Claim] = []
    for name, text in pages.items():
        claims += setting_claims(name, text) + phrase_claims(name, text) + tags_claims(name, text)
    return claims


def wrong_claims(claims: list[Claim]) -> list[str]:
    """Each claim that differs from the code, with the value the code has."""
    return [
        f"{c} (the code: {_truth(c.subject)!r})" for c in claims if c.stated != _truth(c.subject)
    ]


PAGE_TEXTS = {p.name: p.read_text(encoding="utf-8") for p in PAGES}
CLAIMS = every_claim(PAGE_TEXTS)


def test_every_default_the_pages_state_is_the_codes() -> None:
    assert not wrong_claims(CLAIMS), "\n".join(wrong_claims(CLAIMS))


@pytest.mark.parametrize(
    "subject",
    [
        "queries.settle_s",
        "queries.unfinished_settle_s",
        "queries.excerpt_tokens",
        "ollama.num_ctx",
        "ollama.reply_silence_s",
        "poll_interval_s",
        "reconcile_interval_s",
        "ollama.embed_model",
        "ollama.chat_model",
        "default models",
        "backoff",
        "a question's tags: narrows the search",
    ],
)
def test_the_pages_state_these_defaults_so_the_check_reads_them(subject: str) -> None:
    assert any(c.subject == subject for c in CLAIMS), f"no page states {subject} any more"


def test_a_default_stated_twice_on_the_same_page_is_read_twice() -> None:
    settle = [c for c in CLAIMS if c.subject == "queries.unfinished_settle_s"]
    assert len({c.page for c in settle}) >= 2, settle


@pytest.mark.parametrize(
    ("page_a", "page_b", "subject"),
    [
        ("taken once it has not changed for 3 s (`queries.settle_s`).",
         "taken once it has not changed for 5 s (`queries.settle_s`).", "queries.settle_s"),
        ("`poll_interval_s` (2 s)", "`poll_interval_s` (5 s)", "poll_interval_s"),
        ("the defaults (`ollama.num_ctx = 4096`)", "asks for `ollama.num_ctx = 2048`",
         "ollama.num_ctx"),
        ("a question without one waits a minute without change",
         "it waits 30 s without change", "queries.unfinished_settle_s"),
        ("```sh\nollama pull all-minilm   # the default embedding model\n```",
         "```sh\nollama pull mxbai-embed-large   # the default embedding model\n```",
         "ollama.embed_model"),
        ("ordinary properties such as `tags:` never change the search",
         "today a `tags:` property narrows the search", "a question's tags: narrows the search"),
    ],
)  # fmt: skip
def test_two_pages_that_disagree_fail(page_a: str, page_b: str, subject: str) -> None:
    claims = every_claim({"a.md": page_a, "b.md": page_b})
    assert [c.subject for c in claims] == [subject, subject]
    wrong = wrong_claims(claims)
    assert len(wrong) == 1 and wrong[0].startswith("b.md:"), wrong


@pytest.mark.parametrize(
    "instruction",
    [
        "set `allow_remote_ollama = true` under `[ollama]`",
        "unless `index.index_queries = true`",
        "allow that host with `allow_remote_ollama = true`",
    ],
)
def test_an_instruction_to_set_a_value_is_no_claim_of_its_default(instruction: str) -> None:
    assert every_claim({"a.md": instruction}) == []
