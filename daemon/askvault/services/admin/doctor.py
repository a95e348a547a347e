"""`askvault doctor`: every check that says whether askvault can work, each with a fix hint.

Every hint is a command that fixes what its check found (tests/services/test_doctor.py runs
each one): `askvault ...`, `ollama ...`, or removing the index folder before a rebuild.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from askvault.adapters import db, search_store, store
from askvault.adapters.db import Connection, connect
from askvault.adapters.ollama_http import model_present, probe_ollama
from askvault.errors import AskvaultError
from askvault.records import ModelClients
from askvault.services.admin.status import lock_holder
from askvault.services.index import deletion_guard
from askvault.services.index.calibration import cutoff_for
from askvault.services.index.embedding import PROBE_TEXT, active_model_is_current
from askvault.settings import SettingOrigin, Settings, SettingsTrace

INDEX = "`askvault index`"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    hint: str = ""


def run_checks(
    settings: Settings, clients: ModelClients, *, config: SettingsTrace | None = None
) -> list[Check]:
    """All checks, in order; a failed early check does not hide the later ones. The
    embedding model is probed through `clients`; `config` (where the settings came from)
    is shown first."""
    checks: list[Check] = [config_check(config)] if config is not None else []
    vault = settings.vault_path
    checks.append(
        Check(
            "vault",
            vault.is_dir(),
            str(vault),
            "" if vault.is_dir() else "pass --vault PATH (or set ASKVAULT_VAULT) to a folder",
        )
    )
    conn = None
    try:
        conn = connect(settings.db_path) if settings.db_path.exists() else None
        checks.append(Check("sqlite-vec", True, "loaded"))
    except AskvaultError as exc:
        checks.append(Check("sqlite-vec / database", False, exc.message, exc.hint))
    if conn is None and not any(not c.ok for c in checks):
        checks.append(
            Check(
                "index",
                False,
                f"no index at {settings.db_path}",
                "run `askvault index` (or start `askvault run`)",
            )
        )
    holder = lock_holder(settings)
    daemon = holder.pid if holder is not None and holder.command == "run" else None
    if conn is not None:
        try:
            checks.extend(_index_checks(conn, settings, daemon))
            checks.append(cutoff_check(conn, settings))
        finally:
            conn.close()
    checks.extend(
        _ollama_checks(settings, clients, conn_path_exists=settings.db_path.exists(), daemon=daemon)
    )
    return checks


CHOSEN_BY = {
    "--config": "given with --config",
    "ASKVAULT_CONFIG": "named by ASKVAULT_CONFIG",
    "default": "read by default",
}


def config_check(trace: SettingsTrace) -> Check:
    """The config file in force and where each setting not at its default comes from.
    Settings that load are always ok: an invalid one stops every command before this."""
    if trace.file is None:
        where = (
            f"no config file ({trace.user_file} is read when it exists;"
            " `askvault config-example --write` writes it)"
        )
    else:
        where = f"{trace.file} ({CHOSEN_BY[trace.chosen_by]})"
    if not trace.settings:
        return Check("config", True, f"{where}; every setting at its default")
    origins = ", ".join(f"{o.key} = {o.value} ({describe_origin(o)})" for o in trace.settings)
    return Check("config", True, f"{where}; set: {origins}")


def describe_origin(origin: SettingOrigin) -> str:
    """`file`, `environment ASKVAULT_CHAT_MODEL`, `flag --vault`."""
    return "file" if origin.source == "file" else f"{origin.source} {origin.via}"


def cutoff_check(conn: Connection, settings: Settings) -> Check:
    """The distance cut-off answers use and where it comes from. Always ok: without one a
    question far from every note is answered from its nearest excerpts, as before."""
    cutoff = cutoff_for(conn, settings)
    if cutoff.value is None:
        return Check("distance cut-off", True, cutoff.detail)
    return Check("distance cut-off", True, f"{cutoff.value:g} ({cutoff.detail})")


def _daemon_embeds(daemon: int | None, what: str) -> str:
    """While `askvault run` works, vectors still to make are its work under way, not a fault."""
    return f"{what}; the daemon (pid {daemon}) is embedding them (`askvault status`: the rate)"


def _index_checks(conn: Connection, settings: Settings, daemon: int | None) -> list[Check]:
    out = []
    refused = deletion_guard.refusal_of(conn)
    out.append(
        Check(
            "vault present",
            not refused,
            refused or "the last reconcile found it",
            deletion_guard.ALLOW_HINT if refused else "",
        )
    )
    problems = db.integrity_problems(conn)
    ok = not problems
    out.append(
        Check(
            "sqlite integrity",
            ok,
            "ok" if ok else "; ".join(problems),
            "" if ok else rebuild_hint(settings),
        )
    )
    for table in search_store.WORD_TABLES:
        error = search_store.fts_integrity_error(conn, table)
        if error is None:
            out.append(Check(f"fts5 integrity ({table})", True, "ok"))
        else:
            out.append(Check(f"fts5 integrity ({table})", False, error, rebuild_hint(settings)))
    orphans = search_store.count_word_row_mismatches(conn)
    out.append(
        Check(
            "fts rows match chunks",
            orphans == 0,
            "ok" if orphans == 0 else f"{orphans} mismatched rows",
            "" if orphans == 0 else rebuild_hint(settings),
        )
    )
    active = store.active_fingerprint(conn)
    chunks = store.counts(conn)["chunks"]
    if active is None:
        ok = chunks == 0 or daemon is not None
        detail = "no embedding model has stored vectors yet"
        if chunks and daemon is not None:
            detail = _daemon_embeds(daemon, f"no vectors yet for {chunks} chunks")
        out.append(Check("vectors", ok, detail, "" if ok else f"run {INDEX}"))
        return out
    missing = store.count_missing_vectors(conn, active)
    extra = store.count_extra_vectors(conn, active)
    # A recorded failed input (the model refused the text or returned an unusable vector)
    # has no vector by design: not a mismatch, but named.
    failed = store.count_failed_inputs(conn, active)
    complete = missing <= failed and extra == 0
    # Chunks still without a vector while the daemon runs are its backlog, not a fault;
    # a vector without its chunk is one all the same.
    ok = complete or (daemon is not None and extra == 0)
    detail = (
        f"{chunks} chunks, each with one vector of {active.fingerprint.key}"
        if complete
        else _daemon_embeds(daemon, f"{missing - failed} of {chunks} chunks still to embed")
        if ok
        else f"{missing} chunks without a vector, {extra} vectors without a chunk"
    )
    if complete and failed:
        detail += (
            f", except {failed} whose text the model could not embed"
            " (searchable by words, retried later)"
        )
        first = store.list_embed_failures(conn, active, limit=1)
        if first:
            detail += f"; e.g. {first[0]['file']}: {first[0]['reason']}"
    out.append(
        Check(
            "vectors match chunks",
            ok,
            detail,
            "" if ok else f"wait for the daemon, or run {INDEX}",
        )
    )
    return out


def _ollama_checks(
    settings: Settings, clients: ModelClients, *, conn_path_exists: bool, daemon: int | None
) -> list[Check]:
    out = []
    status = probe_ollama(
        settings.ollama.host,
        timeout_s=min(settings.ollama.timeout_s, 5.0),
        allow_remote=settings.ollama.allow_remote_ollama,
    )
    if status.refused:
        # Refused by the configuration before any connection: `ollama serve` would not help.
        out.append(
            Check("ollama host allowed", False, status.error or status.url, status.hint or "")
        )
        return out
    if not status.reachable:
        out.append(
            Check(
                "ollama reachable",
                False,
                status.error or status.url,
                "start it with `ollama serve`, or set OLLAMA_HOST",
            )
        )
        return out
    out.append(Check("ollama reachable", True, f"{status.url} (version {status.version})"))
    for role, name in (
        ("embed model", settings.ollama.embed_model),
        ("chat model", settings.ollama.chat_model),
    ):
        present = model_present(status, name)
        out.append(Check(role, present, name, "" if present else f"run `ollama pull {name}`"))
    if not model_present(status, settings.ollama.embed_model) or not conn_path_exists:
        return out
    try:
        embedder = clients.embedder()
        try:
            fingerprint = embedder.fingerprint()
            probed = len(embedder.embed_documents([PROBE_TEXT])[0])  # a real embedding
        finally:
            embedder.close()
    except AskvaultError as exc:
        out.append(Check("embedding dimension", False, exc.message, exc.hint))
        return out
    try:
        conn = connect(settings.db_path)
    except AskvaultError:
        return out  # the index check above already says why it cannot be opened
    try:
        active = store.active_fingerprint(conn)
        # What `askvault index` does next: nothing, when Ollama lists and reports the
        # model as the index has it (it does not embed again to look at a vector's length).
        index_looks_again = not active_model_is_current(conn, settings)
    finally:
        conn.close()
    if active is None:
        return out
    ok = active.fingerprint.dimension == probed
    same_model = active.fingerprint.key == fingerprint.key
    out.append(
        Check(
            "embedding dimension",
            ok,
            f"index {active.fingerprint.dimension}, model {probed}",
            ""
            if ok
            else f"the model's vectors changed length: run {INDEX} to build them"
            if index_looks_again
            else "the model's vectors changed length while Ollama still reports the old one: "
            + rebuild_hint(settings),
        )
    )
    if ok and not same_model:
        detail = f"index built with {active.fingerprint.key}, configured {fingerprint.key}"
        out.append(
            Check(
                "embedding model",
                daemon is not None,
                _daemon_embeds(daemon, detail + ": a switch under way")
                if daemon is not None
                else detail,
                ""
                if daemon is not None
                else f"run {INDEX} (or let the daemon run) to switch models",
            )
        )
    return out


def rebuild_hint(settings: Settings) -> str:
    """Remove the index folder (the file, its -wal and -shm: a WAL left beside a new file
    would be replayed into it), then build it again."""
    return f"`rm -r {shlex.quote(str(settings.state_path))}`, then {INDEX} to rebuild it"
