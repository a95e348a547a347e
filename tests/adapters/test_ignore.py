"""Specs for the ignore rules: which vault paths are notes, which are ignored and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from askvault.adapters.ignore import (
    IgnoreRules,
    folder_ignore_reason,
    ignore_reason,
    is_note_path,
)
from askvault.adapters.vault import load_ignore_rules

RULES = IgnoreRules()


def rules_with_app_json(tmp_path: Path, content: str | bytes, **kwargs: object) -> IgnoreRules:
    (tmp_path / ".obsidian").mkdir(exist_ok=True)
    data = content.encode() if isinstance(content, str) else content
    (tmp_path / ".obsidian" / "app.json").write_bytes(data)
    return load_ignore_rules(tmp_path, **kwargs)  # type: ignore[arg-type]


def filters(tmp_path: Path, *entries: object) -> IgnoreRules:
    return rules_with_app_json(tmp_path, json.dumps({"userIgnoreFilters": list(entries)}))


@pytest.mark.parametrize(
    "path",
    ["Note.md", "folder/Note.MD", "a/b/c.Md", "Ünïcödé 🎉.md", "queries/x.md"],
)
def test_is_note_path_accepts_md_in_any_case(path: str) -> None:
    assert is_note_path(path)


@pytest.mark.parametrize("path", ["img.png", "doc.markdown", "canvas.canvas", "md", "x.md/"])
def test_is_note_path_rejects_attachments_and_markdown_extension(path: str) -> None:
    assert not is_note_path(path)


@pytest.mark.parametrize(
    "path",
    [
        ".obsidian/workspace.md",
        ".trash/old.md",
        ".git/x.md",
        "a/.hidden/b/c.md",
        ".stversions/n.md",
        ".hidden-note.md",
        "deep/er/.dotnote.md",
    ],
)
def test_dot_files_and_folders_are_ignored_at_any_depth(path: str) -> None:
    assert ignore_reason(path, RULES) == "hidden (name starts with '.')"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".syncthing.Note.md.tmp", "Syncthing temporary file"),
        ("a/~syncthing~Note.md.tmp", "Syncthing temporary file"),
        ("Note.sync-conflict-20240101-120000-ABCDEFG.md", "Syncthing conflict copy"),
        ("Note (conflicted copy 2024-01-01).md", "Obsidian Sync, Dropbox or Nextcloud"),
        ("Note (Bob's conflicted copy 2024-01-01).md", "Obsidian Sync, Dropbox or Nextcloud"),
        ("Note (Conflicted copy MyMacBook 202411281430).md", "Obsidian Sync, Dropbox or Nextcloud"),
        ("Note (conflict 2024-01-01).md", "sync conflict copy"),
        ("Note (SFConflict bob 2024-01-01).md", "sync conflict copy"),
        ("Note_conflict-20240101-120000.md", "ownCloud/Nextcloud conflict copy"),
        ("Note-DESKTOP-1A2B3C4.md", "OneDrive conflict copy"),
        ("Note-LAPTOP-Q9Z8Y7X-2.md", "OneDrive conflict copy"),
        ("Note.md.!sync", "Resilio Sync partial file"),
        (".Note.md.icloud", "iCloud placeholder (not downloaded)"),
        ("~$Note.md", "Office lock file"),
        (".#Note.md", "editor lock or autosave file"),
        ("#Note.md#", "editor lock or autosave file"),
        (".Note.md.swp", "editor swap file"),
        ("Note.md.tmp", "temporary file"),
        ("Note.md~", "temporary file"),
        (".askvault-tmp-0123abcd", "askvault temporary file"),
    ],
)
def test_sync_temp_and_conflict_files_are_ignored_with_their_tool_named(
    path: str, expected: str
) -> None:
    reason = ignore_reason(path, RULES)
    assert reason is not None and expected in reason


@pytest.mark.parametrize(
    "path",
    [
        "Desktop notes.md",
        "My conflict resolution.md",
        "Note (1).md",
        "Resolving conflicts.md",
        "DESKTOP-setup.md",
        "tmp/notes.md",
        "a~b.md",
    ],
)
def test_ordinary_names_resembling_sync_patterns_are_kept(path: str) -> None:
    assert ignore_reason(path, RULES) is None


def test_internal_queries_folder_is_ignored_but_lookalikes_are_not() -> None:
    assert "queries/" in (ignore_reason("queries/answers/A.md", RULES) or "")
    assert ignore_reason("queries.md", RULES) is None
    assert ignore_reason("queriesX/a.md", RULES) is None
    assert ignore_reason("notes/queries/a.md", RULES) is None


def test_internal_folders_are_configurable_and_may_be_nested(tmp_path: Path) -> None:
    rules = load_ignore_rules(tmp_path, internal_folders=("system/ask/",))
    assert ignore_reason("system/ask/inbox/q.md", rules) is not None
    assert ignore_reason("queries/answers/A.md", rules) is None


def test_internal_folder_is_pruned_without_being_reported() -> None:
    assert folder_ignore_reason("queries", RULES) == (
        "askvault folder queries/ (not knowledge until moved out)",
        False,
    )
    assert folder_ignore_reason(".git", RULES) == ("hidden (name starts with '.')", False)


def test_user_filter_prefix_matches_as_plain_string_prefix_like_obsidian(tmp_path: Path) -> None:
    rules = filters(tmp_path, "Archive/", "Templates")
    reason = ignore_reason("Archive/2020/old.md", rules)
    assert reason == "excluded in Obsidian settings ('Archive/')"
    assert ignore_reason("Templates/Daily.md", rules) is not None
    assert ignore_reason("Templates.md", rules) is not None  # prefix, as Obsidian does
    assert ignore_reason("TemplatesOld/x.md", rules) is not None
    assert ignore_reason("Archive.md", rules) is None
    assert ignore_reason("notes/Archive/x.md", rules) is None
    assert ignore_reason("archive/x.md", rules) is None  # case-sensitive


def test_user_filter_prefix_folder_is_pruned_and_reported(tmp_path: Path) -> None:
    rules = filters(tmp_path, "Archive/")
    assert folder_ignore_reason("Archive", rules) == (
        "excluded in Obsidian settings ('Archive/')",
        True,
    )
    assert folder_ignore_reason("Archived", rules) is None


def test_user_filter_regex_in_slashes_is_searched_in_the_path(tmp_path: Path) -> None:
    rules = filters(tmp_path, r"/\.excalidraw\.md$/", "/^Daily/\\d{4}/")
    assert ignore_reason("drawings/Plan.excalidraw.md", rules) == (
        r"excluded in Obsidian settings ('/\\.excalidraw\\.md$/')"
    )
    assert ignore_reason("Daily/2024-01-01.md", rules) is not None
    assert ignore_reason("Daily/notes.md", rules) is None
    assert ignore_reason("Plan.md", rules) is None
    # a regex is never used to prune a folder: it may match only some files below it
    assert folder_ignore_reason("Daily", rules) is None


def test_invalid_user_regex_is_reported_and_other_filters_still_apply(tmp_path: Path) -> None:
    rules = filters(tmp_path, "/([unclosed/", "Archive/")
    assert len(rules.problems) == 1 and "not a valid regex" in rules.problems[0]
    assert ignore_reason("Archive/a.md", rules) is not None


def test_non_string_and_empty_user_filters_are_dropped(tmp_path: Path) -> None:
    rules = filters(tmp_path, 42, "", "  ", "Archive/")
    assert rules.user_prefixes == ("Archive/",)
    assert len(rules.problems) == 1 and "42" in rules.problems[0]
    assert ignore_reason("Note.md", rules) is None


@pytest.mark.parametrize(
    "content",
    ["{not json", "[1, 2]", '{"userIgnoreFilters": "Archive/"}', b"\xff\xfe{\x00"],
)
def test_malformed_app_json_is_ignored_and_reported(tmp_path: Path, content: str | bytes) -> None:
    rules = rules_with_app_json(tmp_path, content)
    assert rules.user_prefixes == () and rules.user_regexes == ()
    assert len(rules.problems) == 1 and ".obsidian/app.json" in rules.problems[0]


def test_missing_app_json_is_not_a_problem(tmp_path: Path) -> None:
    rules = load_ignore_rules(tmp_path)
    assert rules.problems == () and rules.user_prefixes == ()


def test_app_json_without_filters_or_with_a_bom_is_fine(tmp_path: Path) -> None:
    rules = rules_with_app_json(tmp_path, b'\xef\xbb\xbf{"userIgnoreFilters": ["A/"], "x": 1}')
    assert rules.problems == () and rules.user_prefixes == ("A/",)
    assert rules_with_app_json(tmp_path, '{"alwaysUpdateLinks": true}').problems == ()


def test_max_note_bytes_is_carried_on_the_rules(tmp_path: Path) -> None:
    assert load_ignore_rules(tmp_path, max_note_bytes=10).max_note_bytes == 10


@pytest.mark.parametrize(
    ("glob", "ignored", "kept"),
    [
        ("*.excalidraw.md", ["a.excalidraw.md", "x/y/b.excalidraw.md"], ["a.md"]),
        ("drafts", ["drafts/a.md", "x/drafts/b.md", "drafts"], ["drafts.md", "mydrafts/a.md"]),
        ("drafts/", ["drafts/a.md", "x/drafts/b.md"], ["drafts.md"]),
        ("Archive/**", ["Archive/a.md", "Archive/2020/b.md"], ["x/Archive/a.md"]),
        ("**/private/*.md", ["private/a.md", "x/y/private/b.md"], ["private.md"]),
        ("/Inbox/*.md", ["Inbox/a.md"], ["x/Inbox/a.md", "Inbox/sub/a.md"]),
        ("/drafts", ["drafts/a.md", "drafts"], ["x/drafts/a.md"]),
        ("/drafts/", ["drafts/a.md"], ["x/drafts/a.md", "drafts"]),
        ("note?.md", ["note1.md", "a/noteX.md"], ["note12.md"]),
        ("[!a]*.md", ["b.md"], ["a.md"]),
        # gitignore's escapes: `\` makes the next character itself; trailing spaces go.
        ("\\#*.md", ["#todo.md", "x/#a.md"], ["todo.md", "\\#todo.md"]),
        ("\\*.md", ["*.md", "x/*.md"], ["a.md", "\\a.md"]),
        ("\\!draft.md", ["!draft.md"], ["draft.md", "\\!draft.md"]),
        ("note\\?.md", ["note?.md"], ["note1.md"]),
        ("\\[x].md", ["[x].md"], ["x.md"]),
        ("[\\*?].md", ["*.md", "?.md"], ["a.md", "\\.md"]),
        ("[a\\-c].md", ["a.md", "-.md", "c.md"], ["b.md"]),
        ("drafts  ", ["drafts/a.md", "x/drafts/b.md"], ["drafts  /a.md", "drafts.md"]),
        ("drafts/ ", ["drafts/a.md"], ["drafts"]),
        ("draft\\ ", ["draft /a.md"], ["draft/a.md"]),
        ("back\\\\ ", ["back\\/a.md"], ["back\\ /a.md"]),
        ("/In/[!a]*.md", ["In/b.md"], ["In/a.md", "In/ab/c.md"]),
    ],
)
def test_configured_globs_follow_gitignore_like_rules(
    tmp_path: Path, glob: str, ignored: list[str], kept: list[str]
) -> None:
    rules = load_ignore_rules(tmp_path, extra_globs=[glob])
    for path in ignored:
        assert ignore_reason(path, rules) == f"matches ignore glob {glob!r}", path
    for path in kept:
        assert ignore_reason(path, rules) is None, path


def test_glob_matching_a_folder_prunes_it_and_is_reported(tmp_path: Path) -> None:
    rules = load_ignore_rules(tmp_path, extra_globs=["**/node_modules"])
    assert folder_ignore_reason("a/node_modules", rules) == (
        "matches ignore glob '**/node_modules'",
        True,
    )
