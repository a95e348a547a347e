"""The one invariant checker of the fault drills (issue 6), applied after every scenario.

`FaultWorld` is the temp tree a drill controls: the vault, the index folder (state),
and an `outside/` folder holding a canary note that must never be read. After a
scenario, `check_invariants` asserts, in order:

1. the daemon still runs (or was restarted and runs);
2. the index converged: every eligible file of the vault has its note row and every
   row its file (after the daemon's reconcile), and no chunk waits for a vector;
3. `askvault doctor`'s checks pass (SQLite integrity_check, FTS5 integrity-check,
   FTS rows <-> chunks, chunks <-> vectors one-to-one for the active fingerprint,
   Ollama and its models);
4. no question lost: each asked question is, byte for byte, in inbox/ or archive/;
   at most one answer note per question; no partial answer note; no temp file left;
5. nothing was written outside queries/ and the index folder (the whole temp tree
   is compared with the snapshot taken when the drill finished changing the vault);
6. no file the user wrote or edited was overwritten (`protected`);
7. the canary's text never reached the index, an answer note or Ollama.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from askvault.adapters import store
from askvault.adapters.db import Connection, connect
from askvault.adapters.migrations import MIGRATIONS
from askvault.adapters.vault import TEMP_PREFIX, scan_vault
from askvault.app.clients import OllamaClients
from askvault.services.admin.doctor import run_checks
from askvault.services.index.indexer import ignore_rules_for
from askvault.settings import Settings, vault_id
from support.fake_ollama import FakeOllama
from support.settings_factory import settings_for

CANARY_TEXT = "canary-ZQXJ-outside-the-vault-must-never-be-read"
CONVERGE_TIMEOUT_S = 30.0


@dataclass
class FaultWorld:
    """The temp tree of one drill: vault, state (index folder), outside (canary)."""

    root: Path
    ollama_url: str
    baseline: dict[str, str] = field(default_factory=dict)

    @property
    def vault(self) -> Path:
        return self.root / "vault"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def db_path(self) -> Path:
        return self.state / vault_id(self.vault.resolve()) / "index.sqlite"

    def settings(self, **flags: object) -> Settings:
        return settings_for(self.vault, self.state, self.ollama_url, **flags)

    def create(self) -> FaultWorld:
        self.vault.mkdir(parents=True, exist_ok=True)
        self.outside.mkdir(parents=True, exist_ok=True)
        (self.outside / "canary.md").write_text(f"# Canary\n\n{CANARY_TEXT}\n", encoding="utf-8")
        (self.outside / "folder").mkdir(exist_ok=True)
        (self.outside / "folder" / "secret.md").write_text(
            f"# Secret\n\n{CANARY_TEXT} in a folder\n", encoding="utf-8"
        )
        return self

    def write(self, rel: str, data: bytes | str) -> Path:
        path = self.vault / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        return path

    def freeze(self) -> None:
        """The drill is done changing the tree: from now on only askvault may write."""
        self.baseline = snapshot(self.root, self._excluded)

    def _excluded(self, rel: str) -> bool:
        return (
            rel.startswith(("vault/queries/", "state/"))
            or rel in ("vault/queries", "state")
            or rel.endswith(".log")
        )


def snapshot(root: Path, excluded: Callable[[str], bool]) -> dict[str, str]:
    """rel path -> sha256 of the bytes (or `link:<target>`, or `dir`), links not followed."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(folder, root)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        for name in dirs + files:
            rel = rel_dir + name
            if excluded(rel):
                continue
            path = os.path.join(folder, name)
            if os.path.islink(path):
                out[rel] = "link:" + os.readlink(path)
            elif os.path.isdir(path):
                out[rel] = "dir"
            else:
                digest = hashlib.sha256()
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
                out[rel] = digest.hexdigest()
    return out


def wait_until(
    check: Callable[[], bool], timeout_s: float, what: str, detail: Callable[[], str] = lambda: ""
) -> float:
    """Poll `check` until true; the seconds it took, or an AssertionError naming `what`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if check():
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout_s} s: {what}. {detail()}")


def eligible_paths(settings: Settings) -> list[str]:
    """The notes a reconcile must hold: what the scanner finds and can read, minus skips."""
    return sorted(s.path for s in scan_vault(settings.vault_path, ignore_rules_for(settings)).notes)


def index_state(db_path: Path) -> tuple[list[str], int, set[str]]:
    """(note paths, chunks waiting for a vector, skipped paths) as a reader sees them."""
    if not db_path.exists():
        return [], -1, set()
    conn = connect(db_path, readonly=True)
    try:
        if not _schema_complete(conn):
            return [], -1, set()
        paths = [r[0] for r in conn.execute("SELECT path FROM notes ORDER BY path")]
        live = store.live_fingerprints(conn)
        target = next((fp for fp in live if fp.state == "building"), None)
        target = target or store.active_fingerprint(conn)
        pending = (
            store.count_pending(conn, target)
            if target
            else (-1 if store.counts(conn)["chunks"] else 0)
        )
        skipped = {s.path for s in store.list_skipped(conn)}
        return paths, pending, skipped
    finally:
        conn.close()


def _schema_complete(conn: Connection) -> bool:
    """Every migration recorded: a daemon that has just created the file, or one waiting
    out a busy or full index, may not have applied them yet (reading a table then failed
    with `no such table`). Recorded in the transaction that applies each one."""
    has_table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'"
    ).fetchone()
    if not has_table:
        return False
    done = {r[0] for r in conn.execute("SELECT name FROM migrations")}
    return all(name in done for name, _ in MIGRATIONS)


def wait_converged(world: FaultWorld, timeout_s: float = CONVERGE_TIMEOUT_S) -> None:
    """Rows == eligible files (skipped ones excluded) and an empty embedding backlog."""
    settings = world.settings()
    last: list[str] = []

    def done() -> bool:
        paths, pending, skipped = index_state(world.db_path)
        want = [p for p in eligible_paths(settings) if p not in skipped]
        last[:] = [
            f"rows-only={sorted(set(paths) - set(want))[:5]} "
            f"files-only={sorted(set(want) - set(paths))[:5]} pending={pending}"
        ]
        return paths == want and pending == 0

    wait_until(done, timeout_s, "the index converges on the vault", lambda: last[0] if last else "")


def answer_notes(world: FaultWorld, stem: str) -> list[Path]:
    """Answer notes of the question named `stem` (`stem.md`, `stem (2).md`, ...)."""
    folder = world.vault / "queries" / "answers"
    pattern = re.compile(re.escape(stem) + r"( \(\d+\))?\.md")
    return (
        sorted(p for p in folder.glob("*.md") if pattern.fullmatch(p.name))
        if folder.is_dir()
        else []
    )


def check_invariants(
    world: FaultWorld,
    *,
    alive: Callable[[], bool],
    questions: dict[str, bytes] | None = None,
    protected: dict[Path, bytes] | None = None,
    fake: FakeOllama | None = None,
    doctor: bool = True,
    converge_timeout_s: float = CONVERGE_TIMEOUT_S,
) -> None:
    """Assert every invariant of the drills (module docstring); `questions`: stem -> bytes."""
    assert alive(), "the daemon is not running"
    wait_converged(world, converge_timeout_s)
    if doctor:
        settings = world.settings()
        failed = [c for c in run_checks(settings, OllamaClients(settings)) if not c.ok]
        assert not failed, f"askvault doctor fails: {failed}"
    _check_questions(world, questions or {})
    _check_no_temp_files(world.vault)
    if world.baseline:
        now = snapshot(world.root, world._excluded)
        changed = sorted(
            k for k in set(now) | set(world.baseline) if now.get(k) != world.baseline.get(k)
        )
        assert not changed, f"files changed outside queries/ and the index folder: {changed}"
    for path, data in (protected or {}).items():
        assert path.read_bytes() == data, f"a user file was overwritten: {path}"
    _check_canary(world, fake)
    assert alive(), "the daemon died during the checks"


def _check_questions(world: FaultWorld, questions: dict[str, bytes]) -> None:
    queries = world.vault / "queries"
    for stem, data in questions.items():
        places = [queries / "inbox" / f"{stem}.md", queries / "archive" / f"{stem}.md"]
        held = [p for p in places if p.exists()]
        assert held, f"question {stem!r} lost: neither in inbox/ nor archive/"
        assert any(p.read_bytes() == data for p in held), f"question {stem!r} was altered"
        answers = answer_notes(world, stem)
        assert len(answers) <= 1, f"duplicate answers for {stem!r}: {answers}"
        for answer in answers:
            text = answer.read_text(encoding="utf-8")
            assert text.startswith("---\n") and "\nstatus: " in text, f"partial answer {answer}"
            if "\nstatus: answered" in text or "\nstatus: no-answer" in text:
                assert "## Citation report" in text, f"partial answer {answer}"


def _check_no_temp_files(vault: Path) -> None:
    left = [
        os.path.join(d, f)
        for d, _, files in os.walk(vault)
        for f in files
        if f.startswith(TEMP_PREFIX)
    ]
    assert not left, f"askvault temp files left behind: {left}"


def _check_canary(world: FaultWorld, fake: FakeOllama | None) -> None:
    if world.db_path.exists():
        conn = connect(world.db_path, readonly=True)
        try:
            hits = conn.execute(
                "SELECT count(*) FROM chunks WHERE text LIKE ?", (f"%{CANARY_TEXT}%",)
            ).fetchone()[0]
        finally:
            conn.close()
        assert hits == 0, "text from outside the vault reached the index"
    for answer in _files(world.vault / "queries"):
        assert CANARY_TEXT not in answer.read_text(encoding="utf-8", errors="replace"), (
            f"text from outside the vault reached {answer}"
        )
    if fake is not None:
        sent = repr(fake.requests_to("/api/chat")) + repr(fake.embedded_inputs)
        assert CANARY_TEXT not in sent, "text from outside the vault was sent to Ollama"


def _files(folder: Path) -> Iterable[Path]:
    return (p for p in folder.rglob("*.md") if p.is_file()) if folder.is_dir() else ()
