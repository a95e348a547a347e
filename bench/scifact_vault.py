"""Write BEIR SciFact as an Obsidian-style vault (one note per abstract) for the benchmarks.

Each note is `<doc id>.md` with the document title as its `# Title` heading; the
note path maps back to the BEIR doc id.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def write_vault(data: Path, vault: Path) -> int:
    """Write one note per corpus document into `vault`; return the number written."""
    vault.mkdir(parents=True, exist_ok=True)
    count = 0
    with (data / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            title = " ".join(doc.get("title", "").split())
            # The title goes in frontmatter so the FTS title column holds the paper's title.
            text = f"---\ntitle: {json.dumps(title)}\n---\n# {title}\n\n{doc['text']}\n"
            (vault / f"{doc['_id']}.md").write_text(text, encoding="utf-8")
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--vault", type=Path, required=True)
    args = parser.parse_args()
    print(write_vault(args.data, args.vault), "notes written")


if __name__ == "__main__":
    main()
