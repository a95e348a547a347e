"""The user docs hold up: README links every how-to page, every relative link and anchor of
README and docs/how-to resolves, and the pages name what the code has (every doctor check,
every question option and status)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from askvault.services.inbox.question_options import KNOWN_OPTIONS

REPO = Path(__file__).resolve().parents[2]
HOWTO = REPO / "docs" / "how-to"
PAGES = sorted(HOWTO.glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", text, flags=re.M)}


def test_readme_links_every_how_to_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in PAGES:
        assert f"(docs/how-to/{page.name})" in readme, f"README does not link {page.name}"


@pytest.mark.parametrize("page", [REPO / "README.md", *PAGES], ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, file: — not checked here
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{page.name}: {target} does not exist"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{page.name}: no heading #{anchor} in {path}"


def _doctor_check_names() -> set[str]:
    tree = ast.parse(
        (REPO / "daemon/askvault/services/admin/doctor.py").read_text(encoding="utf-8")
    )
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Check" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            elif isinstance(first, ast.JoinedStr) and isinstance(first.values[0], ast.Constant):
                names.add(str(first.values[0].value).split("(")[0].strip())
    return names


def test_troubleshooting_covers_every_doctor_check() -> None:
    text = (HOWTO / "troubleshooting.md").read_text(encoding="utf-8")
    names = _doctor_check_names()
    assert "ollama host allowed" in names
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert not missing, f"troubleshooting.md does not explain: {missing}"


def test_question_notes_page_names_every_option_and_status() -> None:
    text = (HOWTO / "question-notes.md").read_text(encoding="utf-8")
    for option in (*KNOWN_OPTIONS, "draft"):
        assert f"`{option}`" in text, f"question-notes.md does not describe option {option}"
    for status in ("answering", "answered", "no-answer", "waiting", "failed", "stale"):
        assert f"| `{status}` |" in text, f"question-notes.md does not explain {status}"


def test_no_hint_points_at_a_file_a_pip_user_does_not_have() -> None:
    for path in (REPO / "daemon" / "askvault").rglob("*.py"):
        assert "config/askvault.example.toml" not in path.read_text(encoding="utf-8"), path


def test_the_license_is_the_mit_license_the_metadata_names() -> None:
    assert 'license = { text = "MIT" }' in (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
