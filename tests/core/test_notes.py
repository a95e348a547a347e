"""Specs for askvault.core.notes.parse_note."""

from __future__ import annotations

from pathlib import Path

import pytest

from askvault.core.links import build_link_index, resolve_link
from askvault.core.notes import parse_note

HELP_VAULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "vaults" / "obsidian-help-en"


def test_parse_note_reads_frontmatter_and_body_start() -> None:
    text = "---\ntitle: X\naliases: [One, Two]\ntype: concept\n---\n# Heading\nBody [[Link]]\n"
    note = parse_note("folder/My Note.md", text)
    assert note.path == "folder/My Note.md"
    assert note.title == "My Note"
    assert note.frontmatter["title"] == "X"
    assert note.aliases == ("One", "Two")
    assert note.type == "concept"
    assert note.body == "# Heading\nBody [[Link]]\n"
    assert note.body_start_line == 6
    assert note.headings[0].line == 6
    assert note.links[0].target == "Link" and note.links[0].line == 7
    assert note.problems == ()


def test_parse_note_drops_bom() -> None:
    note = parse_note("a.md", "\ufeff---\ntags: x\n---\nBody")
    assert note.tags == ("x",)
    assert note.body == "Body"
    assert note.problems == ()


def test_parse_note_normalises_crlf_without_moving_lines() -> None:
    note = parse_note("a.md", "---\r\naliases: A\r\n---\r\n# H\r\ntext\r\n")
    assert note.aliases == ("A",)
    assert note.body == "# H\ntext\n"
    assert note.body_start_line == 4
    assert note.headings[0].line == 4
    assert "\r" not in note.body


def test_parse_note_records_malformed_yaml_and_still_indexes_body() -> None:
    note = parse_note("a.md", "---\ntitle: [unclosed\nfoo: : bar\n---\nThe body.\n")
    assert note.frontmatter == {}
    assert note.body == "The body.\n"
    assert note.body_start_line == 5
    assert len(note.problems) == 1 and "invalid YAML" in note.problems[0]


def test_parse_note_never_executes_yaml_tags(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = f'---\nx: !!python/object/apply:os.system ["touch {marker}"]\n---\nBody\n'
    note = parse_note("a.md", text)
    assert not marker.exists()
    assert note.frontmatter == {}
    assert note.body == "Body\n"
    assert note.problems and "invalid YAML" in note.problems[0]


def test_parse_note_records_frontmatter_that_is_not_a_mapping() -> None:
    note = parse_note("a.md", "---\n- a\n- b\n---\nBody")
    assert note.frontmatter == {}
    assert note.body == "Body"
    assert "expected key: value pairs" in note.problems[0]


def test_parse_note_treats_first_line_brace_as_body() -> None:
    text = '{\n"a": 1\n}\nText'
    note = parse_note("a.md", text)
    assert note.frontmatter == {}
    assert note.body == text
    assert note.body_start_line == 1
    assert note.problems == ()


def test_parse_note_treats_unterminated_frontmatter_as_body() -> None:
    text = "---\ntitle: x\n\n# Heading\n"
    note = parse_note("a.md", text)
    assert note.body == text
    assert note.body_start_line == 1
    assert note.headings[0].line == 4
    assert "never closed" in note.problems[0]


def test_parse_note_handles_empty_and_frontmatter_only_notes() -> None:
    empty = parse_note("empty.md", "")
    assert empty.body == "" and empty.headings == () and empty.links == () and empty.problems == ()
    only = parse_note("only.md", "---\n---\n")
    assert only.frontmatter == {} and only.body == "" and only.problems == ()


def test_parse_note_keeps_unicode() -> None:
    note = parse_note(
        "日本/メモ.md", "---\naliases: [Café ☕]\n---\n# 見出し\n本文 [[東京]] #日本語\n"
    )
    assert note.title == "メモ"
    assert note.aliases == ("Café ☕",)
    assert note.headings[0].text == "見出し"
    assert note.links[0].target == "東京"
    assert note.tags == ("日本語",)


def test_parse_note_makes_frontmatter_json_safe() -> None:
    note = parse_note("a.md", "---\ndate: 2024-05-01\n1: one\nblob: !!binary aGVsbG8=\n---\n")
    assert note.frontmatter == {"date": "2024-05-01", "1": "one", "blob": "<5 bytes>"}


def test_parse_note_rejects_yaml_alias_bombs() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]")
    note = parse_note("a.md", "---\n" + "\n".join(lines) + "\n---\nBody")
    assert note.frontmatter == {}
    assert "too large" in note.problems[0]
    assert note.body == "Body"


def test_parse_note_ignores_headings_in_code_fences() -> None:
    body = "# Real\n```\n# not a heading\n```\n  - item\n    ~~~\n    ## also not\n    ~~~\n## Real two ##\n#tag\n"
    note = parse_note("a.md", body)
    assert [(h.level, h.text, h.line) for h in note.headings] == [
        (1, "Real", 1),
        (2, "Real two", 9),
    ]


def test_parse_note_does_not_count_yaml_comments_as_headings() -> None:
    note = parse_note("a.md", "---\n# a YAML comment\nk: v\n---\n# Title\n")
    assert [h.text for h in note.headings] == ["Title"]
    assert note.headings[0].line == 5


def test_parse_note_normalises_aliases_tags_sources_related() -> None:
    text = (
        "---\nalias: Solo\ntag: '#one, two'\nsources: raw/a.pdf\n"
        "related: [[Other]]\n---\nText #three and #one, `#code` [[P#notag]] #1984 #y1984\n"
        "```\n#fenced\n```\n"
    )
    note = parse_note("a.md", text)
    assert note.aliases == ("Solo",)
    assert note.tags == ("one", "two", "three", "y1984")
    assert note.sources == ("raw/a.pdf",)
    # An unquoted [[Other]] in YAML is a nested list; it is read back as the wikilink.
    assert note.related == ("[[Other]]",)


def test_parse_note_reads_tag_lists_and_legacy_comma_strings() -> None:
    note = parse_note("a.md", "---\ntags: [a, '#b', nested/c]\naliases: x, y\n---\n")
    assert note.tags == ("a", "b", "nested/c")
    assert note.aliases == ("x", "y")


def test_parse_note_finds_block_ids_outside_code() -> None:
    text = "Para one ^first\n![[img.png]]^second\n`x ^nope`\n```\ncode ^nope2\n```\n2^10\n"
    assert parse_note("a.md", text).block_ids == ("first", "second")


def test_parse_note_reports_link_lines_in_the_file() -> None:
    note = parse_note("a.md", "---\na: 1\n---\n\n[[X]]\n")
    assert note.links[0].line == 5


@pytest.mark.shared_data
@pytest.mark.skipif(not HELP_VAULT.is_dir(), reason="../shared/data vault not present")
def test_parse_note_reads_the_obsidian_help_vault() -> None:
    notes = {}
    for file in sorted(HELP_VAULT.rglob("*.md")):
        path = file.relative_to(HELP_VAULT).as_posix()
        notes[path] = parse_note(path, file.read_text(encoding="utf-8"))
    assert len(notes) == 173
    assert all(note.problems == () for note in notes.values())
    index = build_link_index((path, note.aliases) for path, note in notes.items())
    # Links (not embeds): the vault's attachments are not in the data set.
    links = [(path, link) for path, note in notes.items() for link in note.links if not link.embed]
    unresolved = [
        link.raw for path, link in links if resolve_link(link.target, index, source=path) is None
    ]
    assert len(links) == 1523
    # Four are the help's own "[[Example]]" samples, one a missing screenshot.
    assert len(unresolved) == 5


def test_parse_note_finds_headings_on_the_first_line_and_after_indent() -> None:
    text = "# First\ntext # not\n   ### Three spaces #\n    # four spaces\n#\n##Glued"
    note = parse_note("a.md", text)
    assert [(h.level, h.text, h.line) for h in note.headings] == [
        (1, "First", 1),
        (3, "Three spaces", 3),
    ]
    assert note.tags == ()
