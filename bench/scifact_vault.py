"""Write BEIR SciFact as an Obsidian-style vault (one note per abstract) for the benchmarks.

Each note is `<doc id>.md` with the document title as its `# Title` heading; the
note path maps back to the BEIR doc id.

A subset for a slow embedder (`subset`): `claims` train claims drawn with a fixed seed,
every gold abstract of those, and abstracts drawn at random from the rest of the corpus
(distractors) up to `size` in all; only those claims are asked.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


SUBSET_SEED = 22


def subset(data: Path, *, claims: int, size: int, seed: int = SUBSET_SEED) -> dict[str, object]:
    """{"claim_ids", "doc_ids", ...}: `claims` train claims (sorted ids, shuffled with
    `seed`), all their gold abstracts, and random other abstracts up to `size` documents."""
    gold: dict[str, set[str]] = {}
    for line in (data / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        qid, doc, _ = line.split("\t")
        gold.setdefault(qid, set()).add(doc)
    rng = random.Random(seed)
    qids = sorted(gold, key=int)
    rng.shuffle(qids)
    picked = sorted(qids[:claims], key=int)
    docs = set().union(*(gold[q] for q in picked))
    corpus = [json.loads(line)["_id"] for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    others = [d for d in corpus if d not in docs]
    rng.shuffle(others)
    distractors = others[: max(0, size - len(docs))]
    return {
        "seed": seed,
        "claim_ids": picked,
        "gold_docs": len(docs),
        "distractors": len(distractors),
        "doc_ids": sorted(docs | set(distractors), key=int),
    }


def write_vault(data: Path, vault: Path, doc_ids: set[str] | None = None) -> int:
    """Write one note per corpus document (only `doc_ids`, when given) into `vault`;
    return the number written."""
    vault.mkdir(parents=True, exist_ok=True)
    count = 0
    with (data / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            if doc_ids is not None and doc["_id"] not in doc_ids:
                continue
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
    parser.add_argument("--subset", type=Path, help="write a subset; its ids go to this JSON")
    parser.add_argument("--claims", type=int, default=300, help="subset: claims asked")
    parser.add_argument("--size", type=int, default=1000, help="subset: abstracts in all")
    args = parser.parse_args()
    doc_ids = None
    if args.subset:
        chosen = subset(args.data, claims=args.claims, size=args.size)
        args.subset.write_text(json.dumps(chosen, indent=1) + "\n", encoding="utf-8")
        doc_ids = set(chosen["doc_ids"])  # type: ignore[call-overload]
    print(write_vault(args.data, args.vault, doc_ids), "notes written")


if __name__ == "__main__":
    main()
