"""The ownership marker of askvault's answer notes (core/ownership.py, issue 15 16e)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from askvault.core.notices import what_it_says
from askvault.core.ownership import cited_paths_of, owned_note, question_stems, sign_note

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
NOTE = (
    "---\n"
    'question: "How do embeds work?"\n'
    "status: answered\n"
    'asked: "2026-12-01T10:00:00+01:00"\n'
    "sources:\n"
    '  - "[[Embeds]]"\n'
    "---\n"
    "> [!question]\n> How do embeds work?\n\nAn embed shows another note inline [[Embeds]].\n\n"
    "## Citation report\n\n"
    "- `Embeds` — **resolved** → `Embeds.md`\n"
    "- `Links` — **resolved** → `notes/Links.md` — backs no sentence it cites; shown as plain text\n"
    "- `Gone` — **broken** (no note of that name); shown as plain text\n"
)


def test_signed_note_matches_golden_and_proves_itself() -> None:
    signed = sign_note(NOTE, "How do embeds work")
    path = GOLDEN / "answer_signed_frontmatter.md"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(signed, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == signed
    owned = owned_note(signed, "How do embeds work")
    assert owned is not None and owned.question_stem == "How do embeds work"
    assert owned.status == "answered" and owned.cited == ("Embeds.md",)


def test_signing_again_replaces_the_marker_and_what_it_says_ignores_it() -> None:
    once = sign_note(NOTE, "Q")
    twice = sign_note(once.replace("status: answered", "status: stale"), "Q")
    assert twice.count("askvault: ") == 1
    assert owned_note(twice, "Q") is not None and owned_note(twice, "Q").status == "stale"
    assert what_it_says(once) == what_it_says(NOTE)


@pytest.mark.parametrize(
    "edit",
    [
        ("An embed shows", "An embed displays"),  # the body
        ("status: answered", "status: answered\ntags: [mine]"),  # a property added
        ("\n## Citation report", "\nmy note\n## Citation report"),
    ],
)
def test_an_edit_anywhere_but_the_marker_makes_the_note_the_users(edit: tuple[str, str]) -> None:
    signed = sign_note(NOTE, "Q")
    assert owned_note(signed.replace(*edit), "Q") is None


def test_a_marker_is_bound_to_its_question_name() -> None:
    signed = sign_note(NOTE, "Q")
    assert owned_note(signed, "Q (2)") is not None  # a re-asked question's answer
    assert owned_note(signed, "Q copy") is None  # copied to another name
    assert owned_note(signed, "Other") is None
    named = sign_note(NOTE, "Q (2)")  # a question itself named `Q (2)`
    assert owned_note(named, "Q (2)").question_stem == "Q (2)"
    assert question_stems("Q (3)") == ["Q (3)", "Q"] and question_stems("Q") == ["Q"]


def test_made_up_malformed_or_missing_markers_are_not_trusted() -> None:
    assert owned_note(NOTE, "Q") is None
    made_up = NOTE.replace("---\n>", 'askvault: "v1:' + "a" * 64 + '"\n---\n>', 1)
    assert owned_note(made_up, "Q") is None
    assert owned_note(NOTE.replace("---\n>", 'askvault: "yes"\n---\n>', 1), "Q") is None
    assert owned_note("no frontmatter\n", "Q") is None
    assert sign_note("no frontmatter\n", "Q") == "no frontmatter\n"


def test_cited_paths_are_read_from_the_rendered_citation_reports() -> None:
    # The golden answer notes are what answer_note.py renders: the parser must follow them.
    for name, cited in (
        ("resolved", ("Embeds.md",)),
        ("heading", ("Embeds.md",)),
        ("broken", ("Links.md",)),
    ):
        body = (GOLDEN / f"answer_{name}.md").read_text(encoding="utf-8")
        assert cited_paths_of(body) == cited, name
    assert cited_paths_of("no report\n") == ()


def test_obsidian_rewriting_the_yaml_of_the_properties_keeps_the_note_ours() -> None:
    signed = sign_note(NOTE, "Q")
    marker = next(line for line in signed.splitlines() if line.startswith("askvault:"))
    # What Obsidian's properties editor writes back: its own quoting, order and list style.
    rewritten = (
        "---\n"
        "status: answered\n"
        "question: How do embeds work?\n"
        "asked: 2026-12-01T10:00:00+01:00\n"
        "sources:\n"
        '  - "[[Embeds]]"\n'
        f"{marker}\n"
        "---\n" + signed.split("\n---\n", 1)[1]
    )
    assert owned_note(rewritten, "Q") is not None


def test_only_an_ignored_refresh_property_is_allowed_beside_the_marker() -> None:
    from askvault.core.ownership import properties_of, without_property

    signed = sign_note(NOTE, "Q")
    asked = signed.replace("status: answered\n", "status: answered\nrefresh: true\n")
    assert owned_note(asked, "Q") is None
    assert owned_note(asked, "Q", ignore=("refresh",)) is not None
    assert properties_of(asked)["refresh"] is True
    assert without_property(asked, "refresh") == signed
    edited = asked.replace("An embed shows", "An embed displays")
    assert owned_note(edited, "Q", ignore=("refresh",)) is None


def test_a_yaml_alias_bomb_is_not_expanded() -> None:
    bomb = '---\na: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\naskvault: "v1:' + "0" * 64 + '"\n---\n'
    assert owned_note(bomb, "Q") is None
    assert sign_note(bomb, "Q") == bomb
