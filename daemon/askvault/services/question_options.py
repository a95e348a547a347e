"""The options a question note may set in its frontmatter, validated (DESIGN §2)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from askvault.adapters.vault import resolve_inside
from askvault.errors import PathOutsideVault
from askvault.services.answering import QuestionOptions

LOG_SUMMARY_CHARS = 80
KNOWN_OPTIONS = ("folders", "tags", "max_sources", "model", "language")


def parse_question_options(
    frontmatter: dict[str, Any], vault: Path
) -> tuple[QuestionOptions, list[str]]:
    """The known options of a question's frontmatter, and one message per invalid value.

    Unknown keys are ignored (and kept in the archived note, which is never rewritten).
    """
    errors: list[str] = []
    folders = []
    for folder in _str_list(frontmatter.get("folders"), "folders", errors):
        clean = folder.strip().rstrip("/")
        try:
            resolved = resolve_inside(vault, clean)
        except PathOutsideVault:
            errors.append(f"folders: {folder!r} is outside the vault")
            continue
        if not clean or not resolved.is_dir():
            errors.append(f"folders: {folder!r} is not a folder of the vault")
            continue
        folders.append(clean)
    tags = [t.strip().lstrip("#") for t in _str_list(frontmatter.get("tags"), "tags", errors)]
    max_sources = frontmatter.get("max_sources")
    if max_sources is not None and (
        isinstance(max_sources, bool) or not isinstance(max_sources, int) or max_sources < 1
    ):
        errors.append(f"max_sources: must be a whole number >= 1 (got {max_sources!r})")
        max_sources = None
    model = _str_value(frontmatter.get("model"), "model", errors)
    language = _str_value(frontmatter.get("language"), "language", errors)
    options = QuestionOptions(tuple(folders), tuple(t for t in tags if t), max_sources, model,
                              language)
    return options, errors


def _str_list(value: Any, key: str, errors: list[str]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part for part in (p.strip() for p in value.split(",")) if part]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()]
    errors.append(f"{key}: must be a list of names (got {value!r})")
    return []


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


def question_summary(question: str, limit: int = LOG_SUMMARY_CHARS) -> str:
    """The question on one line (first line, `#` and extra spaces dropped), truncated."""
    first = next((line for line in question.splitlines() if line.strip()), "")
    flat = " ".join(re.sub(r"^#+\s*", "", first.strip()).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
