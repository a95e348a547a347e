"""The vault files an answer's ledger names, and the review candidates a link may await.

File look-ups only (inside the vault, through `vault.resolve_inside`): a path is never
invented.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from askvault.adapters.vault import resolve_inside
from askvault.core.citations import slug
from askvault.core.links import extract_links
from askvault.errors import AskvaultError
from askvault.records import ParsedNote
from askvault.services.retrieval.note_reads import NoteReads
from askvault.settings import Settings


def review_candidate_slugs(settings: Settings) -> set[str]:
    """Slugs of the answer notes still in queries/answers (pending, not broken, when linked)."""
    folder = settings.vault_path / settings.queries.folder / settings.queries.answers
    try:
        return {slug(p.name) for p in folder.iterdir() if p.suffix.lower() == ".md"}
    except OSError:
        return set()


def raw_sources_of(
    settings: Settings, notes: Iterable[tuple[str, ParsedNote | None]], reads: NoteReads
) -> dict[str, list[str]]:
    """For each (path, parsed note), the raw files its `sources:` lead to."""
    return {
        path: resolve_raw_sources(settings, note.sources if note else (), reads)
        for path, note in notes
    }


def resolve_raw_sources(
    settings: Settings, sources: tuple[str, ...], reads: NoteReads | None = None
) -> list[str]:
    """The vault files a page's `sources:` lead to, through `_sources/` summaries to `raw/`
    (each summary read once through `reads`, this answer's reads).

    Only files that exist inside the vault are returned: a path is never invented.
    """
    if reads is None:
        reads = NoteReads(settings.vault_path, settings.index.max_note_bytes)
    found: list[str] = []
    for entry in sources:
        for path in _source_targets(settings, entry):
            if "_sources" in path.split("/")[:-1] and path.lower().endswith(".md"):
                summary = reads.parsed(path)
                for inner in summary.sources if summary else ():
                    found += [
                        p
                        for p in _source_targets(settings, inner)
                        if "_sources" not in p.split("/")
                    ]
            else:
                found.append(path)
    return list(dict.fromkeys(found))


def _source_targets(settings: Settings, entry: str) -> list[str]:
    """Existing vault files one `sources:` entry names (a wikilink or a relative path)."""
    entry = entry.strip()
    links = extract_links(entry)
    target = links[0].target if links else entry
    if not target or "://" in target:
        return []
    candidates = [target, f"{target}.md"]
    if "/" not in target:
        candidates += [f"_sources/{target}.md", f"_sources/{target}", f"raw/{target}"]
    for candidate in candidates:
        try:
            path = resolve_inside(settings.vault_path, candidate)
        except AskvaultError:
            return []
        if path.is_file():
            root = Path(settings.vault_path).resolve()
            return [path.relative_to(root).as_posix()]
    return []
