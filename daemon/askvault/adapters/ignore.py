r"""Which vault paths are notes, and which are ignored and why.

The rules are built once from the vault's `.obsidian/app.json` (Obsidian's "Excluded
files"; read by `vault.load_ignore_rules`) and the settings; after that every check is
a pure function of a vault-relative POSIX path, so the scanner and the watcher agree on
every file.

Decisions (see docs/reference/ignore-rules.md):
- Only `*.md` files are notes (extension compared case-insensitively). Obsidian
  itself does not open `.markdown` files as notes, so neither do we.
- Any file or folder whose name starts with `.` is ignored at any depth, as
  Obsidian does (`.obsidian/`, `.trash/`, `.git/`, `.stversions/`, ...).
- `userIgnoreFilters` follows Obsidian: an entry written `/.../` is a
  JavaScript-style regular expression searched anywhere in the path; any other
  entry is a case-sensitive *string prefix* of the vault-relative path
  (`Templates` also excludes `Templates.md` and `TemplatesOld/`). Obsidian
  only hides excluded files from search and the graph; askvault does not index
  them at all, since the user has said they are not knowledge.
- Configured globs use gitignore-like semantics: `*` and `?` stay inside one
  path segment, `**` crosses segments, a pattern without `/` matches a name at
  any depth, a pattern with `/` is anchored at the vault root, a trailing `/`
  matches folders only, and a pattern that matches a folder excludes
  everything below it. As in gitignore, `\` makes the next character itself
  (`\*`, `\?`, `\[`, `\#`, `\!`, `\ `, also inside `[...]`), trailing spaces
  are dropped unless escaped, and `[!...]` never matches `/`. Unlike gitignore,
  every entry is a pattern: a leading `#` is not a comment and a leading `!`
  does not re-include (both are then just characters of a name).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

APP_JSON = ".obsidian/app.json"
NOTE_SUFFIX = ".md"
HIDDEN_REASON = "hidden (name starts with '.')"

# Checked against the file name only, in order; the first match names the reason.
_NAME_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\.askvault-tmp-"), "askvault temporary file"),
    (re.compile(r"^\.syncthing\..*\.tmp$", re.I), "Syncthing temporary file"),
    (re.compile(r"^~syncthing~.*\.tmp$", re.I), "Syncthing temporary file"),
    (re.compile(r"\.sync-conflict-", re.I), "Syncthing conflict copy"),
    (
        re.compile(r"\([^()]*conflicted copy", re.I),
        "sync conflict copy (Obsidian Sync, Dropbox or Nextcloud)",
    ),
    (re.compile(r"\((?:SF)?conflict\b", re.I), "sync conflict copy"),
    (re.compile(r"_conflict-\d{8}-\d{6}"), "ownCloud/Nextcloud conflict copy"),
    (re.compile(r"-(?:DESKTOP|LAPTOP)-[A-Z0-9]{4,15}(?:-\d+)?\.[^.]+$"), "OneDrive conflict copy"),
    (re.compile(r"\.!sync$", re.I), "Resilio Sync partial file"),
    (re.compile(r"\.icloud$", re.I), "iCloud placeholder (not downloaded)"),
    (re.compile(r"^~\$"), "Office lock file"),
    (re.compile(r"^\.#|^#.*#$"), "editor lock or autosave file"),
    (re.compile(r"\.(?:swp|swo|swx)$", re.I), "editor swap file"),
    (re.compile(r"(?:\.tmp|~)$", re.I), "temporary file"),
)

# One pass instead of fourteen for the names that match none (nearly all): the scan of a
# 6,571-note vault spent ~40 ms in these searches.
_ANY_NAME_PATTERN = re.compile(
    "|".join(
        f"(?i:{p.pattern})" if p.flags & re.I else f"(?:{p.pattern})" for p, _ in _NAME_PATTERNS
    )
)


@dataclass(frozen=True)
class _Glob:
    pattern: str
    regex: re.Pattern[str]
    anchored: bool
    folders_only: bool


@dataclass(frozen=True)
class IgnoreRules:
    """Everything needed to decide, from a path alone, whether a vault file is ignored.

    `problems` lists what was wrong in the inputs (malformed app.json, a bad
    regex); the rules that could be read still apply.
    """

    internal_folders: tuple[str, ...] = ("queries",)
    user_prefixes: tuple[str, ...] = ()
    user_regexes: tuple[tuple[str, re.Pattern[str]], ...] = ()
    globs: tuple[_Glob, ...] = ()
    max_note_bytes: int = 5_000_000
    problems: tuple[str, ...] = ()


def build_ignore_rules(
    app_json: bytes | None,
    extra_globs: Sequence[str] = (),
    internal_folders: Sequence[str] = ("queries",),
    max_note_bytes: int = 5_000_000,
    problems: Sequence[str] = (),
) -> IgnoreRules:
    """Build the rules from the bytes of the vault's `.obsidian/app.json` and the settings.

    None means no app.json (no user filters); a malformed one is ignored and reported in
    `problems` (after any given ones, e.g. why it could not be read), never raised.
    Reading the file is `vault.load_ignore_rules`'s job (confined, capped, non-blocking).
    """
    found: list[str] = list(problems)
    prefixes: list[str] = []
    regexes: list[tuple[str, re.Pattern[str]]] = []
    for entry in _user_filters(app_json, found):
        if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
            try:
                regexes.append((entry, re.compile(entry[1:-1])))
            except re.error as exc:
                found.append(
                    f"{APP_JSON}: userIgnoreFilters {entry!r} is not a valid regex ({exc})"
                )
        else:
            prefixes.append(entry)
    folders = tuple(f.strip("/") for f in internal_folders if f.strip("/"))
    return IgnoreRules(
        internal_folders=folders,
        user_prefixes=tuple(prefixes),
        user_regexes=tuple(regexes),
        globs=tuple(_compile_glob(g) for g in extra_globs if g.strip()),
        max_note_bytes=max_note_bytes,
        problems=tuple(found),
    )


def _user_filters(raw: bytes | None, problems: list[str]) -> list[str]:
    if raw is None:
        return []
    try:
        config = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{APP_JSON}: not valid JSON ({exc}); Excluded files not applied")
        return []
    if not isinstance(config, dict):
        problems.append(f"{APP_JSON}: not a JSON object; Excluded files not applied")
        return []
    filters = config.get("userIgnoreFilters", [])
    if filters is None:
        return []
    if not isinstance(filters, list):
        problems.append(f"{APP_JSON}: userIgnoreFilters is not a list; Excluded files not applied")
        return []
    entries: list[str] = []
    for item in filters:
        if not isinstance(item, str):
            problems.append(
                f"{APP_JSON}: userIgnoreFilters entry {item!r} is not a string; skipped"
            )
        elif item.strip():
            # An empty prefix would exclude the whole vault; Obsidian's UI cannot save one.
            entries.append(item)
    return entries


def _compile_glob(pattern: str) -> _Glob:
    """Translate one configured glob into a regex (gitignore's wildcards and escapes)."""
    body = _strip_trailing_spaces(pattern)
    folders_only = body.endswith("/")
    body = body.rstrip("/")
    anchored = "/" in body  # a leading `/` too: `/drafts` is the root's only
    body = body.lstrip("/")
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            # `\*`, `\?`, `\[`, `\#`, `\!`, `\ `, `\\`: the next character as itself.
            out.append(re.escape(body[i + 1] if i + 1 < len(body) else c))
            i += 2
            continue
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if body.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (bracket := _bracket_class(body, i)) is not None:
            out.append(bracket[0])
            i = bracket[1]
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return _Glob(pattern, re.compile("".join(out)), anchored, folders_only)


def _strip_trailing_spaces(pattern: str) -> str:
    r"""Drop trailing spaces, as gitignore does, but not one escaped as `\ `."""
    body = pattern.rstrip(" ")
    if len(body) < len(pattern):
        backslashes = len(body) - len(body.rstrip("\\"))
        if backslashes % 2:  # the last space was escaped: keep it
            body += " "
    return body


def _bracket_class(body: str, start: int) -> tuple[str, int] | None:
    r"""The regex class for the `[...]` at `start` and the index after it; None when it
    does not close (then `[` is itself). `!` or `^` first negates; `]` first is itself;
    `\` escapes the next character; a class never matches `/`."""
    i = start + 1
    negate = i < len(body) and body[i] in "!^"
    i += int(negate)
    items: list[str] = []
    while i < len(body):
        c = body[i]
        if c == "]" and items:
            return ("[^/" if negate else "[") + "".join(items) + "]", i + 1
        if c == "/":
            return None
        escaped = c == "\\" and i + 1 < len(body)
        if escaped:
            i += 1
            c = body[i]
        # An unescaped `-` makes a range; anything else is itself (`^`, `[`, `\`, ...).
        items.append("-" if c == "-" and not escaped else re.escape(c))
        i += 1
    return None


def is_note_path(rel_path: str) -> bool:
    """True if the path names a Markdown note (`.md`, any case) rather than an attachment."""
    return rel_path.lower().endswith(NOTE_SUFFIX) and not rel_path.endswith("/")


def ignore_reason(
    rel_path: str, rules: IgnoreRules, *, folders_checked: bool = False
) -> str | None:
    """Why the vault-relative POSIX `rel_path` is ignored, or None if it is not.

    Pure: looks at the path only (no file access). Applies to any file, note or
    attachment; whether a file is a note at all is `is_note_path`. `folders_checked`:
    every folder above it already passed `folder_ignore_reason` (the scanner's walk
    descends only into those), so only the file's own name is checked.
    """
    parts = rel_path.strip("/").split("/")
    for i in range(0 if folders_checked else len(parts) - 1):
        reason = folder_ignore_reason("/".join(parts[: i + 1]), rules)
        if reason is not None:
            return reason[0]
    name = parts[-1]
    if _ANY_NAME_PATTERN.search(name):
        for pattern, reason_text in _NAME_PATTERNS:
            if pattern.search(name):
                return reason_text
    if name.startswith("."):
        return HIDDEN_REASON
    return _user_reason(rel_path, rules) or _glob_reason(parts, rules, is_folder=False)


def folder_ignore_reason(rel_dir: str, rules: IgnoreRules) -> tuple[str, bool] | None:
    """Why everything under the folder `rel_dir` is ignored, and whether to report it.

    Returns (reason, report) or None. Hidden and internal folders are expected
    and not reported; a folder excluded by the user's settings is reported once
    (the scanner does not descend into it and lists no file below it).
    """
    rel_dir = rel_dir.strip("/")
    name = rel_dir.rsplit("/", 1)[-1]
    if name.startswith("."):
        return (HIDDEN_REASON, False)
    for folder in rules.internal_folders:
        if rel_dir == folder or rel_dir.startswith(folder + "/"):
            return (f"askvault folder {folder}/ (not knowledge until moved out)", False)
    # A prefix matching "dir/" matches every path below it, so pruning is exact;
    # a regex is not (it may match only some files), so regexes are checked per file.
    for prefix in rules.user_prefixes:
        if (rel_dir + "/").startswith(prefix):
            return (f"excluded in Obsidian settings ({prefix!r})", True)
    reason = _glob_reason(rel_dir.split("/"), rules, is_folder=True)
    return (reason, True) if reason else None


def _user_reason(rel_path: str, rules: IgnoreRules) -> str | None:
    for prefix in rules.user_prefixes:
        if rel_path.startswith(prefix):
            return f"excluded in Obsidian settings ({prefix!r})"
    for source, regex in rules.user_regexes:
        if regex.search(rel_path):
            return f"excluded in Obsidian settings ({source!r})"
    return None


def _glob_reason(parts: list[str], rules: IgnoreRules, *, is_folder: bool) -> str | None:
    # Only the last part is tested here: ancestors were tested as folders already.
    last = len(parts) - 1
    for glob in rules.globs:
        if glob.folders_only and not is_folder:
            continue
        subject = "/".join(parts) if glob.anchored else parts[last]
        if glob.regex.fullmatch(subject):
            return f"matches ignore glob {glob.pattern!r}"
    return None
