"""A fixed sample of the Obsidian hub vault for the retrieval bench (issue 22, item 1).

The rule: every Markdown note of the hub outside dot-folders and template folders (a
folder named `Templates` or `<number> Templates`), whose body is at least `MIN_BODY_CHARS`
characters once the hub's boilerplate is taken out (frontmatter, `%% ... %%` comments,
HTML comments, the footer below `%% Hub footer`, image embeds such as the badges, the
addresses of Markdown links); `SAMPLE_SIZE` of
those, drawn with `random.Random(SAMPLE_SEED).sample` from their sorted vault-relative
paths. The draw's order is kept: the questions were written for notes from the front of
it. bench/data/hub_sample.json holds the drawn paths, so the bench rebuilds the same
sub-vault without the rule; `--check` draws again and compares.

    .venv/bin/python bench/hub_sample.py --write bench/data/hub_sample.json
    .venv/bin/python bench/hub_sample.py --check bench/data/hub_sample.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
from pathlib import Path, PurePosixPath

HUB_VAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "vaults" / "obsidian-hub"
SAMPLE_FILE = Path(__file__).resolve().parent / "data" / "hub_sample.json"
SAMPLE_SEED = 22
SAMPLE_SIZE = 400
MIN_BODY_CHARS = 300

_FRONTMATTER = re.compile(r"\A---\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_FOOTER = re.compile(r"%%\s*Hub footer.*\Z", re.S | re.I)
_COMMENT = re.compile(r"%%.*?%%", re.S)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TEMPLATE_FOLDER = re.compile(r"(?:\d+ )?templates", re.I)


def note_body(text: str) -> str:
    """The words a reader sees in a hub note: no frontmatter, comments (Obsidian's and
    HTML's), footer or image embeds, a Markdown link's text without its address,
    whitespace collapsed."""
    body = _FRONTMATTER.sub("", text, count=1)
    body = _FOOTER.sub("", body)
    body = _COMMENT.sub("", body)
    body = _HTML_COMMENT.sub("", body)
    body = _IMAGE.sub("", body)
    body = _LINK.sub(r"\1", body)
    return " ".join(body.split())


def is_eligible(rel_path: str, text: str) -> bool:
    """A note the sample may draw: Markdown, outside dot-folders and template folders,
    and no stub (a body of at least MIN_BODY_CHARS characters)."""
    path = PurePosixPath(rel_path)
    if path.suffix != ".md":
        return False
    folders = path.parts[:-1]
    if any(part.startswith(".") for part in path.parts):
        return False
    if any(_TEMPLATE_FOLDER.fullmatch(part) for part in folders):
        return False
    return len(note_body(text)) >= MIN_BODY_CHARS


def draw_sample(
    notes: dict[str, str], size: int = SAMPLE_SIZE, seed: int = SAMPLE_SEED
) -> list[str]:
    """`size` eligible paths of `notes` (vault-relative posix path -> text), in the order
    `random.Random(seed).sample` draws them from the sorted eligible paths; all of them,
    shuffled, when fewer are eligible."""
    eligible = sorted(p for p, text in notes.items() if is_eligible(p, text))
    return random.Random(seed).sample(eligible, min(size, len(eligible)))


def read_vault(vault: Path) -> dict[str, str]:
    """Every Markdown note of `vault` outside dot-folders: relative posix path -> text."""
    notes = {}
    for path in vault.rglob("*.md"):
        rel = path.relative_to(vault).as_posix()
        if not any(part.startswith(".") for part in PurePosixPath(rel).parts):
            notes[rel] = path.read_text(encoding="utf-8", errors="replace")
    return notes


def copy_sample(source: Path, paths: list[str], target: Path) -> int:
    """Copy the sampled notes (only those) from `source` into `target`, keeping their
    folders; the copies are writable (the hub is read-only). Returns the number copied."""
    for rel in paths:
        dest = target / rel
        if not dest.resolve().is_relative_to(target.resolve()):
            raise ValueError(f"{rel!r} is outside the sample vault")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, dest)
        os.chmod(dest, 0o644)
    return len(paths)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vault", type=Path, default=HUB_VAULT)
    parser.add_argument("--size", type=int, default=SAMPLE_SIZE)
    parser.add_argument("--seed", type=int, default=SAMPLE_SEED)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="draw the sample and write it as JSON here")
    group.add_argument("--check", type=Path, help="draw again and compare with this JSON")
    args = parser.parse_args()
    paths = draw_sample(read_vault(args.vault), args.size, args.seed)
    if args.write:
        record = {
            "seed": args.seed,
            "size": len(paths),
            "min_body_chars": MIN_BODY_CHARS,
            "rule": "bench/hub_sample.py (draw_sample): eligible notes, sorted, "
            "random.Random(seed).sample; paths in the order drawn",
            "paths": paths,
        }
        args.write.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", "utf-8")
        print(f"{len(paths)} notes written to {args.write}")
    else:
        stored = json.loads(args.check.read_text(encoding="utf-8"))["paths"]
        print("same sample" if stored == paths else "the sample differs")
        raise SystemExit(0 if stored == paths else 1)


if __name__ == "__main__":
    main()
