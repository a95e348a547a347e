"""Docs that mirror code are generated, and this test fails when they drift (STYLE rule 13)."""

from __future__ import annotations

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
