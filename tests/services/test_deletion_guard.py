"""A vault that looks unmounted is never reconciled into an empty index (issue 15 item 8)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.cli.main import cli
from askvault.errors import VaultUnavailable
from askvault.services.admin.doctor import run_checks
from askvault.services.admin.status import collect_status
from askvault.services.index.indexer import drop_folder, index_paths, reconcile
from askvault.settings import Settings
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env, settings_for


@pytest.fixture
def settings(tmp_path: Path, fake_ollama: FakeOllama) -> Settings:
    vault = tmp_path / "vault"
    (vault / "plants").mkdir(parents=True)
    for name in ("Fern", "Moss", "Ivy"):
        (vault / "plants" / f"{name}.md").write_text(f"# {name}\n\n{name} likes shade.\n")
    (vault / "Home.md").write_text("# Home\n\nSee [[Fern]].\n")
    return settings_for(vault, tmp_path / "state", fake_ollama.url)


def _paths(settings: Settings) -> list[str]:
    conn = connect(settings.db_path)
    try:
        return [r[0] for r in conn.execute("SELECT path FROM notes ORDER BY path")]
    finally:
        conn.close()


@contextlib.contextmanager
def emptied(vault: Path) -> Iterator[None]:
    """The vault's contents moved aside, an empty folder in its place (an unmounted drive)."""
    aside = vault.with_name("aside")
    vault.rename(aside)
    vault.mkdir()
    try:
        yield
    finally:
        shutil.rmtree(vault)
        aside.rename(vault)


def _reconcile(settings: Settings, **kwargs: object) -> object:
    conn = connect(settings.db_path)
    try:
        return reconcile(conn, settings, **kwargs)  # type: ignore[arg-type]
    finally:
        conn.close()


def test_reconcile_of_an_empty_vault_root_is_refused_deletes_nothing_and_status_says_it(
    settings: Settings,
) -> None:
    _reconcile(settings)
    before = _paths(settings)
    assert len(before) == 4
    with emptied(settings.vault_path):
        with pytest.raises(VaultUnavailable, match="holds no notes while the index holds 4"):
            _reconcile(settings)
        assert _paths(settings) == before
        assert "holds no notes" in (collect_status(settings, probe=False).vault_unavailable or "")
        failed = {c.name: c for c in run_checks(settings, OllamaClients(settings)) if not c.ok}
        assert "vault present" in failed and "--allow-empty" in failed["vault present"].hint
    report = _reconcile(settings)  # the vault is back
    assert _paths(settings) == before and not report.deleted  # type: ignore[attr-defined]
    assert collect_status(settings, probe=False).vault_unavailable is None


def test_a_missing_vault_root_is_refused_and_its_watcher_deletions_too(
    settings: Settings,
) -> None:
    _reconcile(settings)
    aside = settings.vault_path.with_name("aside")
    settings.vault_path.rename(aside)
    try:
        with pytest.raises(VaultUnavailable, match="is missing"):
            _reconcile(settings)
        conn = connect(settings.db_path)
        try:
            with pytest.raises(VaultUnavailable):
                index_paths(conn, settings, ["plants/Fern.md", "Home.md"])
            with pytest.raises(VaultUnavailable):
                drop_folder(conn, settings, "plants")
        finally:
            conn.close()
        assert len(_paths(settings)) == 4
    finally:
        aside.rename(settings.vault_path)


def test_deleting_notes_one_by_one_and_most_of_the_vault_still_goes_through(
    settings: Settings,
) -> None:
    _reconcile(settings)
    (settings.vault_path / "plants" / "Fern.md").unlink()
    conn = connect(settings.db_path)
    try:
        assert index_paths(conn, settings, ["plants/Fern.md"]).deleted == ["plants/Fern.md"]
    finally:
        conn.close()
    shutil.rmtree(settings.vault_path / "plants")  # 3 of 4 notes gone, same device
    assert len(_reconcile(settings).deleted) == 2  # type: ignore[attr-defined]
    assert _paths(settings) == ["Home.md"]


def test_allow_empty_lets_a_vault_emptied_on_purpose_be_reconciled(
    settings: Settings,
    tmp_path: Path,
    fake_ollama: FakeOllama,
) -> None:
    env = cli_env(settings.vault_path, tmp_path / "state", fake_ollama.url)
    assert CliRunner().invoke(cli, ["index"], env=env).exit_code == 0
    for note in settings.vault_path.rglob("*.md"):
        note.unlink()
    refused = CliRunner().invoke(cli, ["index"], env=env)
    assert refused.exit_code == 1
    lines = refused.stderr.strip().splitlines()
    assert lines[0].startswith("askvault: the vault ") and "nothing is deleted" in lines[0]
    assert "--allow-empty" in lines[1] and len(lines) == 2
    assert len(_paths(settings)) == 4
    done = CliRunner().invoke(cli, ["index", "--allow-empty"], env=env)
    assert done.exit_code == 0, done.output
    assert _paths(settings) == []


def test_another_file_system_at_the_vault_root_with_stray_files_is_refused(
    settings: Settings,
) -> None:
    _reconcile(settings)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    root = settings.vault_path
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1024k", "tmpfs", str(root)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        (root / "stray.md").write_text("# Stray\n\nleft on the mount point\n")
        with pytest.raises(VaultUnavailable, match="another device"):
            _reconcile(settings)
        conn = connect(settings.db_path)
        try:
            with pytest.raises(VaultUnavailable, match="another device"):
                index_paths(conn, settings, ["plants/Fern.md"])
        finally:
            conn.close()
        assert len(_paths(settings)) == 4
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)
    assert not _reconcile(settings).deleted  # type: ignore[attr-defined]
