"""Around the evidence: 1-hop graph neighbours and raw source windows.

Source windows are confined to the vault's `sources/` and `raw/` folders: an
absolute path, a `..` step or a symlink that leads out of them is refused and
reported, never read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from askvault.adapters import link_store, search_store
from askvault.adapters.db import Connection
from askvault.adapters.vault import read_note, resolve_inside
from askvault.core.chunking import estimate_tokens
from askvault.core.links import LinkIndex, build_link_index, page_link, resolve_link
from askvault.core.query import fold
from askvault.errors import PathOutsideVault, VaultError
from askvault.records import EvidencePage, Neighbour, SourceWindow

MAX_NEIGHBOURS = 20
SOURCE_FOLDERS = ("sources", "raw")
WINDOW_TOKENS = 400
_WHY = {
    "link": "linked from {page}",
    "related": "listed in related: of {page}",
    "source": "listed in sources: of {page}",
    "child": "listed in children: of {page}",
    "backlink": "links to {page}",
}
_WIKILINK = re.compile(r"^!?\[\[([^\]|#]*)(?:[#|][^\]]*)?\]\]$")


def clean_target(raw: str) -> str:
    """The page part of a frontmatter entry: `[[A#H|label]]` -> `A`, `A#H` -> `A`."""
    raw = raw.strip().strip('"').strip()
    match = _WIKILINK.match(raw)
    if match:
        return match.group(1).strip()
    return raw.split("|", 1)[0].split("#", 1)[0].strip()


def link_index_from_db(conn: Connection) -> LinkIndex:
    """The resolution tables over every indexed note (path, aliases)."""
    return build_link_index(search_store.note_names(conn))


def find_neighbours(
    conn: Connection, primary: Sequence[str], duplicates: set[str]
) -> list[Neighbour]:
    """Pages one hop from the primary pages (wikilinks both ways, `related:`, `sources:`,
    `children:`), each with why; primary pages themselves are not repeated.

    Backlinks are read from the links resolved at index time; the pages' own links and
    frontmatter entries are resolved over the notes they can name (one lookup for all),
    not over the whole vault."""
    if not primary:
        return []
    found: dict[str, str] = {}
    wanted = set(primary)
    backlinks: dict[str, list[str]] = {p: [] for p in primary}
    for page, source in search_store.backlinks(conn, primary):
        backlinks[page].append(source)
    outgoing = {
        page: [(kind, clean_target(raw)) for kind, raw in search_store.outgoing_links(conn, page)]
        for page in primary
    }
    index = link_store.candidate_index(
        conn, [target for links in outgoing.values() for _, target in links]
    )
    for page in primary:
        primary_link = page_link(page, None, duplicates)
        found_here: list[tuple[str, str]] = []
        for kind, target in outgoing[page]:
            resolved = resolve_link(target, index, page)
            if resolved is not None:
                found_here.append((resolved, kind))
        found_here += [(source, "backlink") for source in backlinks[page]]
        for path, kind in found_here:
            if path in wanted or path in found:
                continue
            found[path] = _WHY[kind].format(page=primary_link)
    paths = list(found)[:MAX_NEIGHBOURS]
    titles = search_store.note_titles(conn, paths)
    duplicates = duplicates | search_store.duplicate_basenames(conn, paths)
    return [
        Neighbour(
            path=p, title=titles.get(p, p), wikilink=page_link(p, None, duplicates), why=found[p]
        )
        for p in paths
    ]


def _source_candidates(conn: Connection, page: EvidencePage, index: LinkIndex) -> list[str]:
    """Vault-relative paths (or refusals, as raw text) a page cites as sources."""
    raws = list(page.sources)
    for kind, raw in search_store.outgoing_links(conn, page.path):
        if kind == "link":
            resolved = resolve_link(raw, index, page.path)
            if resolved and resolved.split("/", 1)[0] in SOURCE_FOLDERS:
                raws.append(resolved)
    return list(dict.fromkeys(raws))


def confine_source(vault: Path, raw: str, index: LinkIndex, page: str) -> str:
    """The vault-relative path of a cited source inside `sources/` or `raw/`.

    Raises PathOutsideVault for absolute paths, `..` steps and symlinks leading out
    of those folders; VaultError when the entry names no file there.
    """
    target = clean_target(raw)
    if target.startswith(("/", "\\", "~")) or os.path.isabs(target) or target[1:2] == ":":
        raise PathOutsideVault(f"source {raw!r} is an absolute path")
    if ".." in re.split(r"[\\/]", target):
        raise PathOutsideVault(f"source {raw!r} climbs out with '..'")
    rel = resolve_link(target, index, page) or target
    if rel.split("/", 1)[0] not in SOURCE_FOLDERS:
        raise VaultError(f"source {raw!r} is not in {' or '.join(SOURCE_FOLDERS)}/")
    real = resolve_inside(vault, rel)
    vault_real = Path(os.path.realpath(vault))
    allowed = [vault_real / folder for folder in SOURCE_FOLDERS]
    if not any(real == root or root in real.parents for root in allowed):
        raise PathOutsideVault(f"source {raw!r} is a symlink leading out of sources/ and raw/")
    if not real.is_file():
        raise VaultError(f"source {raw!r} is not a file in the vault")
    return rel


def best_window(text: str, terms: Sequence[str], max_tokens: int) -> tuple[int, int, str]:
    """(first line, last line, text) of the paragraph run that holds most query terms."""
    lines = text.split("\n")
    paragraphs: list[tuple[int, int]] = []
    start = None
    for i, line in enumerate(lines + [""]):
        if line.strip() and start is None:
            start = i
        elif not line.strip() and start is not None:
            paragraphs.append((start, i - 1))
            start = None
    if not paragraphs:
        return 1, 1, ""
    wanted = set(terms)

    def hits(p: tuple[int, int]) -> int:
        words = set(re.findall(r"\w+", fold("\n".join(lines[p[0] : p[1] + 1]))))
        return len(words & wanted)

    first = max(range(len(paragraphs)), key=lambda i: (hits(paragraphs[i]), -i))
    end = first
    while end + 1 < len(paragraphs):
        piece = "\n".join(lines[paragraphs[first][0] : paragraphs[end + 1][1] + 1])
        if estimate_tokens(piece) > max_tokens:
            break
        end += 1
    a, b = paragraphs[first][0], paragraphs[end][1]
    window = "\n".join(lines[a : b + 1])
    if estimate_tokens(window) > max_tokens:
        # One long paragraph: cut it by words so the window stays inside the budget.
        words = window.split(" ")
        while words and estimate_tokens(" ".join(words)) > max_tokens:
            words = words[: max(1, len(words) * 3 // 4)] if len(words) > 1 else []
        window = " ".join(words)
    return a + 1, b + 1, window


def source_windows(
    conn: Connection,
    vault: Path,
    pages: Sequence[EvidencePage],
    terms: Sequence[str],
    *,
    budget_tokens: int,
    used: int,
    max_bytes: int,
) -> tuple[list[SourceWindow], int, list[str]]:
    """Raw text windows of the sources the pages cite, within what is left of the budget;
    returns (windows, tokens used in all, warnings about refused or unreadable sources)."""
    index = build_link_index(search_store.note_names(conn) + _source_files(vault))
    windows: list[SourceWindow] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for page in pages:
        for raw in _source_candidates(conn, page, index):
            try:
                rel = confine_source(vault, raw, index, page.path)
                if rel in seen:
                    continue
                seen.add(rel)
                note = read_note(vault, rel, max_bytes, refuse_hard_links=True)
            except PathOutsideVault as exc:
                warnings.append(f"refused source of {page.path}: {exc.message}")
                continue
            except VaultError as exc:
                warnings.append(f"skipped source of {page.path}: {exc.message}")
                continue
            room = min(WINDOW_TOKENS, budget_tokens - used)
            if room <= 0:
                warnings.append(f"no budget left for source {rel}")
                continue
            first, last, text = best_window(note.text, terms, room)
            if not text:
                continue
            used += estimate_tokens(text)
            windows.append(
                SourceWindow(path=rel, cited_by=page.path, lines=(first, last), text=text)
            )
    return windows, used, warnings


def _source_files(vault: Path) -> list[tuple[str, list[str]]]:
    """Files under sources/ and raw/ (any extension), so wikilinks to them resolve.
    Symlinked folders are not followed here; `confine_source` judges each file."""
    found: list[tuple[str, list[str]]] = []
    for folder in SOURCE_FOLDERS:
        root = vault / folder
        if not root.is_dir() or root.is_symlink():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                rel = os.path.relpath(os.path.join(dirpath, name), vault).replace(os.sep, "/")
                found.append((rel, []))
    return found
