"""The vault filesystem: scanning, confined reads, atomic writes.

Every path that enters or leaves this module is vault-relative and
`/`-separated, spelled exactly as on disk (see "Unicode names" below); every
path used to touch the disk first goes through `resolve_inside`.

Decisions (see docs/reference/vault-files.md):
- Symlinks. The design confines askvault to the vault, so a symlink whose
  target is outside is skipped ("symlink outside vault"), even though
  Obsidian would follow it. A file symlink whose target is inside the vault
  (and not itself ignored) is followed and the note keeps the link's path. A
  folder symlink to another folder inside the vault is not followed: Obsidian
  ignores these too (its help, "Symbolic links and junctions"), and following
  them would index the same notes twice. One pointing at one of its own
  ancestors is a "symlink loop", as is a chain that never ends; a link to
  nothing is a "broken symlink".
- Hard links. A file with more than one name (`st_nlink > 1`) is skipped ("hard
  link"): one of its other names may be a file outside the vault, and no scan of the
  vault can tell (the names live anywhere on the same file system). The scan skips it
  and `read_note(..., refuse_hard_links=True)` refuses it on the bytes it opened, so a
  link made after the scan is caught too. askvault's own files are read without this
  rule (the archive's move links a question to its new name before unlinking the old).
- Unicode names. Paths are kept as the on-disk name, not
  NFC-normalised, because a normalised name may not open the file (Linux file
  systems compare bytes). Comparing names from links is the link resolver's
  job, which should normalise both sides. A name that is not valid UTF-8
  cannot be stored or linked to, so it is skipped with that reason.
- Skips reported in `ScanResult.skipped` are limited to what a user can act
  on: ignored or unreadable `.md` files, folders excluded by the user's own
  settings (once per folder), unreadable folders, and symlinks that were not
  followed. Hidden folders and askvault's own folders are not listed.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat as stat_mod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from askvault.adapters.ignore import (
    APP_JSON,
    IgnoreRules,
    build_ignore_rules,
    folder_ignore_reason,
    ignore_reason,
    is_note_path,
)
from askvault.adapters.vault_writes import (
    TEMP_PREFIX,
    cleanup_temp_files,
    move_to_free_name,
    temp_name,
    write_atomic,
    write_new_file,
)
from askvault.errors import NoteUnreadable, PathOutsideVault, VaultError
from askvault.records import FileStamp, NoteFile, Skipped

__all__ = [
    "BinaryNote",
    "HardLinkedNote",
    "IgnoreRules",
    "OversizedNote",
    "ScanResult",
    "TEMP_PREFIX",
    "append_line",
    "cleanup_temp_files",
    "ignore_reason",
    "load_ignore_rules",
    "move_to_free_name",
    "read_note",
    "read_small_file",
    "resolve_inside",
    "scan_vault",
    "stat_note",
    "temp_name",
    "write_atomic",
    "write_new_file",
]

BINARY_SNIFF_BYTES = 8192
UNDECODABLE_NAME_REASON = "file name is not valid UTF-8"
HARD_LINK_REASON = "hard link (the file has other names, which may be outside the vault)"
# Obsidian's app.json is a few hundred bytes; anything near this is not one.
APP_JSON_MAX_BYTES = 1 << 20
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\v\b\x1b")
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class BinaryNote(NoteUnreadable):
    """A `.md` file whose bytes are not text (NUL bytes or mostly control bytes)."""


class OversizedNote(NoteUnreadable):
    """A note larger than the configured cap; it is skipped, not truncated."""


class HardLinkedNote(NoteUnreadable):
    """A note with other names (hard links), which may be files outside the vault."""


@dataclass
class ScanResult:
    """The notes found by one scan, sorted by path, and the files skipped with a reason."""

    notes: list[FileStamp] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def resolve_inside(root: Path, rel_path: str) -> Path:
    """The real on-disk path of `rel_path` under `root`, refusing anything outside the vault.

    Raises PathOutsideVault for absolute paths, `..` escapes and symlinks (at
    any component) that resolve outside `root`. The path need not exist.
    """
    if "\x00" in rel_path:
        raise PathOutsideVault(f"path {rel_path!r} contains a NUL byte")
    if (
        rel_path.startswith(("/", "\\"))
        or os.path.isabs(rel_path)
        or (len(rel_path) > 1 and rel_path[1] == ":")
    ):
        raise PathOutsideVault(
            f"path {rel_path!r} is absolute", "use a path relative to the vault root"
        )
    root_real = os.path.realpath(root)
    real = os.path.realpath(os.path.join(root_real, rel_path))
    if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
        raise PathOutsideVault(
            f"path {rel_path!r} leads outside the vault ({real})",
            "only files inside the vault can be read or written",
        )
    return Path(real)


def stat_note(root: Path, rel_path: str) -> FileStamp | None:
    """The stamp of the note at `rel_path`, or None if it vanished or is not a regular file."""
    try:
        st = os.stat(resolve_inside(root, rel_path))
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat_mod.S_ISREG(st.st_mode):
        return None
    return FileStamp(rel_path, st.st_size, st.st_mtime_ns, st.st_ino)


def scan_vault(root: Path, rules: IgnoreRules) -> ScanResult:
    """Every note of the vault with its stamp, plus the `.md` files skipped and why.

    Never raises for a file or folder inside the vault; raises VaultError if
    `root` itself is not a readable folder.
    """
    root_real = os.path.realpath(root)
    if not os.path.isdir(root_real):
        raise VaultError(
            f"vault folder {root} does not exist or is not a folder",
            "check --vault / ASKVAULT_VAULT",
        )
    result = ScanResult()
    stack: list[tuple[str, str]] = [(root_real, "")]
    while stack:
        abs_dir, rel_dir = stack.pop()
        for entry in _folder_entries(root, abs_dir, rel_dir, result):
            rel = rel_dir + "/" + entry.name if rel_dir else entry.name
            if not _valid_name(entry.name):
                if is_note_path(entry.name) or entry.is_dir():
                    # Shown with U+FFFD: the raw name cannot be stored as UTF-8 text.
                    result.skipped.append(Skipped(_printable(rel), UNDECODABLE_NAME_REASON))
            elif entry.is_symlink():
                _scan_symlink(entry.path, rel, root_real, rules, result)
            elif entry.is_dir(follow_symlinks=False):
                verdict = folder_ignore_reason(rel, rules)
                if verdict is None:
                    stack.append((entry.path, rel))
                elif verdict[1]:
                    result.skipped.append(Skipped(rel + "/", verdict[0]))
            elif is_note_path(entry.name):
                _scan_note(entry.path, rel, rules, result)
    result.notes.sort(key=lambda s: s.path)
    result.skipped.sort(key=lambda s: s.path)
    return result


def _folder_entries(
    root: Path, abs_dir: str, rel_dir: str, result: ScanResult
) -> list[os.DirEntry[str]]:
    """The entries of one folder of the walk; an unreadable folder is skipped (none), except
    the vault itself, which raises VaultError."""
    try:
        with os.scandir(abs_dir) as it:
            return list(it)
    except OSError as exc:
        if rel_dir == "":
            raise VaultError(f"vault folder {root} is unreadable: {exc.strerror}") from exc
        result.skipped.append(Skipped(rel_dir + "/", f"unreadable folder ({exc.strerror})"))
        return []


def _scan_note(abs_path: str, rel: str, rules: IgnoreRules, result: ScanResult) -> None:
    # The walk descends only into folders that passed folder_ignore_reason.
    reason = ignore_reason(rel, rules, folders_checked=True)
    if reason is not None:
        # Dot files (askvault's and editors' temp files among them) are hidden in
        # Obsidian too; listing them would only make `status` noisy.
        if not rel.rsplit("/", 1)[-1].startswith("."):
            result.skipped.append(Skipped(rel, reason))
        return
    try:
        st = os.stat(abs_path)
    except FileNotFoundError:
        return  # vanished during the scan: the watcher will report the delete
    except OSError as exc:
        result.skipped.append(Skipped(rel, f"unreadable ({exc.strerror})"))
        return
    if not stat_mod.S_ISREG(st.st_mode):
        result.skipped.append(Skipped(rel, "not a regular file"))
    elif st.st_nlink > 1:
        result.skipped.append(Skipped(rel, HARD_LINK_REASON))
    elif st.st_size > rules.max_note_bytes:
        result.skipped.append(Skipped(rel, _oversized_reason(st.st_size, rules.max_note_bytes)))
    else:
        result.notes.append(FileStamp(rel, st.st_size, st.st_mtime_ns, st.st_ino))


def _scan_symlink(
    abs_path: str, rel: str, root_real: str, rules: IgnoreRules, result: ScanResult
) -> None:
    name = rel.rsplit("/", 1)[-1]
    if name.startswith("."):
        return
    target = _symlink_target(abs_path, rel, result)
    if target is None:
        return
    is_dir = os.path.isdir(target)
    shown = rel + "/" if is_dir else rel
    inside = target == root_real or target.startswith(root_real.rstrip(os.sep) + os.sep)
    if not inside:
        if is_dir or is_note_path(name):
            result.skipped.append(Skipped(shown, "symlink outside vault"))
    elif is_dir:
        link_dir = os.path.dirname(os.path.join(root_real, rel))
        if link_dir == target or link_dir.startswith(target.rstrip(os.sep) + os.sep):
            result.skipped.append(Skipped(shown, "symlink loop"))
        else:
            result.skipped.append(
                Skipped(
                    shown, "symlink to a folder inside the vault (not followed, as in Obsidian)"
                )
            )
    elif is_note_path(name):
        target_rel = Path(os.path.relpath(target, root_real)).as_posix()
        target_reason = ignore_reason(target_rel, rules)
        if target_reason is not None:
            result.skipped.append(Skipped(rel, f"symlink to an ignored file ({target_reason})"))
        else:
            _scan_note(abs_path, rel, rules, result)


def _symlink_target(abs_path: str, rel: str, result: ScanResult) -> str | None:
    """The real path the symlink at `abs_path` ends at, or None (skipped if it is a loop, or
    a note's link that is broken or unreadable)."""
    try:
        return os.path.realpath(abs_path, strict=True)
    except FileNotFoundError:
        if is_note_path(rel):
            result.skipped.append(Skipped(rel, "broken symlink"))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            result.skipped.append(Skipped(rel, "symlink loop"))
        elif is_note_path(rel):
            result.skipped.append(Skipped(rel, f"unreadable symlink ({exc.strerror})"))
    return None


def undecodable_name(rel_path: str) -> Skipped | None:
    """The skip of a path whose name is not valid UTF-8 (shown with U+FFFD), else None.

    Such a name arrives from the OS with lone surrogates, which SQLite cannot store: every
    path from outside (watcher events, inbox listings) is checked before it reaches the DB.
    """
    if _valid_name(rel_path):
        return None
    return Skipped(_printable(rel_path), UNDECODABLE_NAME_REASON)


def _valid_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
        return False
    return True


def _printable(rel: str) -> str:
    """`rel` with each undecodable byte (a lone surrogate) shown as U+FFFD."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _oversized_reason(size: int, cap: int) -> str:
    return f"oversized ({size} bytes > {cap})"


def read_note(
    root: Path, rel_path: str, max_bytes: int, *, refuse_hard_links: bool = False
) -> NoteFile:
    """Read and decode the note at `rel_path`; the stamp and hash describe exactly the bytes read.

    Raises PathOutsideVault, NoteUnreadable (vanished, permission, not a regular
    file), OversizedNote and BinaryNote; with `refuse_hard_links` (the user's notes),
    HardLinkedNote for a file with other names. UTF-8 (BOM stripped) is expected;
    UTF-16/32 with a BOM and invalid UTF-8 are decoded with a recorded problem.
    """
    path = resolve_inside(root, rel_path)
    try:
        fd = _open_for_reading(path)
    except FileNotFoundError as exc:
        raise NoteUnreadable(f"note {rel_path} vanished before it could be read") from exc
    except OSError as exc:
        raise NoteUnreadable(
            f"note {rel_path} cannot be opened: {exc.strerror}", "check the file's permissions"
        ) from exc
    try:
        data, st, problems = _read_stable(fd, rel_path, max_bytes)
    finally:
        os.close(fd)
    if refuse_hard_links and st.st_nlink > 1:
        raise HardLinkedNote(
            f"note {rel_path} has {st.st_nlink} names (hard links), which may be files outside"
            " the vault: not read",
            "make it a copy (`cp`) if you want askvault to read it",
        )
    stamp = FileStamp(rel_path, len(data), st.st_mtime_ns, st.st_ino)
    text = _decode(data, rel_path, problems)
    return NoteFile(stamp, text, hashlib.sha256(data).hexdigest(), tuple(problems))


def _open_for_reading(path: Path) -> int:
    # O_NONBLOCK: opening a FIFO must not hang the daemon (fstat then refuses it).
    return os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))


def load_ignore_rules(
    root: Path,
    extra_globs: Sequence[str] = (),
    internal_folders: Sequence[str] = ("queries",),
    max_note_bytes: int = 5_000_000,
) -> IgnoreRules:
    """The ignore rules of the vault at `root`: its `.obsidian/app.json` read like a note.

    app.json must be a regular file inside the vault (after resolving symlinks) of at most
    `APP_JSON_MAX_BYTES`, opened non-blocking; otherwise it is not applied and the reason
    is one of the rules' `problems` (a symlink to /dev/zero, a FIFO, a file outside the
    vault: never read, never waited on). A missing app.json means no user filters.
    """
    problems: list[str] = []
    raw = _read_app_json(root, problems)
    return build_ignore_rules(raw, extra_globs, internal_folders, max_note_bytes, problems)


def read_small_file(root: Path, rel_path: str, max_bytes: int) -> bytes | None:
    """The bytes of a small regular file of the vault (Obsidian's own JSON files), or None
    when it is missing, not a regular file, outside the vault, larger than `max_bytes` or
    unreadable: opened non-blocking, never waited on, never followed out of the vault."""
    try:
        fd = _open_for_reading(resolve_inside(root, rel_path))
    except (OSError, PathOutsideVault):
        return None
    try:
        data, _, _ = _read_stable(fd, rel_path, max_bytes)
    except (OSError, VaultError):
        return None
    finally:
        os.close(fd)
    return data


def _read_app_json(root: Path, problems: list[str]) -> bytes | None:
    not_applied = "Excluded files not applied"
    try:
        path = resolve_inside(root, APP_JSON)
        fd = _open_for_reading(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PathOutsideVault:
        problems.append(f"{APP_JSON}: not read, it leads outside the vault; {not_applied}")
        return None
    except OSError as exc:
        problems.append(f"{APP_JSON}: unreadable ({exc.strerror or exc}); {not_applied}")
        return None
    try:
        data, _, _ = _read_stable(fd, APP_JSON, APP_JSON_MAX_BYTES)
    except VaultError as exc:
        problems.append(f"{APP_JSON}: not read ({exc.message}); {not_applied}")
        return None
    finally:
        os.close(fd)
    return data


def _read_stable(fd: int, rel_path: str, max_bytes: int) -> tuple[bytes, os.stat_result, list[str]]:
    problems: list[str] = []
    for _ in range(3):
        before = os.fstat(fd)
        if stat_mod.S_ISDIR(before.st_mode):
            raise NoteUnreadable(f"{rel_path} is a folder, not a note")
        if not stat_mod.S_ISREG(before.st_mode):
            raise NoteUnreadable(f"{rel_path} is not a regular file")
        if before.st_size > max_bytes:
            raise OversizedNote(
                f"note {rel_path} is {_oversized_reason(before.st_size, max_bytes)}",
                "raise the note size cap in the settings or split the note",
            )
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            chunks: list[bytes] = []
            total = 0
            while total <= max_bytes:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except OSError as exc:
            raise NoteUnreadable(f"note {rel_path} cannot be read: {exc.strerror}") from exc
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise OversizedNote(f"note {rel_path} is {_oversized_reason(len(data), max_bytes)}")
        after = os.fstat(fd)
        unchanged = (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        if unchanged and len(data) == after.st_size:
            return data, after, problems
    problems.append("changed while being read; the next change event will re-read it")
    return data, after, problems


def _decode(data: bytes, rel_path: str, problems: list[str]) -> str:
    if data.startswith(_UTF32_BOMS):
        problems.append("decoded as utf-32")
        return data.decode("utf-32", errors="replace")
    if data.startswith(_UTF16_BOMS):
        problems.append("decoded as utf-16")
        return data.decode("utf-16", errors="replace")
    sample = data[:BINARY_SNIFF_BYTES]
    if b"\x00" in sample:
        raise BinaryNote(f"{rel_path} looks binary (NUL bytes), not a Markdown note")
    controls = sum(1 for b in sample if b < 0x20 and b not in _TEXT_CONTROLS)
    if sample and controls > len(sample) * 0.1:
        raise BinaryNote(f"{rel_path} looks binary (control bytes), not a Markdown note")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
    if text[:BINARY_SNIFF_BYTES].count("\ufffd") > len(text[:BINARY_SNIFF_BYTES]) * 0.3:
        raise BinaryNote(f"{rel_path} looks binary (not text in any encoding), not a Markdown note")
    problems.append("not valid UTF-8: decoded with replacement characters")
    return text


def append_line(root: Path, rel_path: str, line: str, *, unless_last: bool = False) -> bool:
    """Append `line` (ending in a newline) to the note at `rel_path`, starting a new line if
    the note does not end in one; return False if `unless_last` and it already ends with it.

    Appends only to a regular file of the vault reached without a symlink at its own name
    and with no other hard link (so a `log.md` that points at a user's note is never
    written); raises VaultError otherwise, OSError for the write itself.
    """
    rel_dir, _, name = rel_path.rpartition("/")
    folder = resolve_inside(root, rel_dir) if rel_dir else Path(os.path.realpath(root))
    if not os.path.isdir(root):
        # A vault moved away or unmounted: never recreate its skeleton at the old place.
        raise FileNotFoundError(errno.ENOENT, "the vault folder is gone", str(root))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    flags = (
        os.O_RDWR
        | os.O_APPEND
        | os.O_CREAT
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if os.path.islink(path):
            raise VaultError(
                f"{rel_path} is a symlink; askvault appends only to a regular file"
                " (remove the link to let askvault keep its log)"
            ) from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            raise VaultError(f"{rel_path} is not a regular file; nothing appended")
        if st.st_nlink > 1:
            raise VaultError(
                f"{rel_path} has another hard link (another note shares its"
                " bytes); nothing appended"
            )
        data = line.encode("utf-8")
        if st.st_size > 0:
            tail = os.pread(fd, len(data) + 1, max(0, st.st_size - len(data) - 1))
            last_line = tail.endswith(data) and (len(tail) == len(data) or tail[:1] == b"\n")
            if unless_last and last_line:
                return False
            if not tail.endswith(b"\n"):
                data = b"\n" + data
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return True
