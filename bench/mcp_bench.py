"""The warm query path of `askvault mcp` against a whole `askvault search --json` process.

On a copy of a ../shared/data vault (indexed first with ../shared/tools/minilm_ollama in
--hash-embeddings mode), drives real `askvault mcp` subprocesses through the MCP SDK's stdio
client and reports, as medians (and p90) over the questions of bench/data/help_questions.json:

- start-up: spawn to the `initialize` reply (the index opened before it);
- warm word search (a server whose Ollama host the configuration refuses, so it has no
  embedder: search answers from words, degraded, with no network call at all);
- warm hybrid search (the default fusion; includes the stand-in's query embedding, whose own
  round trip is measured apart and subtracted in the "excluding embedding" column);
- warm context pack (`get_context_pack`, default budget);
- a whole `askvault search --json` process per query (words, and hybrid).

    .venv/bin/python bench/mcp_bench.py [--vault obsidian-help-en|obsidian-hub] [--runs 3] \
        [--qmd /path/to/qmd-peer]

With `--qmd` (the wrapper that ../shared/tools/qmd/install.sh prints), the same vault copy is
indexed by qmd too and its `qmd mcp` stdio server is timed the same way: start-up, and its
`query` tool with one `lex` search (BM25, its only mode that needs no downloaded model) and
`rerank: false`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from _common import REPO, machine, median, percentile, standin_ollama, vault_copy  # noqa: E402
from askvault.adapters.ollama import OllamaEmbedder  # noqa: E402
from askvault.app.clients import OllamaClients
from askvault.services.index.index_pass import index_vault  # noqa: E402
from askvault.settings import load_settings  # noqa: E402

QUESTIONS = REPO / "bench" / "data" / "help_questions.json"
HITS: dict[str, int] = {}  # calls that returned at least one hit, per tool


def bench_env(vault: Path, state: Path, url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKVAULT_", "OLLAMA_"))}
    env.update(
        {
            "ASKVAULT_VAULT": str(vault),
            "ASKVAULT_STATE_DIR": str(state),
            "OLLAMA_HOST": url,
            "ASKVAULT_EMBED_MODEL": "all-minilm",
            "XDG_CONFIG_HOME": str(state / "xdg-config"),
            **extra,
        }
    )
    return env


def with_server(
    env: dict[str, str],
    body: Callable[[ClientSession], Awaitable[list[float]]],
    command: list[str] | None = None,
) -> tuple[float, list[float]]:
    """(seconds from spawn to the initialize reply, what `body` measured)."""
    command = command or [sys.executable, "-m", "askvault", "mcp"]
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)

    async def main() -> tuple[float, list[float]]:
        started = time.perf_counter()
        with open(os.environ.get("MCP_BENCH_ERRLOG", os.devnull), "a") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    ready = time.perf_counter() - started
                    return ready, await body(client)

    return anyio.run(main)


def timed_calls(
    tool: str,
    key: str,
    queries: list[str],
    extra: dict[str, Any] | None = None,
    make_args: Callable[[str], dict[str, Any]] | None = None,
) -> Callable[[ClientSession], Awaitable[list[float]]]:
    def arguments(query: str) -> dict[str, Any]:
        return make_args(query) if make_args else {key: query, **(extra or {})}

    async def body(client: ClientSession) -> list[float]:
        await client.call_tool(tool, arguments(queries[0]))  # warm-up
        seconds = []
        for query in queries:
            t0 = time.perf_counter()
            result = await client.call_tool(tool, arguments(query))
            seconds.append(time.perf_counter() - t0)
            if result.isError:
                raise RuntimeError(result.content[0].text)
            found = result.structuredContent or {}
            HITS[tool] = HITS.get(tool, 0) + bool(
                found.get("hits") or found.get("results") or found.get("pages")
            )
        return seconds

    return body


def cli_calls(env: dict[str, str], queries: list[str]) -> list[float]:
    seconds = []
    for query in queries:
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "askvault", "search", query, "--json"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        seconds.append(time.perf_counter() - t0)
    return seconds


def embed_calls(url: str, queries: list[str]) -> list[float]:
    """The query embedding's own round trip to the stand-in (what hybrid search adds)."""
    embedder = OllamaEmbedder(url, "all-minilm", timeout_s=10)
    try:
        embedder.embed_query(queries[0])
        seconds = []
        for query in queries:
            t0 = time.perf_counter()
            embedder.embed_query(query)
            seconds.append(time.perf_counter() - t0)
        return seconds
    finally:
        embedder.close()


def qmd_figures(
    qmd: str, vault: Path, home: Path, queries: list[str], runs: int
) -> dict[str, list[float]]:
    """qmd's MCP server on the same vault: start-up and a warm BM25 `query` call."""
    env = dict(os.environ, QMD_HOME=str(home))
    for args in (["collection", "add", str(vault), "--name", "bench"], ["update"]):
        subprocess.run(
            [qmd, *args], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def lex(query: str) -> dict[str, Any]:
        return {"searches": [{"type": "lex", "query": query}], "limit": 10, "rerank": False}

    out: dict[str, list[float]] = {"qmd_startup": [], "qmd_lex": []}
    for _ in range(runs):
        ready, seconds = with_server(
            env, timed_calls("query", "", queries, make_args=lex), command=[qmd, "mcp"]
        )
        out["qmd_startup"].append(ready)
        out["qmd_lex"] += seconds
    return out


def ms(values: list[float]) -> str:
    return f"{median(values) * 1000:.1f} / {percentile(values, 90) * 1000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", default="obsidian-help-en")
    parser.add_argument("--runs", type=int, default=3, help="server runs per measure")
    parser.add_argument(
        "--cli-queries",
        type=int,
        default=10,
        help="whole-process searches per run (each costs a process start)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--qmd", help="the qmd-peer wrapper, to time qmd's MCP server too")
    args = parser.parse_args()
    queries = [q["question"] for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))]

    with (
        vault_copy(args.vault) as vault,
        tempfile.TemporaryDirectory() as tmp,
        standin_ollama(hashed=True) as url,
    ):
        state = Path(tmp)
        settings = load_settings(None, env=bench_env(vault, state, url))
        report = index_vault(settings, OllamaClients(settings))
        notes = len(report.index.added)
        hybrid_env = bench_env(vault, state, url)
        # Words only: a host the configuration refuses (TEST-NET, not loopback) leaves the
        # server without an embedder, so search answers from words with no network call.
        words_env = bench_env(vault, state, url, OLLAMA_HOST="http://192.0.2.1:11434")
        figures: dict[str, list[float]] = {
            k: []
            for k in ("startup", "words", "hybrid", "context", "embed", "cli_words", "cli_hybrid")
        }
        for _ in range(args.runs):
            ready, seconds = with_server(words_env, timed_calls("search", "query", queries))
            figures["startup"].append(ready)
            figures["words"] += seconds
            ready, seconds = with_server(hybrid_env, timed_calls("search", "query", queries))
            figures["startup"].append(ready)
            figures["hybrid"] += seconds
            _, seconds = with_server(hybrid_env, timed_calls("get_context_pack", "prompt", queries))
            figures["context"] += seconds
            figures["embed"] += embed_calls(url, queries)
            figures["cli_words"] += cli_calls(words_env, queries[: args.cli_queries])
            figures["cli_hybrid"] += cli_calls(hybrid_env, queries[: args.cli_queries])
        if args.qmd:
            figures.update(qmd_figures(args.qmd, vault, state / "qmd", queries, args.runs))

    embed_ms = median(figures["embed"]) * 1000
    print(f"machine: {machine()}")
    print(
        f"vault: {args.vault} ({notes} notes), {len(queries)} queries x {args.runs} runs; "
        "hashed stand-in embeddings on loopback"
    )
    print(f"calls with at least one hit: {HITS}")
    print("| measure | median / p90 (ms) |\n|---|---:|")
    print(f"| start-up: spawn to `initialize` reply | {ms(figures['startup'])} |")
    print(f"| `search` tool, words only (no embedder) | {ms(figures['words'])} |")
    print(f"| `search` tool, hybrid (with the query's embedding) | {ms(figures['hybrid'])} |")
    print(
        f"| `search` tool, hybrid, excluding the embedding call ({embed_ms:.1f} ms) | "
        f"{median(figures['hybrid']) * 1000 - embed_ms:.1f} |"
    )
    print(f"| `get_context_pack` tool (budget 4,000) | {ms(figures['context'])} |")
    print(f"| whole `askvault search --json` process, words | {ms(figures['cli_words'])} |")
    print(f"| whole `askvault search --json` process, hybrid | {ms(figures['cli_hybrid'])} |")
    if args.qmd:
        print(
            f"| qmd 2.8.3 `qmd mcp`: spawn to `initialize` reply | {ms(figures['qmd_startup'])} |"
        )
        print(f"| qmd `query` tool, one `lex` search, `rerank: false` | {ms(figures['qmd_lex'])} |")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"vault": args.vault, "notes": notes, "machine": machine(), **figures}, indent=1
            )
        )


if __name__ == "__main__":
    main()
