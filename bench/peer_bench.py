"""askvault side by side with tobi/qmd (the closest peer) on a copy of the Obsidian hub vault.

Every row runs the two commands as whole processes, alternating which goes first, and
reports each one's median and the median of the per-pair ratios askvault/qmd (below 1:
askvault is faster or smaller). Rows: cold index (words only; askvault also with hashed
vectors, which qmd cannot make here), index size on disk, re-index unchanged, one edit,
100 renames, word search over 10 queries, `--help`, and askvault's search as a user runs
it, on the index with vectors, against the same `qmd search`: with Ollama down (connection
refused on a loopback port: the search answers from words) and with Ollama up (the query
embedded, hybrid search; issue 22 item 6), each also with `askvault run` running on that
index (the command then asks the daemon, app/search_socket.py).

    .venv/bin/python bench/peer_bench.py --qmd /path/to/qmd-peer [--runs 5] [--json]
        [--search-only] [--query-ollama http://127.0.0.1:11435]

qmd: `bash ../shared/tools/qmd/install.sh DIR` installs qmd 2.8.3 with its own Node and
prints the `qmd-peer` wrapper to pass as --qmd (or set QMD_PEER); without it the qmd
columns are skipped and askvault's figures are printed alone. askvault's vectors come
from ../shared/tools/minilm_ollama in --hash-embeddings mode on a loopback port from
--port on (fast, functional vectors: this measures our work, not a model's). Its word
search runs on the words-only index (qmd's `search` is BM25 only; a hybrid search would
also wait for the query's embedding). The "Ollama up" rows embed each query with the
stand-in, or with --query-ollama (a real embedding server, e.g. minilm_ollama serving
all-minilm: its 384 dimensions match the index's hashed vectors, so the query's embedding
costs what a real model's does; the hits' order then means nothing, their cost is real).
--search-only builds the two indexes once and runs the search rows and `--help` alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATA, machine, median, require_shared, standin_ollama  # noqa: E402

QUERIES = (
    "plugin settings",
    "dataview query",
    "daily notes template",
    "graph view",
    "canvas",
    "sync vault",
    "mobile app",
    "theme snippets",
    "community plugins",
    "keyboard shortcuts",
)
RENAMES = 100
Command = list[str]


def _askvault_command() -> Command:
    script = Path(sys.executable).with_name("askvault")
    return [str(script)] if script.exists() else [sys.executable, "-m", "askvault"]


def _run(argv: Command, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, proc


def _compile_askvault(env: dict[str, str]) -> None:
    """Write askvault's bytecode beside its sources, as `pip install` does."""
    import askvault

    package = Path(askvault.__file__).resolve().parent
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(package)],
        env=env,
        check=True,
        capture_output=True,
    )


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class Peers:
    """The two tools, each with its own copy of the vault and its own index."""

    def __init__(
        self,
        work: Path,
        vault: Path,
        qmd: Path | None,
        ollama_url: str,
        query_url: str | None = None,
    ) -> None:
        self.work, self.qmd = work, qmd
        self.askvault = _askvault_command()
        self.a_vault = work / "askvault-vault"
        self.q_vault = work / "qmd-vault"
        for target in (self.a_vault, self.q_vault):
            shutil.copytree(vault, target, symlinks=True)
            for path in [target, *target.rglob("*")]:
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("ASKVAULT_", "OLLAMA_"))}
        # Start-up as an installed askvault has it: pip compiles a package's bytecode when
        # it installs it, an editable checkout writes it on first run - unless
        # PYTHONDONTWRITEBYTECODE is set, when every process compiles the sources again
        # (~20 ms of each short command on the bench machine).
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        _compile_askvault(base)
        base["XDG_CONFIG_HOME"] = str(work / "xdg-config")
        self.a_env = {
            **base,
            "ASKVAULT_VAULT": str(self.a_vault),
            "ASKVAULT_EMBED_MODEL": "all-minilm",
            "OLLAMA_HOST": ollama_url,
            "ASKVAULT_STATE_DIR": str(work / "askvault-vectors"),
        }
        # Words only: an Ollama that is not there (a closed loopback port).
        self.a_words_env = {
            **self.a_env,
            "OLLAMA_HOST": "http://127.0.0.1:9",
            "ASKVAULT_STATE_DIR": str(work / "askvault-words"),
        }
        # The index with vectors, as a user has it: Ollama down (connection refused), or
        # up with the query embedded.
        self.a_down_env = {**self.a_env, "OLLAMA_HOST": "http://127.0.0.1:9"}
        self.a_up_env = {**self.a_env, "OLLAMA_HOST": query_url or ollama_url}
        self.q_env = {**base, "QMD_HOME": str(work / "qmd-home")}

    # -- commands -----------------------------------------------------------------------
    def a_index(self, env: dict[str, str] | None = None) -> float:
        seconds, proc = _run([*self.askvault, "index", "--json"], env or self.a_env)
        if proc.returncode not in (0, 1) or not proc.stdout.strip():
            raise RuntimeError(f"askvault index failed: {proc.stderr[-500:]}")
        return seconds

    def q_cold(self) -> float:
        shutil.rmtree(self.work / "qmd-home", ignore_errors=True)
        seconds, proc = _run(
            [str(self.qmd), "collection", "add", str(self.q_vault), "--name", "hub"], self.q_env
        )
        if proc.returncode != 0:
            raise RuntimeError(f"qmd collection add failed: {proc.stderr[-500:]}")
        return seconds

    def q_update(self) -> float:
        seconds, proc = _run([str(self.qmd), "update"], self.q_env)
        if proc.returncode != 0:
            raise RuntimeError(f"qmd update failed: {proc.stderr[-500:]}")
        return seconds

    def a_search(self, query: str) -> float:
        seconds, proc = _run([*self.askvault, "search", query, "--json"], self.a_words_env)
        if proc.returncode != 0 or not json.loads(proc.stdout)["hits"]:
            raise RuntimeError(f"askvault search {query!r} found nothing: {proc.stderr[-300:]}")
        return seconds

    def a_search_as_used(self, query: str, ollama_up: bool) -> float:
        """`askvault search` on the index with vectors, Ollama down or up."""
        env = self.a_up_env if ollama_up else self.a_down_env
        seconds, proc = _run([*self.askvault, "search", query, "--json"], env)
        doc = json.loads(proc.stdout) if proc.returncode == 0 else {}
        degraded = doc.get("degraded") or ""
        if not doc.get("hits") or (degraded if ollama_up else "connection refused" not in degraded):
            raise RuntimeError(
                f"askvault search {query!r} (Ollama {'up' if ollama_up else 'down'}): "
                f"{degraded or proc.stderr[-300:]}"
            )
        return seconds

    @contextlib.contextmanager
    def daemon(self, *, ollama_up: bool = False) -> Iterator[None]:
        """`askvault run` on the index with vectors (Ollama down or up), until the block
        ends: the search commands then ask it (its search socket)."""
        env = self.a_up_env if ollama_up else self.a_down_env
        proc = subprocess.Popen(
            [*self.askvault, "run"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 120
            while not self._daemon_answers(env):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"askvault run did not start: {proc.stderr.read()[-500:]!r}")
                time.sleep(0.5)
            yield
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)

    def _daemon_answers(self, env: dict[str, str]) -> bool:
        """True once the daemon has answered a search (its socket, the index read)."""
        from askvault.app.search_socket import ask_daemon
        from askvault.settings import load_settings

        settings = load_settings(None, env=env)
        return ask_daemon(settings, QUERIES[0], limit=None, explain=False) is not None

    def q_search(self, query: str) -> float:
        seconds, proc = _run([str(self.qmd), "search", query, "--json", "-n", "10"], self.q_env)
        if proc.returncode != 0:
            raise RuntimeError(f"qmd search {query!r} failed: {proc.stderr[-300:]}")
        return seconds

    def a_help(self) -> float:
        return _run([*self.askvault, "--help"], self.a_env)[0]

    def q_help(self) -> float:
        return _run([str(self.qmd), "--help"], self.q_env)[0]

    # -- vault changes, the same in both copies ---------------------------------------------
    def notes(self) -> list[str]:
        return sorted(
            str(p.relative_to(self.a_vault))
            for p in self.a_vault.rglob("*.md")
            if not any(part.startswith(".") for part in p.parts)
        )

    def append_line(self, rel: str, round_no: int) -> None:
        for vault in (self.a_vault, self.q_vault):
            with open(vault / rel, "a", encoding="utf-8") as f:
                f.write(f"\nBenchmark edit {round_no}: a new closing line.\n")

    def rename(self, rels: list[str], forth: bool) -> None:
        for vault in (self.a_vault, self.q_vault):
            for rel in rels:
                a, b = vault / rel, vault / (rel[:-3] + " (renamed).md")
                (a.rename(b) if forth else b.rename(a))


def paired(
    runs: int,
    a: Callable[[int], float],
    q: Callable[[int], float] | None,
    before: Callable[[int], None] = lambda i: None,
) -> dict[str, float | None]:
    """Alternate the two commands `runs` times (askvault first on even rounds)."""
    a_times: list[float] = []
    q_times: list[float] = []
    for i in range(runs):
        before(i)
        order = [("a", a), ("q", q)] if i % 2 == 0 else [("q", q), ("a", a)]
        for who, fn in order:
            if fn is not None:
                (a_times if who == "a" else q_times).append(fn(i))
    ratios = [x / y for x, y in zip(a_times, q_times, strict=False)]
    return {
        "askvault_s": round(median(a_times), 4),
        "qmd_s": round(median(q_times), 4) if q_times else None,
        "ratio": round(median(ratios), 3) if ratios else None,
    }


def search_rows(peers: Peers, runs: int) -> dict[str, dict[str, float | None]]:
    """askvault's search (words-only index; index with vectors, Ollama down and up) and
    `--help`, each against qmd's, paired."""
    has_qmd = peers.qmd is not None
    n = len(QUERIES)

    def q_search(i: int) -> float:
        return peers.q_search(QUERIES[i % n])

    rows: dict[str, dict[str, float | None]] = {}
    rows[f"word search, {n} queries (each)"] = paired(
        runs * n, lambda i: peers.a_search(QUERIES[i % n]), q_search if has_qmd else None
    )
    rows["search with vectors, Ollama down (each)"] = paired(
        runs * n,
        lambda i: peers.a_search_as_used(QUERIES[i % n], ollama_up=False),
        q_search if has_qmd else None,
    )
    rows["search with vectors, Ollama up, query embedded (each)"] = paired(
        runs * n,
        lambda i: peers.a_search_as_used(QUERIES[i % n], ollama_up=True),
        q_search if has_qmd else None,
    )
    with peers.daemon():
        # The user's real situation: `askvault run` keeps the index (and answers searches).
        rows["search with vectors, daemon running, Ollama down (each)"] = paired(
            runs * n,
            lambda i: peers.a_search_as_used(QUERIES[i % n], ollama_up=False),
            q_search if has_qmd else None,
        )
    with peers.daemon(ollama_up=True):
        rows["search with vectors, daemon running, Ollama up (each)"] = paired(
            runs * n,
            lambda i: peers.a_search_as_used(QUERIES[i % n], ollama_up=True),
            q_search if has_qmd else None,
        )
    rows["--help"] = paired(
        runs * 2, lambda _: peers.a_help(), (lambda _: peers.q_help()) if has_qmd else None
    )
    return rows


def bench(
    peers: Peers, runs: int, *, search_only: bool = False
) -> dict[str, dict[str, float | None]]:
    has_qmd = peers.qmd is not None
    rows: dict[str, dict[str, float | None]] = {}
    if search_only:
        peers.a_index(peers.a_words_env)
        peers.a_index()
        if has_qmd:
            peers.q_cold()
        return search_rows(peers, runs)

    def a_cold_words(_: int) -> float:
        shutil.rmtree(peers.work / "askvault-words", ignore_errors=True)
        return peers.a_index(peers.a_words_env)

    cold_runs = max(1, min(runs, 3))
    rows["cold index, words only"] = paired(
        cold_runs, a_cold_words, (lambda _: peers.q_cold()) if has_qmd else None
    )

    def a_cold_vectors() -> float:
        shutil.rmtree(peers.work / "askvault-vectors", ignore_errors=True)
        return peers.a_index()

    vec = [a_cold_vectors() for _ in range(cold_runs)]
    qmd_cold = rows["cold index, words only"]["qmd_s"]
    rows["cold index, askvault with vectors (vs qmd words only)"] = {
        "askvault_s": round(median(vec), 4),
        "qmd_s": qmd_cold,
        "ratio": round(median(vec) / qmd_cold, 3) if qmd_cold else None,
    }

    a_words = _folder_bytes(peers.work / "askvault-words") / 1e6
    a_vectors = _folder_bytes(peers.work / "askvault-vectors") / 1e6
    q_size = _folder_bytes(peers.work / "qmd-home" / "cache") / 1e6 if has_qmd else None
    rows["index size MB, words only"] = {
        "askvault_s": round(a_words, 1),
        "qmd_s": round(q_size, 1) if q_size else None,
        "ratio": round(a_words / q_size, 3) if q_size else None,
    }
    rows["index size MB, askvault with 384-dim vectors (vs qmd without)"] = {
        "askvault_s": round(a_vectors, 1),
        "qmd_s": round(q_size, 1) if q_size else None,
        "ratio": round(a_vectors / q_size, 3) if q_size else None,
    }

    q_update = (lambda _: peers.q_update()) if has_qmd else None
    rows["re-index unchanged"] = paired(runs, lambda _: peers.a_index(), q_update)
    notes = peers.notes()
    rows["re-index after one edit"] = paired(
        runs,
        lambda _: peers.a_index(),
        q_update,
        before=lambda i: peers.append_line(notes[(i * 997) % len(notes)], i),
    )
    picked = notes[:: max(1, len(notes) // RENAMES)][:RENAMES]
    rows[f"re-index after {RENAMES} renames"] = paired(
        runs,
        lambda _: peers.a_index(),
        q_update,
        before=lambda i: peers.rename(picked, forth=i % 2 == 0),
    )
    rows.update(search_rows(peers, runs))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--qmd",
        type=Path,
        default=os.environ.get("QMD_PEER") or None,
        help="the qmd-peer wrapper printed by ../shared/tools/qmd/install.sh",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--port", type=int, default=11500, help="first loopback port tried for the Ollama stand-in"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--search-only", action="store_true", help="build the indexes once; search rows only"
    )
    parser.add_argument(
        "--query-ollama",
        default=None,
        help="a loopback embedding server for the Ollama-up rows' queries (default: the stand-in)",
    )
    args = parser.parse_args()
    if args.query_ollama:
        from askvault.adapters.ollama_http import check_host_allowed

        args.query_ollama = check_host_allowed(args.query_ollama, allow_remote=False)  # loopback
    vault = DATA / "vaults" / "obsidian-hub"
    require_shared(vault)
    qmd = args.qmd if args.qmd and Path(args.qmd).exists() else None
    if qmd is None:
        print(
            "qmd not found (pass --qmd or set QMD_PEER): askvault's figures only", file=sys.stderr
        )
    with (
        tempfile.TemporaryDirectory(prefix="askvault-peer-") as tmp,
        standin_ollama(hashed=True, first_port=args.port) as url,
    ):
        peers = Peers(Path(tmp), vault, qmd, url, args.query_ollama)
        rows = bench(peers, args.runs, search_only=args.search_only)
    doc = {
        "machine": machine(),
        "vault": "obsidian-hub",
        "runs": args.runs,
        "query_ollama": args.query_ollama or "the hashed stand-in",
        "load_after": os.getloadavg(),
        "rows": rows,
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(f"{doc['machine']}; obsidian-hub; {args.runs} paired runs")
    print(f"{'row':<62} {'askvault':>10} {'qmd':>10} {'ratio':>7}")
    for name, row in rows.items():
        q = "-" if row["qmd_s"] is None else f"{row['qmd_s']:.3f}"
        r = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        print(f"{name:<62} {row['askvault_s']:>10.3f} {q:>10} {r:>7}")


if __name__ == "__main__":
    main()
