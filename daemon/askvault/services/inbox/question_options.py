"""The options a question note may set in its frontmatter, validated (DESIGN §2).

Options live in askvault's own namespace, `ask_*` keys, so the properties Obsidian and
its templates add (`tags:`, `aliases:`, `language:`...) never change the search
(docs/decisions.md, "Question options: `ask_*` keys"). Of the earlier bare names only
`folders` and `max_sources` are still read (no template adds them; a note says to
rename them); `tags`, `model` and `language` are ordinary properties now. An unknown
`ask_*` key, or a key one typo away from an option, gets a warning in the answer note.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

from askvault.adapters.vault import resolve_inside
from askvault.core.controls import strip_controls
from askvault.core.periods import find_period, period_from_bounds
from askvault.errors import PathOutsideVault
from askvault.records import ParsedNote, QuestionOptions

LOG_SUMMARY_CHARS = 80
NARROWED_BY = "Narrowed by this question's options: "
OPTION_PREFIX = "ask_"
KNOWN_OPTIONS = (
    "ask_folders",
    "ask_tags",
    "ask_max_sources",
    "ask_model",
    "ask_language",
    "ask_since",
    "ask_until",
)
# Earlier bare names still read, when their `ask_` form is absent: askvault-only words.
LEGACY_OPTIONS = {"folders": "ask_folders", "max_sources": "ask_max_sources"}
# Earlier bare names no longer read (`tags`, `model`, `language`): ordinary properties of
# many notes and templates, so they pass silently like any other property.
TYPO_CUTOFF = 0.8
# Obsidian's own properties and askvault's `draft`: never flagged as a typo of an option.
ORDINARY_PROPERTIES = frozenset(
    {
        "draft",
        "tags",
        "tag",
        "aliases",
        "alias",
        "cssclasses",
        "cssclass",
        "publish",
        "permalink",
        "model",
        "language",
    }
)


@dataclass(frozen=True)
class OptionsReading:
    """A question's options, one error per invalid value, and what the note should say:
    the options that narrow the search and warnings about keys."""

    options: QuestionOptions
    errors: list[str]
    notices: list[str]


def parse_question_options(
    frontmatter: dict[str, Any], vault: Path
) -> tuple[QuestionOptions, list[str]]:
    """The known options of a question's frontmatter, and one message per invalid value."""
    reading = read_question_options(frontmatter, vault)
    return reading.options, reading.errors


def read_question_options(frontmatter: dict[str, Any], vault: Path) -> OptionsReading:
    """The question's `ask_*` options (and the legacy names still read), validated, with
    the notices its answer note shows. Other keys are kept (in the archived note) and
    ignored."""
    errors: list[str] = []
    warnings: list[str] = []
    values: dict[str, Any] = {}
    written: dict[str, str] = {}  # option -> the key the note used (errors name that one)
    for key, value in frontmatter.items():
        name = str(key)
        if name in KNOWN_OPTIONS:
            values[name] = value
        elif name in LEGACY_OPTIONS:
            new = LEGACY_OPTIONS[name]
            if new in frontmatter:
                warnings.append(f"`{name}:` is ignored: `{new}:` is set (remove `{name}:`).")
            else:
                values[new], written[new] = value, name
                warnings.append(
                    f"`{name}:` is read as `{new}:`; rename it, the bare name may stop working."
                )
        elif name.lower().startswith(OPTION_PREFIX) or _near_option(name):
            guess = _near_option(name)
            hint = (
                f" Did you mean `{guess}:`?"
                if guess
                else (" Known options: " + ", ".join(f"`{k}`" for k in KNOWN_OPTIONS) + ".")
            )
            warnings.append(f"Unknown option `{name}:` is ignored.{hint}")
    key = written.get("ask_folders", "ask_folders")
    folders = vault_folders(_str_list(values.get("ask_folders"), key, errors), vault, key, errors)
    tags = clean_tags(_str_list(values.get("ask_tags"), "ask_tags", errors))
    max_sources = values.get("ask_max_sources")
    if max_sources is not None and (
        isinstance(max_sources, bool) or not isinstance(max_sources, int) or max_sources < 1
    ):
        errors.append(
            f"{written.get('ask_max_sources', 'ask_max_sources')}: must be a whole"
            f" number >= 1 (got {max_sources!r})"
        )
        max_sources = None
    model = _str_value(values.get("ask_model"), "ask_model", errors)
    language = _str_value(values.get("ask_language"), "ask_language", errors)
    since, until = _period_bounds(values.get("ask_since"), values.get("ask_until"), errors)
    options = QuestionOptions(folders, tags, max_sources, model, language, since, until)
    narrowed = describe_options(options)
    return OptionsReading(options, errors, ([narrowed] if narrowed else []) + warnings)


def follow_up_options(
    properties: dict[str, Any],
    follow_up: str,
    vault: Path,
    *,
    given: QuestionOptions | None = None,
    now: datetime | None = None,
) -> OptionsReading:
    """The options a follow-up is answered with: its answer note's `ask_*` properties
    (the first question's, as askvault kept them, or as the user changed them since),
    validated as a question note's are; each option `given` sets (`ask --since`, an
    agent's argument) replaces the property; and a period named by the follow-up's own
    words ("and the week before?"), or given, replaces the kept `ask_since`/`ask_until`
    as a whole (one period, never half of each). Only `ask_*` keys are read: the note's
    own properties (`question`, `sources`...) are askvault's, no options."""
    own = {k: v for k, v in properties.items() if str(k).lower().startswith(OPTION_PREFIX)}
    reading = read_question_options(own, vault)
    options = reading.options
    given = given or QuestionOptions()
    if given.since or given.until or find_period(follow_up, now or datetime.now()):
        options = replace(options, since=given.since, until=given.until)
    options = replace(
        options,
        folders=given.folders or options.folders,
        tags=given.tags or options.tags,
        max_sources=given.max_sources or options.max_sources,
        model=given.model or options.model,
        language=given.language or options.language,
    )
    narrowed = describe_options(options)
    notices = [n for n in reading.notices if not n.startswith(NARROWED_BY)]
    return OptionsReading(options, reading.errors, ([narrowed] if narrowed else []) + notices)


def vault_folders(
    folders: Sequence[str], vault: Path, key: str, errors: list[str]
) -> tuple[str, ...]:
    """The folders that are folders of the vault (without a trailing `/`); one error,
    under `key`, for each that is outside it or no folder."""
    kept = []
    for folder in folders:
        clean = folder.strip().rstrip("/")
        try:
            resolved = resolve_inside(vault, clean)
        except PathOutsideVault:
            errors.append(f"{key}: {folder!r} is outside the vault")
            continue
        if not clean or not resolved.is_dir():
            errors.append(f"{key}: {folder!r} is not a folder of the vault")
            continue
        kept.append(clean)
    return tuple(kept)


def clean_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """Tags as the index compares them: without `#` and spaces around; empty ones dropped."""
    return tuple(t for t in (tag.strip().lstrip("#") for tag in tags) if t)


def describe_options(options: QuestionOptions) -> str:
    """One line naming the options that narrow the search or change the answer ('' if
    none): shown in the answer note and its trace."""
    parts = []
    if options.folders:
        parts.append("folders " + ", ".join(f"`{f}`" for f in options.folders))
    if options.tags:
        parts.append("tags " + ", ".join(f"`#{t}`" for t in options.tags))
    if options.max_sources:
        parts.append(f"at most {options.max_sources} source(s)")
    if options.model:
        parts.append(f"model `{options.model}`")
    if options.language:
        parts.append(f"language `{options.language}`")
    if options.since:
        parts.append(f"since `{options.since}`")
    if options.until:
        parts.append(f"until `{options.until}`")
    return (NARROWED_BY + "; ".join(parts) + ".") if parts else ""


def _near_option(key: str) -> str | None:
    """The option `key` looks like a typo of (`foldrs`, `ask_folder`, `Max_Sources`), or
    None. Obsidian's own properties (`tag`, `alias`...) are never taken for a typo."""
    lowered = key.lower()
    if lowered in ORDINARY_PROPERTIES:
        return None
    names = {k: k for k in KNOWN_OPTIONS}
    names.update({k[len(OPTION_PREFIX) :]: k for k in KNOWN_OPTIONS})
    if lowered in names:
        return names[lowered] if key != names[lowered] else None
    match = difflib.get_close_matches(lowered, list(names), n=1, cutoff=TYPO_CUTOFF)
    return names[match[0]] if match else None


def _str_list(value: Any, key: str, errors: list[str]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part for part in (p.strip() for p in value.split(",")) if part]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()]
    errors.append(f"{key}: must be a list of names (got {value!r})")
    return []


def _period_bounds(since: Any, until: Any, errors: list[str]) -> tuple[str | None, str | None]:
    """`ask_since` / `ask_until` as the texts `--since` / `--until` take (a date property,
    `2024-01`, a year or words such as `last week`), or one error naming the value that is
    no date (or a `since` after its `until`). Words are read when the question is
    answered, as the question's own words would be."""
    bounds = [
        _bound_text(value, key, errors)
        for value, key in ((since, "ask_since"), (until, "ask_until"))
    ]
    first, last = bounds
    if first is None and last is None:
        return None, None
    try:
        period_from_bounds(first, last, datetime.now())
    except ValueError as exc:
        message = str(exc)
        if message.startswith(("since:", "until:")):
            errors.append("ask_" + message)
        else:  # both are dates, in the wrong order
            errors.append(f"ask_since: {first!r} is after ask_until: {last!r}")
        return None, None
    return first, last


def _bound_text(value: Any, key: str, errors: list[str]) -> str | None:
    """A bound as text: a date or datetime property (YAML reads `2024-01-05` as a date) by
    its day, a year written as a number, or a non-empty text."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _str_value(value, key, errors)


def _str_value(value: Any, key: str, errors: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        errors.append(f"{key}: must be a non-empty text (got {value!r})")
        return None
    return value.strip()


def is_draft(value: Any) -> bool:
    """`draft: true` (or yes): the question is not ready."""
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes"))


# What a note of the inbox is (question_note_state).
NoteState = Literal["draft", "empty", "question"]


def question_note_state(note: ParsedNote) -> NoteState:
    """What a note of the inbox is: a draft (`draft: true`, left alone until removed),
    empty (no question text yet: a new note, a template's properties alone; left alone
    until it has text), or a question."""
    if is_draft(note.frontmatter.get("draft")):
        return "draft"
    return "question" if note.body.strip() else "empty"


def question_summary(question: str, limit: int = LOG_SUMMARY_CHARS) -> str:
    """The question on one line (first line, `#`, control characters and extra spaces
    dropped), truncated."""
    first = next((line for line in strip_controls(question).splitlines() if line.strip()), "")
    flat = " ".join(re.sub(r"^#+\s*", "", first.strip()).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
