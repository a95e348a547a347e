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
