"""Specs for the vault filesystem adapter, on real temp folders."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import threading
import unicodedata
from pathlib import Path

import pytest

from askvault.adapters.vault import (
    APP_JSON_MAX_BYTES,
    TEMP_PREFIX,
    BinaryNote,
    OversizedNote,
    cleanup_temp_files,
    load_ignore_rules,
    move_to_free_name,
    read_note,
    resolve_inside,
    scan_vault,
    stat_note,
    write_atomic,
    write_new_file,
)
from askvault.errors import NoteUnreadable, PathOutsideVault, VaultError
from askvault.records import Skipped

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


def put(root: Path, rel: str, data: bytes | str = "# Note\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def scan(root: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    return scan_vault(root, load_ignore_rules(root, **kwargs))  # type: ignore[arg-type]


def note_paths(root: Path, **kwargs: object) -> list[str]:
    return [n.path for n in scan(root, **kwargs).notes]


def skipped(root: Path, **kwargs: object) -> dict[str, str]:
    return {s.path: s.reason for s in scan(root, **kwargs).skipped}


# ---- scanning


def test_scan_vault_lists_md_notes_sorted_with_stamps(vault: Path) -> None:
    put(vault, "b.md", "bb")
    put(vault, "a/z.md", "z")
    put(vault, "A.MD", "x")
    put(vault, "img.png", b"\x89PNG")
    put(vault, "doc.markdown", "no")
    result = scan(vault)
    assert [n.path for n in result.notes] == ["A.MD", "a/z.md", "b.md"]
    stamp = result.notes[2]
    st = os.stat(vault / "b.md")
    assert (stamp.size, stamp.mtime_ns, stamp.inode) == (2, st.st_mtime_ns, st.st_ino)
    assert result.skipped == []  # attachments are not reported


def test_scan_vault_does_not_descend_or_report_dot_folders(vault: Path) -> None:
    for rel in [".obsidian/a.md", ".trash/b.md", ".git/c.md", "x/.stversions/d.md", ".e.md"]:
        put(vault, rel)
    put(vault, "keep.md")
    result = scan(vault)
    assert [n.path for n in result.notes] == ["keep.md"]
    assert result.skipped == []


def test_scan_vault_skips_queries_folder_silently(vault: Path) -> None:
    put(vault, "queries/answers/A.md")
    put(vault, "queries/inbox/Q.md")
    put(vault, "A.md")
    result = scan(vault)
    assert [n.path for n in result.notes] == ["A.md"] and result.skipped == []


def test_scan_vault_reports_ignored_md_files_with_their_reason(vault: Path) -> None:
    put(vault, "Note.md")
    put(vault, "Note.sync-conflict-20240101-120000-ABCDEFG.md")
    put(vault, "sub/Note (conflicted copy 2024-01-01).md")
    put(vault, "sub/photo.sync-conflict-20240101-120000-ABCDEFG.png")  # attachment: silent
    assert note_paths(vault) == ["Note.md"]
    assert skipped(vault) == {
        "Note.sync-conflict-20240101-120000-ABCDEFG.md": "Syncthing conflict copy",
        "sub/Note (conflicted copy 2024-01-01).md": (
            "sync conflict copy (Obsidian Sync, Dropbox or Nextcloud)"
        ),
    }


def test_scan_vault_applies_user_ignore_filters_reporting_a_folder_once(vault: Path) -> None:
    put(vault, ".obsidian/app.json", json.dumps({"userIgnoreFilters": ["Archive/", "/secret/"]}))
    for i in range(5):
        put(vault, f"Archive/old{i}.md")
    put(vault, "my secret.md")
    put(vault, "kept.md")
    assert note_paths(vault) == ["kept.md"]
    assert skipped(vault) == {
        "Archive/": "excluded in Obsidian settings ('Archive/')",
        "my secret.md": "excluded in Obsidian settings ('/secret/')",
    }


def test_scan_vault_survives_malformed_app_json(vault: Path) -> None:
    put(vault, ".obsidian/app.json", "{oops")
    put(vault, "a.md")
    rules = load_ignore_rules(vault)
    assert rules.problems and [n.path for n in scan_vault(vault, rules).notes] == ["a.md"]


APP_JSON_FILTERS = json.dumps({"userIgnoreFilters": ["Private/"]})


def _rules_in_thread(vault: Path) -> tuple[str, ...]:
    """The rules' problems, read on a thread so a hang fails the test instead of blocking it."""
    found: list[tuple[str, ...]] = []
    reader = threading.Thread(
        target=lambda: found.append(load_ignore_rules(vault).problems), daemon=True
    )
    reader.start()
    reader.join(10)
    assert found, "reading .obsidian/app.json did not return"
    return found[0]


def test_app_json_symlink_to_dev_zero_is_not_read(vault: Path) -> None:
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian/app.json").symlink_to("/dev/zero")
    (problem,) = _rules_in_thread(vault)
    assert "outside the vault" in problem and "not applied" in problem


def test_app_json_fifo_does_not_hang_and_is_not_applied(vault: Path) -> None:
    (vault / ".obsidian").mkdir()
    os.mkfifo(vault / ".obsidian/app.json")
    (problem,) = _rules_in_thread(vault)
    assert "not a regular file" in problem


def test_app_json_symlink_to_a_file_outside_the_vault_is_not_followed(
    vault: Path,
    tmp_path: Path,
) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text(APP_JSON_FILTERS)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian/app.json").symlink_to(outside)
    rules = load_ignore_rules(vault)
    assert rules.user_prefixes == ()
    assert "outside the vault" in rules.problems[0]


def test_app_json_symlink_to_a_file_inside_the_vault_is_followed(vault: Path) -> None:
    put(vault, "config/app.json", APP_JSON_FILTERS)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian/app.json").symlink_to(vault / "config/app.json")
    rules = load_ignore_rules(vault)
    assert rules.user_prefixes == ("Private/",) and rules.problems == ()


def test_app_json_over_the_size_cap_is_not_read(vault: Path) -> None:
    put(
        vault,
        ".obsidian/app.json",
        '{"userIgnoreFilters": ["Private/"], "pad": "' + "x" * APP_JSON_MAX_BYTES + '"}',
    )
    rules = load_ignore_rules(vault)
    assert rules.user_prefixes == ()
    assert "oversized" in rules.problems[0] and "not applied" in rules.problems[0]


def test_app_json_that_is_a_folder_is_not_applied(vault: Path) -> None:
    (vault / ".obsidian/app.json").mkdir(parents=True)
    rules = load_ignore_rules(vault)
    assert rules.user_prefixes == () and "not applied" in rules.problems[0]


def test_scan_vault_applies_configured_globs(vault: Path) -> None:
    put(vault, "a.excalidraw.md")
    put(vault, "x/node_modules/pkg/readme.md")
    put(vault, "a.md")
    globs = ["*.excalidraw.md", "node_modules"]
    assert note_paths(vault, extra_globs=globs) == ["a.md"]
    assert skipped(vault, extra_globs=globs) == {
        "a.excalidraw.md": "matches ignore glob '*.excalidraw.md'",
        "x/node_modules/": "matches ignore glob 'node_modules'",
    }


def test_scan_vault_skips_oversized_notes_with_size_and_cap(vault: Path) -> None:
    put(vault, "big.md", "x" * 101)
    put(vault, "ok.md", "x" * 100)
    assert note_paths(vault, max_note_bytes=100) == ["ok.md"]
    assert skipped(vault, max_note_bytes=100) == {"big.md": "oversized (101 bytes > 100)"}


def test_scan_vault_skips_symlink_to_file_outside_vault(vault: Path, tmp_path: Path) -> None:
    outside = put(tmp_path, "outside/secret.md")
    (vault / "link.md").symlink_to(outside)
    assert note_paths(vault) == []
    assert skipped(vault) == {"link.md": "symlink outside vault"}


def test_scan_vault_skips_symlink_to_folder_outside_vault(vault: Path, tmp_path: Path) -> None:
    put(tmp_path, "outside/a.md")
    put(tmp_path, "outside/b.md")
    (vault / "ext").symlink_to(tmp_path / "outside")
    assert note_paths(vault) == []
    assert skipped(vault) == {"ext/": "symlink outside vault"}


def test_scan_vault_reports_symlink_to_parent_as_loop(vault: Path) -> None:
    put(vault, "sub/a.md")
    (vault / "sub" / "loop").symlink_to(vault / "sub")
    (vault / "root-loop").symlink_to(vault)
    assert note_paths(vault) == ["sub/a.md"]
    assert skipped(vault) == {"root-loop/": "symlink loop", "sub/loop/": "symlink loop"}


def test_scan_vault_reports_symlink_chain_loop(vault: Path) -> None:
    (vault / "a.md").symlink_to(vault / "b.md")
    (vault / "b.md").symlink_to(vault / "a.md")
    assert skipped(vault) == {"a.md": "symlink loop", "b.md": "symlink loop"}


def test_scan_vault_reports_a_symlink_loop_of_attachments_too(vault: Path) -> None:
    """A broken link is reported only for a note, a loop for any name (it may be a folder)."""
    (vault / "a.png").symlink_to(vault / "b.png")
    (vault / "b.png").symlink_to(vault / "a.png")
    assert skipped(vault) == {"a.png": "symlink loop", "b.png": "symlink loop"}


def test_scan_vault_reports_broken_symlink(vault: Path) -> None:
    (vault / "gone.md").symlink_to(vault / "nowhere.md")
    (vault / "gone.png").symlink_to(vault / "nowhere.png")
    assert skipped(vault) == {"gone.md": "broken symlink"}


def test_scan_vault_follows_file_symlink_inside_vault(vault: Path) -> None:
    put(vault, "real/Target.md", "hello")
    (vault / "Alias.md").symlink_to(Path("real") / "Target.md")
    result = scan(vault)
    assert [n.path for n in result.notes] == ["Alias.md", "real/Target.md"]
    assert result.notes[0].size == 5 and result.skipped == []
    assert read_note(vault, "Alias.md", 1000).text == "hello"


def test_scan_vault_does_not_follow_file_symlink_into_ignored_place(vault: Path) -> None:
    put(vault, ".trash/old.md")
    (vault / "old.md").symlink_to(vault / ".trash" / "old.md")
    assert note_paths(vault) == []
    assert skipped(vault) == {
        "old.md": "symlink to an ignored file (hidden (name starts with '.'))"
    }


def test_scan_vault_does_not_double_count_folder_symlink_inside_vault(vault: Path) -> None:
    put(vault, "real/a.md")
    (vault / "mirror").symlink_to(vault / "real")
    assert note_paths(vault) == ["real/a.md"]
    assert skipped(vault) == {
        "mirror/": "symlink to a folder inside the vault (not followed, as in Obsidian)"
    }


@pytest.mark.skipif(IS_ROOT, reason="root reads every folder whatever its mode")
def test_scan_vault_reports_unreadable_folder_and_goes_on(vault: Path) -> None:
    put(vault, "locked/a.md")
    put(vault, "b.md")
    (vault / "locked").chmod(0)
    try:
        assert note_paths(vault) == ["b.md"]
        assert skipped(vault) == {"locked/": "unreadable folder (Permission denied)"}
    finally:
        (vault / "locked").chmod(0o755)


@pytest.mark.skipif(IS_ROOT, reason="root reads every folder whatever its mode")
def test_scan_vault_refuses_an_unreadable_vault(vault: Path) -> None:
    """An unreadable subfolder is skipped; the vault itself unreadable is an error."""
    put(vault, "a.md")
    vault.chmod(0o300)
    try:
        with pytest.raises(VaultError, match="is unreadable: Permission denied"):
            scan(vault)
    finally:
        vault.chmod(0o755)


def test_scan_vault_refuses_a_missing_vault(tmp_path: Path) -> None:
    with pytest.raises(VaultError):
        scan(tmp_path / "nope")


def test_scan_vault_reports_a_fifo_named_md(vault: Path) -> None:
    os.mkfifo(vault / "pipe.md")
    assert skipped(vault) == {"pipe.md": "not a regular file"}
    with pytest.raises(NoteUnreadable, match="not a regular file"):
        read_note(vault, "pipe.md", 1000)


def test_scan_vault_keeps_emoji_and_255_byte_names(vault: Path) -> None:
    long_name = "é" * 126 + ".md"  # 252 + 3 = 255 bytes
    assert len(long_name.encode()) == 255
    put(vault, long_name, "long")
    put(vault, "📚 Reading/🎉 party.md", "emoji")
    assert note_paths(vault) == [long_name, "📚 Reading/🎉 party.md"]
    assert read_note(vault, long_name, 100).text == "long"
    assert read_note(vault, "📚 Reading/🎉 party.md", 100).text == "emoji"


def test_scan_vault_keeps_nfd_name_as_on_disk_so_it_still_opens(vault: Path) -> None:
    nfd = unicodedata.normalize("NFD", "Café.md")
    put(vault, nfd, "coffee")
    [stamp] = scan(vault).notes
    assert stamp.path == nfd and stamp.path != unicodedata.normalize("NFC", nfd)
    assert read_note(vault, stamp.path, 100).text == "coffee"


def test_scan_vault_skips_names_that_are_not_utf8(vault: Path) -> None:
    with open(os.path.join(os.fsencode(vault), b"bad\xff.md"), "wb") as f:
        f.write(b"x")
    put(vault, "ok.md")
    result = scan(vault)
    assert [n.path for n in result.notes] == ["ok.md"]
    assert [s.reason for s in result.skipped] == ["file name is not valid UTF-8"]


# ---- stat and read


def test_stat_note_returns_stamp_or_none_when_vanished(vault: Path) -> None:
    put(vault, "a.md", "abc")
    stamp = stat_note(vault, "a.md")
    assert stamp is not None and stamp.path == "a.md" and stamp.size == 3
    assert stat_note(vault, "missing.md") is None
    assert stat_note(vault, "a.md/child.md") is None
    (vault / "dir.md").mkdir()
    assert stat_note(vault, "dir.md") is None


def test_read_note_returns_text_hash_and_matching_stamp(vault: Path) -> None:
    raw = "# Title\n\nbody ✓\n".encode()
    put(vault, "n.md", raw)
    note = read_note(vault, "n.md", 1000)
    st = os.stat(vault / "n.md")
    assert note.text == "# Title\n\nbody ✓\n" and note.problems == ()
    assert note.content_hash == hashlib.sha256(raw).hexdigest()
    assert (note.stamp.path, note.stamp.size, note.stamp.mtime_ns, note.stamp.inode) == (
        "n.md",
        len(raw),
        st.st_mtime_ns,
        st.st_ino,
    )


def test_read_note_strips_utf8_bom_but_hashes_raw_bytes(vault: Path) -> None:
    raw = b"\xef\xbb\xbf---\ntitle: x\n---\n"
    put(vault, "bom.md", raw)
    note = read_note(vault, "bom.md", 1000)
    assert note.text == "---\ntitle: x\n---\n" and note.problems == ()
    assert note.content_hash == hashlib.sha256(raw).hexdigest()


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_read_note_decodes_utf16_with_bom_and_says_so(vault: Path, codec: str) -> None:
    bom = b"\xff\xfe" if codec.endswith("le") else b"\xfe\xff"
    put(vault, "w.md", bom + "# Héllo\n".encode(codec))
    note = read_note(vault, "w.md", 1000)
    assert note.text == "# Héllo\n" and note.problems == ("decoded as utf-16",)


def test_read_note_decodes_utf32_with_bom(vault: Path) -> None:
    put(vault, "w.md", "# Hi\n".encode("utf-32"))
    note = read_note(vault, "w.md", 1000)
    assert note.text == "# Hi\n" and note.problems == ("decoded as utf-32",)


def test_read_note_replaces_invalid_utf8_and_records_a_problem(vault: Path) -> None:
    put(vault, "latin.md", "café au lait\n".encode("latin-1"))
    note = read_note(vault, "latin.md", 1000)
    assert note.text == "caf\ufffd au lait\n"
    assert note.problems == ("not valid UTF-8: decoded with replacement characters",)


@pytest.mark.parametrize(
    "data",
    [b"PK\x03\x04\x00\x00binary", bytes(range(1, 32)) * 10, bytes(range(128, 256)) * 8],
    ids=["nul", "controls", "not-text"],
)
def test_read_note_refuses_binary_md(vault: Path, data: bytes) -> None:
    put(vault, "bin.md", data)
    with pytest.raises(BinaryNote):
        read_note(vault, "bin.md", 10_000)


def test_binary_note_is_a_note_unreadable(vault: Path) -> None:
    assert issubclass(BinaryNote, NoteUnreadable) and issubclass(OversizedNote, NoteUnreadable)


def test_read_note_refuses_oversized(vault: Path) -> None:
    put(vault, "big.md", "x" * 11)
    with pytest.raises(OversizedNote, match=r"oversized \(11 bytes > 10\)"):
        read_note(vault, "big.md", 10)
    assert read_note(vault, "big.md", 11).text == "x" * 11


def test_read_note_raises_unreadable_when_vanished_or_a_folder(vault: Path) -> None:
    with pytest.raises(NoteUnreadable, match="vanished"):
        read_note(vault, "missing.md", 100)
    (vault / "dir.md").mkdir()
    with pytest.raises(NoteUnreadable, match="folder"):
        read_note(vault, "dir.md", 100)


@pytest.mark.skipif(IS_ROOT, reason="root reads every file whatever its mode")
def test_read_note_raises_unreadable_without_permission(vault: Path) -> None:
    path = put(vault, "locked.md")
    path.chmod(0)
    try:
        with pytest.raises(NoteUnreadable, match="cannot be opened"):
            read_note(vault, "locked.md", 100)
    finally:
        path.chmod(0o644)


# ---- confinement


@pytest.mark.parametrize(
    "rel", ["../outside.md", "a/../../outside.md", "/etc/passwd", "\\x.md", "C:/x.md", "a\x00.md"]
)
def test_resolve_inside_refuses_escapes_and_absolute_paths(vault: Path, rel: str) -> None:
    with pytest.raises(PathOutsideVault):
        resolve_inside(vault, rel)


def test_resolve_inside_refuses_symlinked_component_leading_outside(
    vault: Path, tmp_path: Path
) -> None:
    put(tmp_path, "outside/secret.md")
    (vault / "ext").symlink_to(tmp_path / "outside")
    with pytest.raises(PathOutsideVault):
        resolve_inside(vault, "ext/secret.md")
    with pytest.raises(PathOutsideVault):
        read_note(vault, "ext/secret.md", 100)
    with pytest.raises(PathOutsideVault):
        stat_note(vault, "ext/secret.md")


def test_resolve_inside_accepts_inner_dotdot_and_missing_files(vault: Path) -> None:
    put(vault, "a/b.md")
    real_root = Path(os.path.realpath(vault))
    assert resolve_inside(vault, "a/../a/b.md") == real_root / "a" / "b.md"
    assert resolve_inside(vault, "new/folder/x.md") == real_root / "new" / "folder" / "x.md"


def test_resolve_inside_works_when_the_vault_root_is_itself_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    put(real, "a.md", "x")
    (tmp_path / "link").symlink_to(real)
    assert resolve_inside(tmp_path / "link", "a.md") == Path(os.path.realpath(real)) / "a.md"
    assert [n.path for n in scan(tmp_path / "link").notes] == ["a.md"]


# ---- writing


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX)]


def test_write_atomic_creates_and_replaces_leaving_no_temp_file(vault: Path) -> None:
    target = vault / "answers" / "A.md"
    target.parent.mkdir()
    write_atomic(target, b"one")
    write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    assert leftovers(target.parent) == []


def test_write_atomic_keeps_the_existing_file_mode(vault: Path) -> None:
    target = put(vault, "log.md", "old")
    target.chmod(0o600)
    write_atomic(target, b"new")
    assert (target.stat().st_mode & 0o777) == 0o600


def test_write_atomic_failure_leaves_old_bytes_and_no_temp(vault: Path) -> None:
    target = vault / "dir.md"
    target.mkdir()  # os.replace of a file onto a folder fails
    with pytest.raises(OSError):
        write_atomic(target, b"x")
    assert leftovers(vault) == []


def test_temp_files_are_ignored_by_the_scanner(vault: Path) -> None:
    put(vault, TEMP_PREFIX + "abc.md")
    assert note_paths(vault) == [] and skipped(vault) == {}


def test_write_new_file_never_overwrites_and_numbers_the_name(vault: Path) -> None:
    existing = put(vault, "Q.md", "user bytes")
    first = write_new_file(vault / "Q.md", b"answer 1")
    second = write_new_file(vault / "Q.md", b"answer 2")
    assert existing.read_bytes() == b"user bytes"
    assert (first.name, first.read_bytes()) == ("Q (2).md", b"answer 1")
    assert (second.name, second.read_bytes()) == ("Q (3).md", b"answer 2")
    assert write_new_file(vault / "Fresh.md", b"x") == vault / "Fresh.md"
    assert leftovers(vault) == []


def test_write_new_file_shortens_a_numbered_name_to_fit_255_bytes(vault: Path) -> None:
    name = "a" * 252 + ".md"
    put(vault, name)
    out = write_new_file(vault / name, b"x")
    assert out.name.endswith(" (2).md") and len(out.name.encode()) <= 255
    assert out.read_bytes() == b"x"


def test_write_new_file_under_concurrent_writers_gives_each_its_own_file(vault: Path) -> None:
    results: list[Path] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        path = write_new_file(vault / "Race.md", f"writer {i}".encode())
        with lock:
            results.append(path)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({p.name for p in results}) == 8
    assert sorted(p.read_text() for p in results) == [f"writer {i}" for i in range(8)]


def test_move_to_free_name_moves_bytes_and_numbers_around_existing_files(vault: Path) -> None:
    (vault / "archive").mkdir()
    existing = put(vault, "archive/Q.md", "an older archived question")
    source = put(vault, "Q.md", "the question\r\n\xa0bytes as they were")
    data = source.read_bytes()
    moved = move_to_free_name(source, vault / "archive" / "Q.md")
    assert moved == vault / "archive" / "Q (2).md" and moved.read_bytes() == data
    assert not source.exists()
    assert existing.read_text() == "an older archived question"


def test_move_to_free_name_of_a_vanished_file_is_none(vault: Path) -> None:
    assert move_to_free_name(vault / "gone.md", vault / "target.md") is None
    assert not (vault / "target.md").exists()


def test_move_to_free_name_moves_a_symlink_itself_never_its_target(
    vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("not the vault's")
    (vault / "link.md").symlink_to(outside)
    moved = move_to_free_name(vault / "link.md", vault / "moved.md")
    assert moved is not None and moved.is_symlink()
    assert outside.read_text() == "not the vault's"


def _refuse_hard_links(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "hard links not supported here")

    monkeypatch.setattr(os, "link", refuse)


def test_without_hard_links_write_new_file_still_never_overwrites(
    vault: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _refuse_hard_links(monkeypatch)
    existing = put(vault, "Q.md", "user bytes")
    out = write_new_file(vault / "Q.md", b"answer")
    assert (out.name, out.read_bytes()) == ("Q (2).md", b"answer")
    assert existing.read_bytes() == b"user bytes"
    assert leftovers(vault) == []


def test_without_hard_links_a_file_saved_at_the_old_name_after_the_move_is_kept(
    vault: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _refuse_hard_links(monkeypatch)
    real_replace = os.replace

    def replace_then_user_saves(src: str | Path, dst: str | Path) -> None:
        real_replace(src, dst)
        if Path(src).name == "Q.md":
            Path(src).write_text("written by the user just after the move")

    monkeypatch.setattr(os, "replace", replace_then_user_saves)
    source = put(vault, "Q.md", "the question")
    (vault / "archive").mkdir()
    moved = move_to_free_name(source, vault / "archive" / "Q.md")
    assert moved is not None and moved.read_text() == "the question"
    assert source.read_text() == "written by the user just after the move"
    assert leftovers(vault) == []


def test_a_new_version_saved_between_link_and_unlink_is_kept(
    vault: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_link = os.link

    def link_then_app_saves_atomically(src: str | Path, dst: str | Path, **kw: object) -> None:
        real_link(src, dst, **kw)  # type: ignore[arg-type]
        fresh = Path(src).with_name("fresh.tmp")
        fresh.write_text("version 2")
        os.replace(fresh, src)

    monkeypatch.setattr(os, "link", link_then_app_saves_atomically)
    source = put(vault, "Q.md", "version 1")
    moved = move_to_free_name(source, vault / "archived.md")
    assert moved is not None and moved.read_text() == "version 1"
    assert source.read_text() == "version 2"


def test_cleanup_temp_files_removes_only_askvault_temp_files(vault: Path) -> None:
    # Names of older versions, once they are old; today's names are in test_vault_protocol.
    for name in (TEMP_PREFIX + "0123456789abcdef", TEMP_PREFIX + "fedcba9876543210"):
        os.utime(put(vault, name), (1, 1))
    put(vault, "keep.md")
    put(vault, ".other-tmp")
    assert cleanup_temp_files(vault) == 2
    assert sorted(p.name for p in vault.iterdir()) == [".other-tmp", "keep.md"]
    assert cleanup_temp_files(vault / "missing") == 0


def test_skipped_records_are_plain_values(vault: Path) -> None:
    (vault / "gone.md").symlink_to(vault / "nowhere.md")
    assert scan(vault).skipped == [Skipped("gone.md", "broken symlink")]
