"""How long askvault takes to check a long reply: 10 kB, 100 kB and 1 MB replies.

A model reply is untrusted input (issue 25): a server that ignores `num_predict`, or a
model that never stops, can send megabytes. This bench answers one question of the hub
vault (words-only index, as bench/answer_path_bench.py) with a scripted reply of each
size, made of what a small model writes: sentences copied from the excerpts and cited by
number or by wikilink, sentences nothing supports, list items, code spans, bare URLs and
blank lines between paragraphs (`--shape line` puts the whole reply on one line). The
time is the answer path after generation (numbered citations resolved, links resolved,
every claim judged, the answer annotated, the ledger made) plus rendering the note: what
a reply costs once it has arrived. The reply caps are set above the size, so the whole
reply is checked.

    .venv/bin/python bench/reply_check_bench.py [--runs 3] [--sizes 10000,100000,1000000]
        [--shape paragraphs|line] [--state DIR] [--json FILE]

Prints, per size, the median over runs of the seconds and of the microseconds per reply
byte (flat when the check is linear in the reply's length).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answer_path_bench import hub_settings  # noqa: E402
from askvault.adapters.db import connect  # noqa: E402
from askvault.core.answer_note import render_answer_note  # noqa: E402
from askvault.records import QuestionOptions  # noqa: E402
from askvault.services.answer import answer_question  # noqa: E402
from askvault.settings import Settings  # noqa: E402

QUESTION = "How do I install a community plugin?"
SIZES = (10_000, 100_000, 1_000_000)
# What a small model writes, in turn: cited by number or by wikilink, unsupported, a list
# item, code, a bare address, two numbers; paragraphs end after the last (`{s}` is an
# excerpt's sentence, `{n}` its number, `{link}` its wikilink, `{i}` a counter).
PIECES = (
    "{s} [{n}].",
    "{s} {link}.",
    "The plugin number {i} also rewrites every setting of the vault at night.",
    "- {s} [{n}]",
    "Run `plugin-{i} --install` as {link} explains: {low}.",
    "See https://example.com/docs/{i} for {low} [{n}].",
    "{s}, and it says so [{n}][{m}].",
    "{s} [{n}].",
)
_EXCERPT = re.compile(r"^Excerpt \[(\d+)\] from (\[\[[^\]]+\]\]):$")


def excerpts_of(prompt: str) -> list[tuple[int, str, list[str]]]:
    """(number, wikilink, quoted sentences) of each excerpt in the prompt."""
    out: list[tuple[int, str, list[str]]] = []
    for block in prompt.split("\n\n"):
        lines = block.split("\n")
        match = _EXCERPT.match(lines[0])
        if match is None:
            continue
        quoted = [line[2:].strip() for line in lines[1:] if line.startswith("> ")]
        prose = [line for line in quoted if "|" not in line and not line.startswith("#")]
        sentences = [
            s.strip()
            for line in prose
            for s in re.split(r"(?<=[.!?])\s+", line)
            if 6 <= len(s.split()) <= 40
        ]
        if sentences:
            out.append((int(match.group(1)), match.group(2), sentences))
    return out


def long_reply(prompt: str, size: int, shape: str) -> str:
    """A reply of about `size` characters made of the excerpts' sentences (see above)."""
    sources = excerpts_of(prompt) or [(1, "[[Nowhere]]", ["The notes say nothing here."])]
    parts: list[str] = []
    length = 0
    i = 0
    while length < size:
        number, link, sentences = sources[i % len(sources)]
        sentence = sentences[(i // len(sources)) % len(sentences)].rstrip(".!?")
        kind = i % len(PIECES)
        piece = PIECES[kind].format(
            s=sentence,
            low=sentence.lower(),
            n=number,
            m=(number % len(sources)) + 1,
            link=link,
            i=i,
        )
        if shape == "line":
            piece = piece.removeprefix("- ")
            sep = " "
        else:
            sep = "\n" if kind in (2, 3) else "\n\n" if kind == 7 else " "
        parts.append(piece + sep)
        length += len(piece) + len(sep)
        i += 1
    return "".join(parts)[:size].rstrip()


class LongReplyGenerator:
    """The reply of `size` characters in pieces of about 4 characters, as a model streams."""

    def __init__(self, size: int, shape: str) -> None:
        self.size, self.shape = size, shape

    def stream(
        self, messages: Sequence[dict[str, str]], *, model: str, num_ctx: int
    ) -> Iterator[str]:
        reply = long_reply(messages[-1]["content"], self.size, self.shape)
        for start in range(0, len(reply), 4096):
            yield reply[start : start + 4096]

    def close(self) -> None:
        """Nothing to release."""


def uncapped(settings: Settings, size: int) -> Settings:
    """`settings` with every reply cap above `size` (so the whole reply is checked)."""
    ollama = settings.ollama
    caps = {
        name: max(getattr(ollama, name), size * 4)
        for name in ("num_predict", "reply_max_bytes")
        if hasattr(ollama, name)
    }
    if hasattr(ollama, "reply_max_s"):
        caps["reply_max_s"] = max(ollama.reply_max_s, 86_400.0)
    return replace(settings, ollama=replace(ollama, **caps))


def check_once(settings: Settings, size: int, shape: str) -> tuple[float, int, str]:
    """(seconds after generation, reply bytes, status) for one answer."""
    conn = connect(settings.db_path)
    try:
        started = time.perf_counter()
        result = answer_question(
            conn,
            uncapped(settings, size),
            QUESTION,
            QuestionOptions(),
            embedder=None,
            generator=LongReplyGenerator(size, shape),
        )
        render_answer_note(result.note)
        total = time.perf_counter() - started
    finally:
        conn.close()
    spent = total - result.timings.get("retrieval_s", 0.0) - result.timings.get("generation_s", 0)
    return spent, len(result.reply.encode()), result.status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--shape", choices=("paragraphs", "line"), default="paragraphs")
    parser.add_argument("--state", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with hub_settings(args.state) as settings:
        check_once(settings, 1_000, args.shape)  # warm the page cache and the imports
        for size in sizes:
            runs = [check_once(settings, size, args.shape) for _ in range(args.runs)]
            seconds = statistics.median(s for s, _, _ in runs)
            reply_bytes = runs[0][1]
            rows.append(
                {
                    "size": size,
                    "reply_bytes": reply_bytes,
                    "status": runs[0][2],
                    "check_s_median": round(seconds, 3),
                    "us_per_byte": round(1e6 * seconds / max(1, reply_bytes), 2),
                    "runs": [round(s, 3) for s, _, _ in runs],
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    doc = {"question": QUESTION, "shape": args.shape, "runs": args.runs, "sizes": rows}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
