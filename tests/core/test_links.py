"""Specs for askvault.core.links: wikilink extraction, resolution, heading matching."""

from __future__ import annotations

import pytest

from askvault.core.links import (
    build_link_index,
    code_fence_lines,
    extract_links,
    fenced_blocks,
    heading_matches,
    link_words,
    links_as_words,
    mask_code,
    resolve_link,
    slugify_heading,
    unique_targets,
)
from askvault.records import Heading


def targets(text: str) -> list[str]:
    return [link.target for link in extract_links(text)]


def test_extract_links_reads_every_form() -> None:
    text = "[[A]] [[B|label]] [[C#Heading]] [[D#^block-1]] ![[E]] [[folder/F]] [[G.md]] [[#Local]]"
    links = extract_links(text)
    assert [link.target for link in links] == ["A", "B", "C", "D", "E", "folder/F", "G", ""]
    assert links[1].label == "label"
    assert links[2].heading == "Heading" and links[2].block is None
    assert links[3].block == "block-1" and links[3].heading is None
    assert links[4].embed and not links[0].embed
    assert links[7].heading == "Local"
    assert links[0].raw == "[[A]]" and links[4].raw == "![[E]]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see [[Folder/Page.md|the page]] now", "see the page now"),
        ("see [[Folder/Page#Heading]] now", "see Page now"),
        ("see [[#Heading only]] now", "see Heading only now"),
        ("see ![[Pics/cat.png]] now", "see cat.png now"),
        ("see [[A\\|label]] in a table", "see label in a table"),
        ("an empty [[]] stays", "an empty [[]] stays"),
        ("no link at all", "no link at all"),
    ],
)
def test_links_as_words_says_what_each_link_says(text: str, expected: str) -> None:
    assert links_as_words(text) == expected
    for link in extract_links(text):
        assert link_words(link) in expected


def test_extract_links_label_reports_target_not_label() -> None:
    (link,) = extract_links("see [[Real page|what the reader sees]]")
    assert link.target == "Real page"
    assert link.label == "what the reader sees"


def test_extract_links_handles_escaped_pipe_in_tables() -> None:
    (link,) = extract_links("| col | [[Page\\|shown]] |")
    assert link.target == "Page"
    assert link.label == "shown"


def test_extract_links_ignores_inline_code_of_any_length() -> None:
    text = "`[[A]]` and ``x [[B]] ` y`` and ```[[C]]``` but [[D]]"
    assert targets(text) == ["D"]


def test_extract_links_ignores_fenced_code() -> None:
    text = "[[A]]\n```md\n[[B]]\n```\n~~~\n[[C]]\n~~~\n- item\n  ```\n  [[E]]\n  ```\n[[D]]"
    assert targets(text) == ["A", "D"]


def test_extract_links_treats_unclosed_fence_as_code_to_the_end() -> None:
    assert targets("[[A]]\n```\n[[B]]\n[[C]]") == ["A"]


def test_extract_links_ignores_escaped_links_but_not_escaped_backslash() -> None:
    assert targets("\\[[A]] \\\\[[B]]") == ["B"]


def test_extract_links_ignores_links_inside_markdown_link_text() -> None:
    assert targets("[see [[A]] here](https://example.com) and [[B]]") == ["B"]


def test_extract_links_keeps_order_and_duplicates_with_lines() -> None:
    links = extract_links("[[B]]\n\n[[A]] [[b]]\n`x`\n[[A]]")
    assert [link.target for link in links] == ["B", "A", "b", "A"]
    assert [link.line for link in links] == [1, 3, 3, 5]


def test_extract_links_skips_empty_brackets() -> None:
    assert targets("[[]] [[|x]] [[ ]]") == []


def test_unique_targets_keeps_first_per_target_heading_block() -> None:
    links = extract_links("[[A]] [[a]] [[A#H]] [[A#H|x]] [[A#^b]] [[B]]")
    assert [link.raw for link in unique_targets(links)] == [
        "[[A]]",
        "[[A#H]]",
        "[[A#^b]]",
        "[[B]]",
    ]


def test_mask_code_keeps_offsets_and_lines() -> None:
    text = "a `code` b\n```\nx\n```\nc"
    masked = mask_code(text)
    assert len(masked) == len(text)
    assert masked.count("\n") == text.count("\n")
    assert "code" not in masked and masked.startswith("a ") and masked.endswith("c")


NOTES = [
    ("Home.md", ()),
    ("A.md", ("Alpha", "First letter")),
    ("sub/A.md", ()),
    ("deep/er/B.md", ()),
    ("zz/B.md", ()),
    ("aa/B.md", ()),
    ("x/Café.md", ()),
    ("x/Notes/Topic.md", ()),
    ("img/pic.png", ()),
    ("other/Beta.md", ("Alpha",)),
]


@pytest.fixture
def index():  # type: ignore[no-untyped-def]
    return build_link_index(NOTES)


def test_resolve_link_prefers_exact_path(index) -> None:  # type: ignore[no-untyped-def]
    assert resolve_link("sub/A", index) == "sub/A.md"
    assert resolve_link("sub/A.md", index) == "sub/A.md"
    assert resolve_link("A", index) == "A.md"


def test_resolve_link_ties_go_to_shortest_path_then_alphabetical(index) -> None:  # type: ignore[no-untyped-def]
    # aa/B.md and zz/B.md are equally short: alphabetical wins; deep/er/B.md is longer.
    assert resolve_link("B", index) == "aa/B.md"


def test_resolve_link_is_case_and_normalisation_insensitive(index) -> None:  # type: ignore[no-untyped-def]
    assert resolve_link("home", index) == "Home.md"
    assert resolve_link("SUB/a", index) == "sub/A.md"
    decomposed = "Cafe\u0301"  # e + combining acute: NFD spelling of Café
    assert resolve_link(decomposed, index) == "x/Café.md"


def test_resolve_link_falls_back_to_alias(index) -> None:  # type: ignore[no-untyped-def]
    assert resolve_link("first letter", index) == "A.md"
    # Two notes share the alias: the shorter path wins.
    assert resolve_link("Alpha", index) == "A.md"


def test_resolve_link_matches_partial_folder_paths(index) -> None:  # type: ignore[no-untyped-def]
    assert resolve_link("Notes/Topic", index) == "x/Notes/Topic.md"
    assert resolve_link("er/B", index) == "deep/er/B.md"
    assert resolve_link("nope/Topic", index) is None


def test_resolve_link_finds_attachments_by_full_name(index) -> None:  # type: ignore[no-untyped-def]
    assert resolve_link("pic.png", index) == "img/pic.png"
    assert resolve_link("pic", index) is None


def test_resolve_link_relative_and_same_note(index) -> None:  # type: ignore[no-untyped-def]
    assert resolve_link("../Home", index, source="sub/A.md") == "Home.md"
    assert resolve_link("./A", index, source="sub/A.md") == "sub/A.md"
    assert resolve_link("", index, source="sub/A.md") == "sub/A.md"
    assert resolve_link("", index) is None


def test_resolve_link_returns_none_for_missing(index) -> None:  # type: ignore[no-untyped-def]
    assert resolve_link("Missing page", index) is None


def test_resolve_link_finds_every_name_and_alias_at_vault_scale() -> None:
    # Speed is bench/answer_path_bench.py's to measure, not a timed assert's.
    notes = [(f"folder{i % 50}/sub{i % 7}/Note {i}.md", (f"alias {i}",)) for i in range(6500)]
    index = build_link_index(notes)
    found = sum(
        resolve_link(name, index) is not None
        for i in range(40_000)
        for name in ((f"note {i % 6500}" if i % 3 else f"Alias {i % 6500}"),)
    )
    assert found == 40_000


HEADINGS = (
    Heading(1, "Intro", 1),
    Heading(2, "Setup: the basics", 3),
    Heading(2, "Details", 5),
    Heading(1, "Other", 7),
    Heading(2, "Details", 9),
    Heading(3, "How large can it be?", 11),
    Heading(3, "`hasTag()`", 13),
)


def test_heading_matches_ignores_case_punctuation_and_spacing() -> None:
    assert heading_matches("setup  the basics", HEADINGS) == HEADINGS[1]
    assert heading_matches("Setup: the basics", HEADINGS) == HEADINGS[1]
    assert heading_matches("How large can it be", HEADINGS) == HEADINGS[5]
    assert heading_matches("hasTag", HEADINGS) == HEADINGS[6]
    assert heading_matches("Nope", HEADINGS) is None
    assert heading_matches("", HEADINGS) is None


def test_heading_matches_nested_path_prefers_heading_under_parent() -> None:
    assert heading_matches("Details", HEADINGS) == HEADINGS[2]
    assert heading_matches("Other#Details", HEADINGS) == HEADINGS[4]
    assert heading_matches("Intro#Details", HEADINGS) == HEADINGS[2]
    # The parent part is a preference, the last part is what must match.
    assert heading_matches("Missing#Details", HEADINGS) == HEADINGS[2]


def test_slugify_heading_collapses_link_punctuation() -> None:
    assert slugify_heading("  Foo: [bar] | ^baz  ") == "foo bar baz"
    assert slugify_heading("Ünïcode Title") == slugify_heading("ünïcode title")


def test_mask_code_with_precomputed_fences_matches_plain_call() -> None:
    text = "a `x` [[A]]\n~~~\n[[B]]\n~~~\n``\n[[C]]\n``\n\n`open\n\nclose`"
    blocks = fenced_blocks(text.split("\n"))
    assert mask_code(text, blocks) == mask_code(text)
    assert "[[B]]" not in mask_code(text) and "[[C]]" not in mask_code(text)
    assert "open" in mask_code(text) and "close" in mask_code(text)


def test_mask_code_returns_text_without_backticks_or_fences_unchanged() -> None:
    text = "plain [[A]] text ~~ not a fence"
    assert mask_code(text) is text


def test_extract_links_accepts_a_precomputed_mask_and_line_offset() -> None:
    text = "x\n`[[Hidden]]` [[A]]\n![[B]]"
    links = extract_links(text, masked=mask_code(text), line_offset=10)
    assert [(link.target, link.embed, link.line) for link in links] == [
        ("A", False, 12),
        ("B", True, 13),
    ]
    assert extract_links("no links here") == []


def test_extract_links_reads_embeds_next_to_links_and_escapes() -> None:
    links = extract_links("[[a]]![[b]] \\![[c]] \\\\![[d]] !![[e]]")
    assert [(link.target, link.embed, link.raw) for link in links] == [
        ("a", False, "[[a]]"),
        ("b", True, "![[b]]"),
        ("d", True, "![[d]]"),
        ("e", True, "![[e]]"),
    ]


def test_code_fence_lines_accepts_precomputed_blocks() -> None:
    lines = ["a", "```", "x", "```", "b", "~~~", "open"]
    blocks = fenced_blocks(lines)
    assert blocks == [(1, 3), (5, 6)]
    assert code_fence_lines(lines, blocks) == code_fence_lines(lines)
    assert code_fence_lines(lines) == [False, True, True, True, False, True, True]


# Code blocks by Markdown rules: indented blocks and HTML <pre> are code, links in them
# are not links (issue 12).


def _targets(text: str) -> list[str]:
    return [link.target for link in extract_links(text)]


def test_link_in_an_indented_code_block_is_not_a_link() -> None:
    assert _targets("text\n\n    [[Code]]\n    more [[Code2]]\n\nafter [[A]]") == ["A"]


def test_tab_indented_code_block_at_the_top_is_code() -> None:
    assert _targets("\t[[Code]]\nnext") == []


def test_blank_lines_inside_an_indented_code_block_keep_it_open() -> None:
    assert _targets("intro\n\n    [[One]]\n\n    [[Two]]\nback [[B]]") == ["B"]


def test_indented_line_right_after_a_paragraph_continues_it() -> None:
    """An indented code block cannot interrupt a paragraph (lazy continuation)."""
    assert _targets("para\n    [[Lazy]]\n") == ["Lazy"]


def test_indented_text_inside_a_list_item_continues_the_item() -> None:
    assert _targets("- item\n\n    [[Cont]]\n") == ["Cont"]
    assert _targets("1. first\n    - nested [[Nested]]\n") == ["Nested"]
    assert _targets("- a\n\t- tab nested [[Tab]]\n") == ["Tab"]


def test_indented_code_after_a_list_has_ended_is_code() -> None:
    assert _targets("- item\n\nparagraph\n\n    [[Code]]\n") == []


def test_indented_lines_in_a_fenced_block_stay_fenced() -> None:
    assert _targets("```\n    [[InFence]]\n```\n\n[[After]]") == ["After"]


def test_link_in_an_html_pre_element_is_not_a_link() -> None:
    assert _targets("<pre>\n[[Pre]]\n</pre>\n[[B]]") == ["B"]
    assert _targets('x <PRE class="a">[[One line]]</PRE> [[C]]') == ["C"]


def test_masking_code_keeps_offsets_and_line_numbers() -> None:
    text = "a\n\n    [[Code]]\n<pre>[[P]]\n</pre>\n[[Z]]"
    masked = mask_code(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    (link,) = extract_links(text)
    assert link.target == "Z" and link.line == 6


def test_page_link_uses_the_file_name_unless_another_note_has_it() -> None:
    from askvault.core.links import page_link

    assert page_link("garden/Roses.md") == "[[Roses]]"
    assert page_link("garden/Roses.md", "Pruning") == "[[Roses#Pruning]]"
    assert page_link("garden/Roses.md", None, {"roses.md"}) == "[[garden/Roses]]"
    assert page_link("garden/ROSES.MD", None, {"roses.md"}) == "[[garden/ROSES]]"
    assert page_link("Top.md", None, {"roses.md"}) == "[[Top]]"
