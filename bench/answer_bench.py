"""Answer quality of the real pipeline: a question set over a copy of the Obsidian Help vault.

Runs `answer.answer_question` (retrieval, prompt, streamed reply, citation and
support checks) for every question of bench/data/answer_questions.json against the
Ollama at --host: a real chat model (e.g. Qwen2.5-Coder-1.5B on the CPU behind
../shared/tools/llm_ollama) or the extractive stand-in (../shared/tools/minilm_ollama).
Model replies are cached by prompt hash (--cache), so re-scoring after a checker
change costs nothing; a prompt change asks the model again.

Per question and in total: key-fact recall (facts found in the published answer),
citation precision (cited pages that are expected or that support their sentence),
share of published claims supported or visibly flagged, abstention on unanswerable,
false abstention on answerable, broken and ungrounded links published, prompt tokens,
seconds per answer (the model's original time when the reply came from the cache),
and context recall (facts present in the excerpts sent: the retrieval ceiling).

    OLLAMA_HOST=http://127.0.0.1:11436 .venv/bin/python bench/answer_bench.py \
        --chat-model qwen2.5-coder:1.5b --embed-model all-minilm [--limit N] [--json FILE]

`--questions bench/data/answer_questions_holdout.json` runs the held-out set (30 questions
over notes the main set never uses): a change decided on the main set is checked there;
`bench/data/answer_questions_fresh.json` is the set written for issue 21 without sight of
the others or of any reply (61 questions, each with a reference answer): it only checks.

Correctness is read, not computed: each reply is labelled right / partly / wrong (or none:
it declines) by a reader who sees the question, its reference and key facts and the notes,
but not which variant or checker produced the reply, nor whether it was published. Labels
are stored by reply (bench/data/answer_labels.json, keyed by the hash of the question id
and the reply's words without its links), so re-scoring after a checker change costs
nothing; `--export-unlabelled FILE` writes the replies no label covers yet, shuffled, for
the reader. Reported first: wrong published (of all published answers), right replies
withheld (of answerable questions), fully right (of answerable), abstention on unanswerable;
the key-fact figures beside them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.core.links import extract_links, resolve_link
from askvault.records import QuestionOptions
from askvault.services.answer import AnswerResult, answer_question
from askvault.services.index.index_pass import index_vault
from askvault.services.retrieval.context_graph import link_index_from_db
from askvault.settings import Settings, load_settings

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "data"
HELP_VAULT = SHARED / "vaults" / "obsidian-help-en"
QUESTIONS = HERE / "data" / "answer_questions.json"
LABELS = HERE / "data" / "answer_labels.json"
LABEL_VALUES = ("right", "partly", "wrong", "none")
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "askvault-bench/answer_replies.sqlite"
)


class CachingGenerator:
    """A `Generator` that replays a reply recorded for the same prompt, else asks the model.

    The key is the hash of (model, options, messages): any prompt change misses. The
    recorded entry keeps the model's own times, so a replayed answer reports them.
    """

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner = inner
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT, meta TEXT)"
        )
        self.last: dict[str, Any] = {}
        self.calls: list[dict[str, Any]] = []  # every request since the caller cleared it
        self.usage: Any = None

    def close(self) -> None:
        self.db.close()
        self.inner.close()

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        model: str,
        num_ctx: int,
        format: Any = None,
        options: Any = None,
    ) -> Iterator[str]:
        merged = {**getattr(self.inner, "options", {}), **(options or {}), "num_ctx": num_ctx}
        keyed: list[Any] = [model, merged, list(messages)]
        if format:
            keyed.append(format)  # a constrained reply is another request
        key = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()
        row = self.db.execute("SELECT reply, meta FROM replies WHERE key = ?", (key,)).fetchone()
        host = getattr(self.inner, "host", "")
        if row is not None and json.loads(row[1]).get("host", host) != host:
            row = None  # recorded from another server: never replay a stand-in as the model
        if row is not None:
            self.last = {**json.loads(row[1]), "cached": True}
            self.calls.append(self.last)
            self.usage = _Usage(self.last.get("prompt_tokens"))
            yield row[0]
            return
        started = time.monotonic()
        first = None
        pieces = []
        for piece in self.inner.stream(
            messages, model=model, num_ctx=num_ctx, format=format, options=options
        ):
            if first is None:
                first = time.monotonic()
            pieces.append(piece)
            yield piece
        end = time.monotonic()
        usage = self.inner.usage
        meta = {
            "prompt_eval_s": round((first or end) - started, 3),
            "generation_s": round(end - (first or end), 3),
            "prompt_tokens": usage.prompt_tokens,
            "reply_tokens": usage.reply_tokens,
            "host": getattr(self.inner, "host", ""),
        }
        self.db.execute(
            "INSERT OR REPLACE INTO replies VALUES (?, ?, ?)",
            (key, "".join(pieces), json.dumps(meta)),
        )
        self.db.commit()
        self.last = {**meta, "cached": False}
        self.calls.append(self.last)
        self.usage = usage


@dataclass
class _Usage:
    prompt_tokens: int | None


@dataclass
class Score:
    """One question's figures."""

    qid: str
    answerable: bool
    status: str
    facts: int = 0
    facts_found: int = 0
    facts_in_context: int = 0
    cited: int = 0
    cited_good: int = 0
    claims: int = 0
    claims_supported: int = 0
    claims_flagged_visibly: int = 0
    broken_published: int = 0
    ungrounded_published: int = 0
    added_links: int = 0
    prompt_tokens: int = 0
    prompt_tokens_counted: int | None = None
    seconds: float = 0.0
    nearest_distance: float | None = None
    answer: str = ""
    reply: str = ""
    reply_key: str = ""
    label: str | None = None  # the reader's: right | partly | wrong | none (declines)
    judged: str | None = None  # the meaning check's verdict (queries.verify), if asked
    # The question the model says the answer answers, and its cosine with the user's
    # (queries.own_question), when asked.
    own_question: str | None = None
    own_question_cosine: float | None = None
    decided_by: str = ""
    notes: list[str] = field(default_factory=list)


def score(
    question: dict[str, Any],
    result: AnswerResult,
    conn: Any,
    excerpts_text: str,
    model_seconds: float,
    prompt_tokens: int,
    counted: int | None,
    labels: dict[str, dict[str, str]] | None = None,
) -> Score:
    """The figures of one answer (see the module docstring)."""
    labels = labels or {}
    published = result.status == "answered"
    body = result.answer if published else ""
    s = Score(
        question["id"],
        question["answerable"],
        result.status,
        answer=result.answer,
        reply=result.reply,
        reply_key=reply_key(question["id"], result.reply),
        label=labels.get(reply_key(question["id"], result.reply), {}).get("label"),
        judged=result.verification.judged.verdict if result.verification.judged else None,
        own_question=result.own_question.question,
        own_question_cosine=result.own_question.cosine,
        decided_by=result.decided_by or "",
        prompt_tokens=prompt_tokens,
        prompt_tokens_counted=counted,
        seconds=model_seconds,
        nearest_distance=result.nearest_distance,
    )
    facts = question.get("facts", [])
    s.facts = len(facts)
    s.facts_found = sum(1 for variants in facts if _any_in(variants, body))
    s.facts_in_context = sum(1 for variants in facts if _any_in(variants, excerpts_text))
    report = result.report
    if report is None or report.error:
        s.notes.append(f"report unavailable: {report.error if report else 'none'}")
        return s
    expected = set(question.get("expected", []))
    if published:
        for c in report.citations:
            if c.state != "resolved" or not c.published:
                continue  # not a link in the published answer
            s.cited += 1
            if c.path in expected or (c.support == "supported" and c.grounded):
                s.cited_good += 1
        s.claims = len(report.claims)
        s.claims_supported = report.supported_claims
        s.claims_flagged_visibly = sum(1 for c in report.flagged_claims if "⚠️" in body)
        s.added_links = sum(1 for c in report.claims if c.added)
        index = link_index_from_db(conn)
        grounded = (
            {e.path for e in result.note.report.citations if e.grounded}
            if result.note.report
            else set()
        )
        for link in extract_links(body):
            path = resolve_link(link.target, index) if link.target else None
            if path is None:
                s.broken_published += 1
            elif path not in set(result.grounding) and path not in grounded:
                s.ungrounded_published += 1
    return s


def _any_in(variants: Sequence[str], text: str) -> bool:
    folded = text.casefold()
    return any(v.casefold() in folded for v in variants)


_NUMBER_CITATION = re.compile(r"\[(?:excerpts?\s*)?\d{1,3}(?:\s*[,;]\s*\d{1,3})*\]", re.IGNORECASE)


def reply_words(reply: str) -> str:
    """A reply as a reader judges it: the model's words as it wrote them (what a checker
    does to them changes no label), without its `[n]` excerpt numbers, which say nothing
    to a reader and differ between prompts that number the same excerpts otherwise."""
    return " ".join(_NUMBER_CITATION.sub(" ", reply).split()).replace(" .", ".")


def reply_key(qid: str, reply: str) -> str:
    """The label's key: the question and the reply's words."""
    return hashlib.sha256(f"{qid}\n{reply_words(reply)}".encode()).hexdigest()[:16]


def load_labels(path: Path) -> dict[str, dict[str, str]]:
    """The reader's labels by reply key (empty when the file is absent)."""
    if not path.exists():
        return {}
    labels = json.loads(path.read_text(encoding="utf-8"))
    bad = {k: v for k, v in labels.items() if v.get("label") not in LABEL_VALUES}
    if bad:
        raise SystemExit(f"{path}: labels must be one of {LABEL_VALUES}: {sorted(bad)[:5]}")
    return labels


def export_unlabelled(
    path: Path, scores: Sequence[Score], questions: Sequence[dict[str, Any]]
) -> int:
    """Append the replies no label covers to `path` (JSON lines, in key order, so that
    neither the variant nor the status shows); returns how many were new."""
    by_id = {q["id"]: q for q in questions}
    known: set[str] = set()
    if path.exists():
        known = {json.loads(line)["key"] for line in path.read_text().splitlines() if line}
    rows = []
    for s in sorted(scores, key=lambda s: s.reply_key):
        if s.label is not None or s.reply_key in known:
            continue
        known.add(s.reply_key)
        q = by_id[s.qid]
        rows.append(
            {
                "key": s.reply_key,
                "question": q["question"],
                "answerable": q["answerable"],
                "reference": q.get("reference", ""),
                "facts": q.get("facts", []),
                "notes": q.get("expected", []),
                "reply": reply_words(s.reply),
            }
        )
    with path.open("a", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)


def correctness(scores: Sequence[Score]) -> dict[str, Any]:
    """The reader's figures: what was published wrong, what right reply was withheld."""
    answerable = [s for s in scores if s.answerable]
    unanswerable = [s for s in scores if not s.answerable]
    published = [s for s in scores if s.status == "answered"]
    withheld = [s for s in answerable if s.status != "answered"]
    return {
        "unlabelled": sum(1 for s in scores if s.label is None),
        "published": len(published),
        "wrong_published": _ratio(sum(1 for s in published if s.label == "wrong"), len(published)),
        "wrong_published_n": sum(1 for s in published if s.label == "wrong"),
        "partly_published_n": sum(1 for s in published if s.label == "partly"),
        "right_withheld": _ratio(sum(1 for s in withheld if s.label == "right"), len(answerable)),
        "right_withheld_n": sum(1 for s in withheld if s.label == "right"),
        "fully_right": _ratio(
            sum(1 for s in answerable if s.status == "answered" and s.label == "right"),
            len(answerable),
        ),
        "fully_right_n": sum(
            1 for s in answerable if s.status == "answered" and s.label == "right"
        ),
        "partly_right_n": sum(
            1 for s in answerable if s.status == "answered" and s.label == "partly"
        ),
        "abstention_unanswerable": _ratio(
            sum(1 for s in unanswerable if s.status != "answered"), len(unanswerable)
        ),
    }


def summarise(scores: Sequence[Score]) -> dict[str, Any]:
    """The totals the issue's targets are stated in: the reader's first, key facts after."""
    answerable = [s for s in scores if s.answerable]
    unanswerable = [s for s in scores if not s.answerable]
    facts = sum(s.facts for s in answerable)
    cited = sum(s.cited for s in scores)
    claims = sum(s.claims for s in scores)
    return {
        **correctness(scores),
        "questions": len(scores),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "key_fact_recall": _ratio(sum(s.facts_found for s in answerable), facts),
        "context_fact_recall": _ratio(sum(s.facts_in_context for s in answerable), facts),
        "citation_precision": _ratio(sum(s.cited_good for s in scores), cited),
        "claims_supported_or_flagged": _ratio(
            sum(s.claims_supported + s.claims_flagged_visibly for s in scores), claims
        ),
        "claims_supported": _ratio(sum(s.claims_supported for s in scores), claims),
        "abstention_unanswerable": _ratio(
            sum(1 for s in unanswerable if s.status != "answered"), len(unanswerable)
        ),
        "false_abstention": _ratio(
            sum(1 for s in answerable if s.status != "answered"), len(answerable)
        ),
        "broken_links_published": sum(s.broken_published for s in scores),
        "ungrounded_links_published": sum(s.ungrounded_published for s in scores),
        "links_added_by_askvault": sum(s.added_links for s in scores),
        "median_prompt_tokens": statistics.median([s.prompt_tokens for s in scores] or [0]),
        "median_prompt_tokens_counted": statistics.median(
            [s.prompt_tokens_counted for s in scores if s.prompt_tokens_counted] or [0]
        ),
        "median_seconds": round(statistics.median([s.seconds for s in scores] or [0]), 1),
        "p90_seconds": round(_quantile([s.seconds for s in scores], 0.9), 1),
    }


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def _quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def prepare(vault: Path, workdir: Path, args: argparse.Namespace) -> Settings:
    """A copy of the vault, indexed and embedded with the configured models."""
    copy = workdir / "vault"
    if not copy.exists():
        shutil.copytree(vault, copy)
    flags: dict[str, Any] = {
        "vault": str(copy),
        "state_dir": str(workdir / "state"),
        "ollama.host": args.host,
        "ollama.embed_model": args.embed_model,
        "ollama.chat_model": args.chat_model,
    }
    if args.excerpt_tokens:
        flags["queries.excerpt_tokens"] = args.excerpt_tokens
    if args.num_ctx:
        flags["ollama.num_ctx"] = args.num_ctx
    if args.temperature is not None:
        flags["ollama.temperature"] = args.temperature
    if getattr(args, "max_distance", None) is not None:
        flags["queries.max_distance"] = args.max_distance
    if getattr(args, "verify", None):
        flags["queries.verify"] = args.verify
    if getattr(args, "prompt", None):
        flags["queries.prompt"] = args.prompt
    if getattr(args, "own_question", None):
        flags["queries.own_question"] = args.own_question == "on"
    settings = load_settings(env={}, flags=flags)
    report = index_vault(settings, OllamaClients(settings))
    if report.embed_error or report.pending_embeddings:
        print(f"warning: embeddings incomplete: {report.embed_error}", file=sys.stderr)
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vault", type=Path, default=HELP_VAULT)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--host", default=os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434"))
    parser.add_argument("--chat-model", default="qwen2.5-coder:1.5b")
    parser.add_argument("--embed-model", default="all-minilm")
    parser.add_argument("--excerpt-tokens", type=int, default=None)
    parser.add_argument("--num-ctx", type=int, default=None)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument(
        "--max-distance",
        type=float,
        default=None,
        help="queries.max_distance (0: measured default; 2: no cut-off)",
    )
    parser.add_argument(
        "--verify", default=None, help="queries.verify (off | judge | again | doubtful)"
    )
    parser.add_argument("--prompt", default=None, help="queries.prompt (answer | quote-first)")
    parser.add_argument(
        "--own-question",
        choices=("on", "off"),
        default=None,
        help="queries.own_question (the default: on)",
    )
    parser.add_argument("--limit", type=int, default=None, help="first N questions only")
    parser.add_argument("--only", default="", help="comma-separated question ids")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, default=None, help="write per-question figures")
    parser.add_argument("--run-name", default="", help="a name for this run in --json")
    parser.add_argument("--labels", type=Path, default=LABELS, help="the reader's labels")
    parser.add_argument(
        "--export-unlabelled",
        type=Path,
        default=None,
        help="append the replies no label covers (JSON lines) for the reader",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the vault copy and its index here (reused by the next run)",
    )
    parser.add_argument("--verbose", action="store_true", help="print each checked sentence")
    args = parser.parse_args(argv)
    if not args.vault.exists():
        print(f"skipped: {args.vault} is absent (this benchmark needs ../shared/data)")
        return 0
    questions = json.loads(args.questions.read_text(encoding="utf-8"))
    labels = load_labels(args.labels)
    if args.only:
        wanted = set(args.only.split(","))
        questions = [q for q in questions if q["id"] in wanted]
    if args.limit:
        questions = _interleaved(questions)[: args.limit]
    with tempfile.TemporaryDirectory(prefix="askvault-answer-bench-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        settings = prepare(args.vault, workdir, args)
        conn = connect(settings.db_path)
        embedder = OllamaClients(settings).embedder()
        generator = CachingGenerator(OllamaClients(settings).generator(), args.cache)
        scores = []
        try:
            for q in questions:
                started = time.monotonic()
                generator.calls.clear()
                result = answer_question(
                    conn,
                    settings,
                    q["question"],
                    QuestionOptions(),
                    embedder=embedder,
                    generator=generator,
                )
                wall = time.monotonic() - started
                meta = generator.calls[0] if generator.calls else {}
                # A replayed answer reports the model's own times of every request it made.
                seconds = (
                    sum(c["prompt_eval_s"] + c["generation_s"] for c in generator.calls)
                    + result.timings.get("retrieval_s", 0)
                    + result.timings.get("checks_s", 0)
                    if generator.calls and all(c.get("cached") for c in generator.calls)
                    else wall
                )
                excerpts = "\n".join(e.text for e in result.excerpts)
                s = score(
                    q,
                    result,
                    conn,
                    excerpts,
                    seconds,
                    result.prompt_tokens,
                    meta.get("prompt_tokens"),
                    labels,
                )
                scores.append(s)
                print(
                    json.dumps(
                        {
                            "id": s.qid,
                            "status": s.status,
                            "label": s.label,
                            "judged": s.judged,
                            "facts": f"{s.facts_found}/{s.facts}",
                            "ctx": s.facts_in_context,
                            "cited": f"{s.cited_good}/{s.cited}",
                            "claims": f"{s.claims_supported}/{s.claims}",
                            "added": s.added_links,
                            "tokens": s.prompt_tokens,
                            "s": round(s.seconds, 1),
                            "cached": meta.get("cached"),
                            "reply": result.reply[:300],
                        },
                        ensure_ascii=False,
                    ),
                    flush=True,
                )
                if args.verbose and result.report is not None:
                    for c in result.report.claims:
                        print(
                            f"    {c.verdict:11} {c.coverage:.2f} src={c.source} "
                            f"added={c.added} {c.reason} | {c.sentence[:120]}"
                        )
        finally:
            generator.close()
            embedder.close()
            conn.close()
    summary = summarise(scores)
    summary["run_name"] = args.run_name
    if args.export_unlabelled:
        added = export_unlabelled(args.export_unlabelled, scores, questions)
        print(f"{added} unlabelled replies appended to {args.export_unlabelled}")
    summary["settings"] = {
        "excerpt_tokens": settings.queries.excerpt_tokens,
        "num_ctx": settings.ollama.num_ctx,
        "chat_model": args.chat_model,
        "temperature": settings.ollama.temperature,
        "max_distance": settings.queries.max_distance,
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(
            json.dumps({"summary": summary, "questions": [s.__dict__ for s in scores]}, indent=2)
        )
    return 0


def _interleaved(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Answerable and unanswerable questions mixed in proportion, so --limit keeps both."""
    yes = [q for q in questions if q["answerable"]]
    no = [q for q in questions if not q["answerable"]]
    out: list[dict[str, Any]] = []
    step = max(1, round(len(yes) / max(1, len(no))))
    while yes or no:
        out += yes[:step]
        del yes[:step]
        if no:
            out.append(no.pop(0))
    return out


if __name__ == "__main__":
    sys.exit(main())
