"""Indexes made once per process and copied: a test's vault is indexed from a copy of the
index an earlier test made of the same files, with the same settings and a fake Ollama in
the same state, then reconciled as `askvault index` would (its files' stamps are its own,
so every note is re-stamped and re-dated; no text is embedded again). Only the first such
test pays for the migrations and the embeddings (0.3-0.6 s a test, measured on the
retrieval and fixture vaults). Each test still has its own index file.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from askvault.app.clients import OllamaClients
from askvault.services.index.index_pass import PassReport, index_vault
from askvault.settings import Settings
from support.fake_ollama import SERVING

_TEMPLATES: dict[str, Path] = {}


def index_copy(settings: Settings) -> PassReport:
    """`index_vault(settings, ...)` started from a template when there is one. A template is
    kept of an index that ended complete (every text embedded); none is used when the host
    is not a running fake, a file of the vault cannot be read, or the index already exists."""
    key = _key(settings)
    template = _TEMPLATES.get(key) if key is not None else None
    if template is not None:
        settings.db_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, settings.db_path)
    report = index_vault(settings, OllamaClients(settings))
    complete = report.embed_error is None and report.pending_embeddings == 0
    if key is not None and template is None and complete:
        _TEMPLATES[key] = _keep(settings.db_path)
    return report


def _key(settings: Settings) -> str | None:
    fake = SERVING.get(settings.ollama.host.rstrip("/"))
    if fake is None or any(Path(f"{settings.db_path}{s}").exists() for s in ("", "-wal")):
        return None
    files = _vault_files(settings.vault_path)
    if files is None:
        return None
    # The settings with what differs from one test's folders to the next left out.
    general = dataclasses.replace(
        settings,
        vault="",
        state_dir="",
        ollama=dataclasses.replace(settings.ollama, host=""),
    )
    return hashlib.sha256(repr((general, fake.index_state(), files)).encode()).hexdigest()


def _vault_files(root: Path) -> list[tuple[str, int, str]] | None:
    """Each entry of the vault, its mode and its bytes' digest (a link: its target); None
    when one cannot be read (such a vault is indexed afresh)."""
    found: list[tuple[str, int, str]] = []
    try:
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            for name in sorted(dirs + names):
                path = os.path.join(folder, name)
                info = os.lstat(path)
                rel = os.path.relpath(path, root)
                if stat.S_ISLNK(info.st_mode):
                    found.append((rel, info.st_mode, os.readlink(path)))
                elif stat.S_ISREG(info.st_mode):
                    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                    found.append((rel, info.st_mode, digest))
                else:
                    found.append((rel, info.st_mode, ""))
    except OSError:
        return None
    return found


def _keep(db_path: Path) -> Path:
    """A copy of the closed index `db_path` (checkpointed: no `-wal` is left once the last
    connection closes), kept until the process exits."""
    assert not Path(f"{db_path}-wal").exists(), "an index copied with its WAL apart"
    folder = Path(tempfile.mkdtemp(prefix="askvault-index-template-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return Path(shutil.copyfile(db_path, folder / "index.sqlite"))
