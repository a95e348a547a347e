"""The hub sample of the retrieval bench (bench/hub_sample.py, issue 22 item 1): the rule that
draws it, the copy that builds the sub-vault, and the questions asked over it."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
from pathlib import Path
from types import ModuleType

import pytest

from askvault.core.notes import parse_note

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "bench" / "data" / "hub_sample.json"
QUESTIONS = ROOT / "bench" / "data" / "hub_questions.json"
HUB_VAULT = ROOT.parent / "shared" / "data" / "vaults" / "obsidian-hub"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hub_sample", ROOT / "bench" / "hub_sample.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hub = _load()
PROSE = "A plugin that does one useful thing for the reader of this note. " * 6  # 390 chars


def test_note_body_drops_the_hub_boilerplate_and_keeps_the_prose() -> None:
    text = (
        "---\naliases:\n- x\n---\n%% ----- Badges ----- %%\n"
        "![GitHub stars](https://img.shields.io/github/stars/a/b)\n"
        "# Title\n\n<!-- - Discord: `@` ^discord-->\n%% a multi\nline comment %%\n"
        "Links: [GitHub repository](https://github.com/a/b)\n\nThe prose.\n\n"
        "%% Hub footer: Please don't edit anything below this line %%\n# This note in GitHub\n"
    )
    assert hub.note_body(text) == "# Title Links: GitHub repository The prose."


def test_a_note_without_frontmatter_keeps_its_first_line() -> None:
    assert hub.note_body("# Only a heading\n\nand text") == "# Only a heading and text"


def test_a_stub_is_not_eligible_and_the_threshold_is_inclusive() -> None:
    body = "x" * hub.MIN_BODY_CHARS
    assert hub.is_eligible("Plugins/full.md", body)
    assert not hub.is_eligible("Plugins/stub.md", body[:-1])


def test_a_long_note_that_is_all_boilerplate_is_a_stub() -> None:
    text = "%% " + "Add a description below this line. " * 40 + "%%\n# Name\n<!-- " + "y" * 500
    assert not hub.is_eligible("People/someone.md", text + " -->")


@pytest.mark.parametrize(
    "path",
    [
        "03 - Showcases & Templates/Templates/Daily.md",
        "00 - Contribute to the Obsidian Hub/01 Templates/Plugin template.md",
        "x/templates/y/z.md",
        ".obsidian/snippets/a.md",
        "Plugins/notes.txt",
    ],
)
def test_templates_dot_folders_and_other_files_are_not_eligible(path: str) -> None:
    assert not hub.is_eligible(path, PROSE)


def test_a_folder_that_only_mentions_templates_is_eligible() -> None:
    assert hub.is_eligible("03 - Showcases & Templates/Vaults/LYT Kit.md", PROSE)
    assert hub.is_eligible("Guides/Templates.md", PROSE)  # a note named so, not a folder


def test_the_draw_is_fixed_by_its_seed_not_by_the_order_notes_are_read() -> None:
    notes = {f"n{i:03}.md": PROSE for i in range(50)}
    reversed_notes = dict(reversed(list(notes.items())))
    first = hub.draw_sample(notes, 10, 22)
    assert first == hub.draw_sample(reversed_notes, 10, 22)
    assert first != hub.draw_sample(notes, 10, 23)
    assert len(set(first)) == 10


def test_a_draw_larger_than_the_eligible_notes_takes_them_all_and_no_stub() -> None:
    notes = {"a.md": PROSE, "b.md": PROSE, "stub.md": "short"}
    assert sorted(hub.draw_sample(notes, 400, 22)) == ["a.md", "b.md"]


def test_copy_sample_copies_only_the_sampled_notes_writable(tmp_path: Path) -> None:
    source = tmp_path / "hub"
    (source / "Plugins").mkdir(parents=True)
    for name in ("Plugins/a.md", "Plugins/b.md", "c.md"):
        (source / name).write_text(PROSE, encoding="utf-8")
        os.chmod(source / name, 0o444)
    target = tmp_path / "sample"
    assert hub.copy_sample(source, ["Plugins/a.md", "c.md"], target) == 2
    copied = sorted(p.relative_to(target).as_posix() for p in target.rglob("*.md"))
    assert copied == ["Plugins/a.md", "c.md"]
    assert (target / "c.md").stat().st_mode & stat.S_IWUSR
    assert (source / "c.md").read_text(encoding="utf-8") == PROSE


def test_copy_sample_refuses_a_path_outside_the_sample_vault(tmp_path: Path) -> None:
    (tmp_path / "hub").mkdir()
    (tmp_path / "evil.md").write_text(PROSE, encoding="utf-8")
    with pytest.raises(ValueError, match="outside"):
        hub.copy_sample(tmp_path / "hub", ["../evil.md"], tmp_path / "sample")
    assert not (tmp_path / "sample").exists()  # refused before anything was written


def test_the_stored_sample_is_what_the_rule_records() -> None:
    record = json.loads(SAMPLE.read_text(encoding="utf-8"))
    assert record["seed"] == hub.SAMPLE_SEED
    assert record["min_body_chars"] == hub.MIN_BODY_CHARS
    assert record["size"] == len(record["paths"]) == len(set(record["paths"])) == hub.SAMPLE_SIZE


def test_the_questions_are_well_formed_and_answered_inside_the_sample() -> None:
    paths = set(json.loads(SAMPLE.read_text(encoding="utf-8"))["paths"])
    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    assert len(questions) == 50
    assert len({q["question"].casefold() for q in questions}) == 50
    for q in questions:
        assert set(q) <= {"question", "path", "heading", "also"}, q
        assert q["path"] in paths, q["path"]
        assert all(p in paths and p != q["path"] for p in q.get("also", [])), q
        assert q["heading"] is None or q["heading"].strip(), q
    assert sum("also" in q for q in questions) >= 2  # questions two notes answer list both


def test_no_question_copies_the_title_of_its_note() -> None:
    for q in json.loads(QUESTIONS.read_text(encoding="utf-8")):
        title = Path(q["path"]).stem.casefold()
        assert title not in q["question"].casefold(), (title, q["question"])


@pytest.mark.skipif(not HUB_VAULT.is_dir(), reason="needs ../shared/data (the hub vault)")
def test_the_rule_draws_the_stored_sample_again() -> None:
    stored = json.loads(SAMPLE.read_text(encoding="utf-8"))["paths"]
    assert hub.draw_sample(hub.read_vault(HUB_VAULT)) == stored


@pytest.mark.skipif(not HUB_VAULT.is_dir(), reason="needs ../shared/data (the hub vault)")
def test_every_expected_heading_is_a_heading_of_its_note_as_askvault_reads_it() -> None:
    for q in json.loads(QUESTIONS.read_text(encoding="utf-8")):
        if q["heading"] is None:
            continue
        text = (HUB_VAULT / q["path"]).read_text(encoding="utf-8")
        headings = {h.text for h in parse_note(q["path"], text).headings}
        assert q["heading"] in headings, (q["path"], q["heading"])
