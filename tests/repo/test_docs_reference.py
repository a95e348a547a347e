"""Docs that mirror code are generated, and this test fails when they drift (STYLE rule 13)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_reference_docs_match_the_code() -> None:
    generator = runpy.run_path(str(REPO / "docs" / "gen_reference.py"))
    for name, render in generator["FILES"].items():
        committed = (REPO / "docs" / "reference" / name).read_text(encoding="utf-8")
        assert committed == render(), (
            f"docs/reference/{name} drifted: run `.venv/bin/python docs/gen_reference.py`"
        )


def test_cli_reference_usage_lines_read_as_typed() -> None:
    generator = runpy.run_path(str(REPO / "docs" / "gen_reference.py"))
    text = generator["cli_reference"]()
    usages = [line for line in text.splitlines() if line.startswith("Usage: ")]
    assert usages and "askvault askvault" not in text
    sections = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    for section, usage in zip(sections, usages, strict=True):
        # `## askvault ask` documents `Usage: askvault ask [OPTIONS] QUESTION`.
        assert usage.removeprefix("Usage: ").startswith(section + " "), (section, usage)


# A docs/ path as the code names it: `docs/how-to/obsidian.md`, `docs/how-to`, `../docs/x.md`.
DOCS_PATH = re.compile(r"\bdocs/[\w./-]*[\w/]")


def test_every_docs_path_the_code_names_exists() -> None:
    missing = []
    for path in sorted((REPO / "daemon").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for named in DOCS_PATH.findall(line):
                if not (REPO / named.rstrip("/.")).exists():
                    missing.append(f"{path.relative_to(REPO)}:{number}: {named}")
    assert missing == [], "write the page, or point at one that exists"
