"""The single-writer lock keyed by the vault itself (issue 14 item 7, issue 15 item 6).

`askvault run` and `askvault index` take it; it is found through the vault root's
device and inode, so other state dirs, a symlinked path or a bind mount of the same
vault all meet the same lock.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from askvault.adapters.lockfile import (
    LockHolder,
    VaultLock,
    lock_folder,
    read_lock_holder,
    vault_lock_path,
)
from askvault.app.clients import OllamaClients
from askvault.app.daemon import Daemon
from askvault.cli.main import cli
from askvault.core.service_files import service_name
from askvault.errors import VaultLocked
from askvault.services.admin.status import collect_status
from askvault.services.index.index_pass import index_vault
from askvault.settings import Settings, vault_id
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env, settings_for


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "Fern.md").write_text("# Fern\n\nFerns like shade.\n", encoding="utf-8")
    return root


@contextlib.contextmanager
def running(settings: Settings) -> Iterator[Daemon]:
    """`Daemon.run()` on a thread, holding the vault's lock, until the block ends."""
    daemon = Daemon(settings)
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(daemon.run()), name="lock-daemon")
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while read_lock_holder(vault_lock_path(settings.vault_path)) is None:
            assert thread.is_alive() and time.monotonic() < deadline, "the daemon did not start"
            time.sleep(0.02)
        yield daemon
    finally:
        daemon.stop()
        thread.join(10)
    assert codes == [0]


def test_a_second_daemon_with_another_state_dir_on_the_same_vault_is_refused_naming_the_holder(
    tmp_path: Path,
    vault: Path,
    fake_ollama: FakeOllama,
) -> None:
    first = settings_for(vault, tmp_path / "state-a", fake_ollama.url)
    second = settings_for(vault, tmp_path / "state-b", fake_ollama.url)
    assert first.db_path != second.db_path
    with running(first):
        with pytest.raises(VaultLocked) as refused:
            Daemon(second).run()
    message = refused.value.message
    assert f"pid {os.getpid()}" in message and "`askvault run`" in message
    assert "already running on this vault" in message
    assert "kill" in refused.value.hint
    assert not second.db_path.exists(), "the refused daemon touched its index"


def test_a_vault_reached_through_a_symlink_meets_the_same_lock(
    tmp_path: Path,
    vault: Path,
    fake_ollama: FakeOllama,
) -> None:
    link = tmp_path / "link to vault"
    link.symlink_to(vault, target_is_directory=True)
    assert vault_lock_path(link) == vault_lock_path(vault)
    with running(settings_for(vault, tmp_path / "state-a", fake_ollama.url)):
        with pytest.raises(VaultLocked):
            VaultLock(link, "run").acquire()


def test_a_bind_mount_of_the_vault_meets_the_same_lock(
    tmp_path: Path,
    vault: Path,
    fake_ollama: FakeOllama,
) -> None:
    mounted = tmp_path / "bind"
    mounted.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a bind mount needs root")
    done = subprocess.run(["mount", "--bind", str(vault), str(mounted)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {done.stderr.decode().strip()}")
    try:
        assert vault_lock_path(mounted) == vault_lock_path(vault)
        with VaultLock(vault, "run"), pytest.raises(VaultLocked):
            VaultLock(mounted, "run").acquire()
    finally:
        subprocess.run(["umount", "-l", str(mounted)], check=False)


def test_index_while_run_holds_the_vault_exits_1_with_one_message_naming_the_daemon(
    tmp_path: Path,
    vault: Path,
    fake_ollama: FakeOllama,
) -> None:
    with running(settings_for(vault, tmp_path / "state-a", fake_ollama.url)):
        env = cli_env(vault, tmp_path / "state-b", fake_ollama.url)
        result = CliRunner().invoke(cli, ["index"], env=env, catch_exceptions=False)
        status = collect_status(
            settings_for(vault, tmp_path / "state-b", fake_ollama.url), probe=False
        )
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (
        f"askvault: another askvault process (pid {os.getpid()}, "
        f"`askvault run`) is already running on this vault ({vault})"
    )
    assert lines[1].startswith("hint: the daemon keeps the index fresh by itself")
    assert len(lines) == 2
    assert status.daemon == os.getpid()  # whatever state dir status was given


def test_run_while_index_holds_the_vault_is_refused_and_the_lock_is_free_after(
    tmp_path: Path,
    vault: Path,
    fake_ollama: FakeOllama,
) -> None:
    settings = settings_for(vault, tmp_path / "state", fake_ollama.url)
    refusals: list[VaultLocked] = []

    def try_run(done: int, total: int) -> None:  # called while index_vault holds the lock
        if not refusals:
            with pytest.raises(VaultLocked) as refused:
                Daemon(settings).run()
            refusals.append(refused.value)

    index_vault(settings, OllamaClients(settings), on_scan=try_run)
    assert refusals and "`askvault index`" in refusals[0].message
    assert "wait for that `askvault index` to finish" in refusals[0].hint
    assert read_lock_holder(vault_lock_path(vault)) is None
    with VaultLock(vault, "run"):  # free again once `index` returned
        pass


def test_the_lock_folder_is_private_and_refuses_one_owned_by_someone_else(
    tmp_path: Path,
) -> None:
    folder = lock_folder({"XDG_RUNTIME_DIR": str(tmp_path)})
    assert folder == tmp_path / "askvault"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    fallback = lock_folder({})  # no XDG_RUNTIME_DIR: systemd's folder, else the temp dir
    systemd_folder = Path(f"/run/user/{os.getuid()}")
    assert fallback == (
        systemd_folder / "askvault"
        if systemd_folder.is_dir()
        else Path(tempfile.gettempdir()) / f"askvault-{os.getuid()}"
    )
    assert stat.S_IMODE(fallback.stat().st_mode) == 0o700
    if os.geteuid() != 0:
        return
    theirs = tmp_path / "theirs"
    (theirs / "askvault").mkdir(parents=True)
    os.chown(theirs / "askvault", 12345, 12345)
    with pytest.raises(Exception, match="not a folder of this user"):
        lock_folder({"XDG_RUNTIME_DIR": str(theirs)})


def test_a_lock_whose_holder_could_not_be_written_still_excludes_and_says_holder_unknown(
    tmp_path: Path,
    vault: Path,
) -> None:
    # A full disk under the lock folder: the pid cannot be written, the flock still works.
    folder = tmp_path / "locks"
    folder.mkdir()
    first = VaultLock(vault, "run", folder=folder)
    first.acquire()
    try:
        assert first.path is not None
        os.truncate(first.path, 0)  # as if the best-effort write had failed
        assert read_lock_holder(first.path) == LockHolder(None, None)
        with pytest.raises(VaultLocked, match=r"\(holder unknown\)"):
            VaultLock(vault, "index", folder=folder).acquire()
    finally:
        first.release()


def test_writing_the_holder_is_best_effort(tmp_path: Path) -> None:
    from askvault.adapters.lockfile import write_holder

    path = tmp_path / "x.lock"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)  # every write fails, as on a full disk
    try:
        assert write_holder(fd, LockHolder(1, "run")) is False
    finally:
        os.close(fd)


def test_the_refusal_hint_names_the_unit_service_install_writes(tmp_path: Path) -> None:
    vault = tmp_path / "Notes"
    vault.mkdir()
    folder = tmp_path / "locks"
    folder.mkdir(mode=0o700)
    with VaultLock(vault, "run", folder=folder):
        with pytest.raises(VaultLocked) as refused:
            VaultLock(vault, "run", folder=folder).acquire()
    unit = service_name(vault_id(vault.resolve()))
    assert f"systemctl --user stop {unit}" in refused.value.hint


def test_another_runtime_dir_meets_the_lock_in_the_state_dir_and_status_names_the_holder(
    tmp_path: Path, vault: Path, fake_ollama: FakeOllama
) -> None:
    # Another user's session, `sudo -E`, a sandbox: the runtime dirs differ, the index the
    # two would write is the same one.
    state = tmp_path / "state"
    first = VaultLock(vault, "run", folder=_private(tmp_path / "run-a"), state_dir=state)
    first.acquire()
    try:
        with pytest.raises(VaultLocked) as refused:
            VaultLock(
                vault, "index", folder=_private(tmp_path / "run-b"), state_dir=state
            ).acquire()
        assert f"pid {os.getpid()}" in refused.value.message
        settings = settings_for(vault, state, fake_ollama.url)
        assert collect_status(settings, probe=False).daemon == os.getpid()
    finally:
        first.release()
    with VaultLock(vault, "index", folder=_private(tmp_path / "run-b"), state_dir=state):
        pass  # released: free for the next one


def test_a_state_dir_whose_parents_do_not_exist_yet_is_made_with_them(
    tmp_path: Path, vault: Path
) -> None:
    # A fresh account: $XDG_STATE_HOME (~/.local/state) is not there yet, and `askvault
    # index` said "cannot create the lock folder ...: No such file or directory".
    state = tmp_path / "home" / ".local" / "state" / "askvault"
    with VaultLock(vault, "index", folder=_private(tmp_path / "run"), state_dir=state) as lock:
        assert (state / "locks").is_dir() and len(lock.paths) == 2
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "locks").stat().st_mode) == 0o700


def _private(folder: Path) -> Path:
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def test_a_full_state_disk_leaves_the_runtime_lock_alone_holding(
    tmp_path: Path, vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=8", "tmpfs", str(state)],
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        for n in range(16):  # use up every inode: no folder can be made
            try:
                (state / f"filler-{n}").touch()
            except OSError:
                break
        runtime = _private(tmp_path / "run")
        with VaultLock(vault, "run", folder=runtime, state_dir=state) as held:
            assert held.paths == [vault_lock_path(vault, runtime)]
            with pytest.raises(VaultLocked):
                VaultLock(vault, "index", folder=runtime).acquire()
        assert "only the lock in the runtime folder is held" in caplog.text
    finally:
        subprocess.run(["umount", "-l", str(state)], check=False)
