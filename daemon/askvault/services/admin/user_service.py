"""`askvault service install|uninstall|status`: the per-vault service of the user's login.

Linux: a systemd user unit in `$XDG_CONFIG_HOME/systemd/user/`; macOS: a launchd agent in
`~/Library/LaunchAgents/`. The file names this install's interpreter, the vault, the state
folder and the config file, so the service sees what the command line saw. A file askvault
did not write, or one the user edited since (its digest no longer matches), is never
replaced or removed; `force` replaces it after keeping a copy (`<file>.bak`). A path the
file cannot hold (a line break, a control character) is refused before anything is
written. A manager that cannot start the service here (no systemd user session) leaves
the written file and says what to do instead.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol

from askvault.adapters.service_manager import Launchd, ManagerState, ServiceError, SystemdUser
from askvault.adapters.vault_writes import write_atomic, write_new_file
from askvault.core.service_files import (
    FileState,
    ServiceSpec,
    command_of,
    file_state,
    launchd_label,
    render_launchd_plist,
    render_systemd_unit,
    service_name,
    unsafe_path,
)
from askvault.errors import AskvaultError
from askvault.settings import Settings, default_config_file, vault_id

PLATFORMS = ("linux", "macos")
HELP_PAGE = "run-as-a-service.md"
# Environment variables a shell may set that the service must see too.
PASSED_ENV = ("OLLAMA_HOST", "ASKVAULT_EMBED_MODEL", "ASKVAULT_CHAT_MODEL")


class Manager(Protocol):
    """systemctl --user or launchctl (adapters/service_manager.py)."""

    def reload(self) -> None: ...
    def enable_now(self, unit: str) -> None: ...
    def restart(self, unit: str) -> None: ...
    def disable_now(self, unit: str) -> None: ...
    def state(self, unit: str) -> ManagerState: ...


@dataclass(frozen=True)
class ServiceFile:
    """Where this vault's service file goes and what it holds."""

    platform: str
    name: str
    path: Path
    content: bytes

    @property
    def handle(self) -> str:
        """The name the manager knows it by: the unit file name, or the agent's label."""
        return self.path.name if self.platform == "linux" else launchd_label(self.name)


@dataclass(frozen=True)
class ServiceReport:
    """What a service command did or found."""

    file: ServiceFile
    exists: bool
    ours: bool
    up_to_date: bool
    changed: bool = False
    started: bool = False
    state: ManagerState | None = None
    found: FileState | None = None  # what the file was (None: no file)
    backup: Path | None = None  # where the replaced file was kept (with force)
    note: str | None = None  # what the manager could not do, once nothing depends on it

    @property
    def edited(self) -> bool:
        """askvault's file, changed since it was written (or by an older askvault that
        kept no digest, so that nobody can tell)."""
        return self.found in ("edited", "unknown")

    def as_dict(self) -> dict[str, object]:
        return {
            "platform": self.file.platform,
            "name": self.file.handle,
            "file": str(self.file.path),
            "exists": self.exists,
            "ours": self.ours,
            "edited": self.edited,
            "backup": str(self.backup) if self.backup else None,
            "up_to_date": self.up_to_date,
            "changed": self.changed,
            "started": self.started,
            "enabled": self.state.enabled if self.state else None,
            "active": self.state.active if self.state else None,
        }


def current_platform() -> str:
    """linux or macos; other systems have no service support."""
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform == "darwin":
        return "macos"
    raise AskvaultError(
        f"`askvault service` supports Linux (systemd) and macOS (launchd), not {sys.platform}",
        "run `askvault run` from your own service manager",
    )


def default_manager(platform: str) -> Manager:
    return SystemdUser() if platform == "linux" else Launchd()


def default_unit_dir(platform: str, env: Mapping[str, str]) -> Path:
    if platform == "linux":
        base = (
            Path(env["XDG_CONFIG_HOME"])
            if env.get("XDG_CONFIG_HOME")
            else (Path.home() / ".config")
        )
        return base / "systemd" / "user"
    return Path.home() / "Library" / "LaunchAgents"


def help_page() -> Path:
    """The packaged copy of docs/how-to/run-as-a-service.md (the unit's Documentation=)."""
    return Path(str(resources.files("askvault") / "help" / HELP_PAGE))


def service_file(
    settings: Settings,
    *,
    platform: str,
    unit_dir: Path | None = None,
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    executable: str | None = None,
) -> ServiceFile:
    """The service file `install` would write for this vault, now."""
    if platform not in PLATFORMS:
        raise AskvaultError(f"unknown platform {platform!r}", "use linux or macos")
    env = os.environ if env is None else env
    vault = settings.vault_path
    name = service_name(vault_id(vault))
    config = config_file or default_config_file(env)
    executable = executable or sys.executable
    _refuse_unsafe_paths(
        platform,
        {
            "the vault path": str(vault),
            "the state folder": str(settings.state_path),
            "the config file's path": str(config or ""),
            "the Python interpreter's path": executable,
        },
    )
    environment = {
        "ASKVAULT_STATE_DIR": str(settings.state_path.parent),
        "PYTHONUNBUFFERED": "1",
        **{key: env[key] for key in PASSED_ENV if env.get(key)},
    }
    if config is not None:
        environment["ASKVAULT_CONFIG"] = str(Path(config).expanduser().resolve())
    directory = unit_dir or default_unit_dir(platform, env)
    log_file = Path.home() / "Library" / "Logs" / "askvault" / f"{name}.log"
    spec = ServiceSpec(
        name=name,
        vault=str(vault),
        state_dir=str(settings.state_path),
        command=command_of(executable, str(vault)),
        environment=environment,
        documentation=help_page().as_uri(),
        log_file=str(log_file),
    )
    if platform == "linux":
        return ServiceFile(
            platform, name, directory / f"{name}.service", render_systemd_unit(spec).encode("utf-8")
        )
    return ServiceFile(
        platform, name, directory / f"{launchd_label(name)}.plist", render_launchd_plist(spec)
    )


def _refuse_unsafe_paths(platform: str, paths: Mapping[str, str]) -> None:
    """AskvaultError naming the first path the service file cannot hold."""
    kind = "a systemd unit" if platform == "linux" else "a launchd agent"
    for what, path in paths.items():
        problem = unsafe_path(path)
        if problem is not None:
            raise AskvaultError(
                f"cannot install the service: {what} {path!r} holds {problem}, which {kind} "
                "cannot hold",
                "rename the folder to a name without control characters, or run "
                "`askvault run` yourself",
            )


def _found(target: ServiceFile) -> tuple[FileState | None, bytes | None]:
    try:
        data = target.path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise AskvaultError(f"cannot read {target.path}: {exc.strerror or exc}") from exc
    return file_state(data), data


def _keep_copy(target: ServiceFile, data: bytes) -> Path:
    """Keep the file about to be replaced as `<file>.bak` (or `(2)`, ...: never over one);
    the managers load neither name."""
    return write_new_file(target.path.with_name(target.path.name + ".bak"), data)


def install_service(
    target: ServiceFile,
    manager: Manager | None,
    *,
    force: bool = False,
) -> ServiceReport:
    """Write the service file (atomically) and, with a manager, enable and start it.

    A file at that path that askvault did not write, or that was edited since, is refused
    unless `force`, which keeps a copy of it first (`report.backup`)."""
    found, data = _found(target)
    changed = data != target.content
    backup = None
    if changed and found not in (None, "as_written"):
        if not force:
            raise _refusal(target, found)
        assert data is not None
        backup = _keep_copy(target, data)
    if changed:
        target.path.parent.mkdir(parents=True, exist_ok=True)
        if target.platform == "macos":
            (Path.home() / "Library" / "Logs" / "askvault").mkdir(parents=True, exist_ok=True)
        # Re-checked right before the rename: a file edited meanwhile is kept.
        if not write_atomic(
            target.path,
            target.content,
            still_ours=None if found is None else (lambda now: now == data),
        ):
            raise AskvaultError(
                f"{target.path} changed while being replaced; left as it is",
                "run the install again",
            )
    report = ServiceReport(target, True, True, True, changed=changed, found=found, backup=backup)
    if manager is None:
        return report
    try:
        state = _start(target, manager, replaced=changed and found is not None)
    except ServiceError as exc:
        raise _not_started(target, exc, backup) from exc
    return dataclasses.replace(report, started=True, state=state)


def _start(target: ServiceFile, manager: Manager, *, replaced: bool) -> ManagerState:
    if target.platform == "linux":
        manager.reload()
        manager.enable_now(target.handle)
        if replaced:
            manager.restart(target.handle)  # the running one still has the old file
    else:
        if replaced:
            manager.disable_now(target.handle)
        manager.enable_now(str(target.path))
    return manager.state(target.handle)


def _refusal(target: ServiceFile, found: FileState) -> AskvaultError:
    if found == "foreign":
        return AskvaultError(
            f"{target.path} exists and was not written by askvault; left as it is",
            "pass --force to replace it (a copy is kept as .bak), or remove it first",
        )
    why = (
        "was edited since askvault wrote it"
        if found == "edited"
        else "was written by an older askvault, which kept no digest: it may hold your edits"
    )
    drop_in = (
        f"; to change a setting, use `systemctl --user edit {target.handle}` instead"
        if target.platform == "linux"
        else ""
    )
    return AskvaultError(
        f"{target.path} {why}; left as it is",
        "pass --force to replace it with what askvault writes now (your version is kept "
        f"as {target.path.name}.bak){drop_in}",
    )


def _not_started(target: ServiceFile, exc: ServiceError, backup: Path | None) -> AskvaultError:
    """The file is written, the manager cannot start it: say so, why, and what to do."""
    kept = f" (the previous file is kept as {backup})" if backup else ""
    if target.platform == "linux" and no_user_session(exc.message):
        return ServiceError(
            f"wrote {target.path}{kept}, but cannot start it: this login has no systemd "
            f"user session ({exc.message})",
            "on a machine without a graphical login, `loginctl enable-linger $USER` (then log "
            f"in again) lets it run: then `systemctl --user enable --now {target.handle}`; "
            "or run `askvault run` yourself; `--no-start` only writes the file",
        )
    return ServiceError(
        f"wrote {target.path}{kept}, but could not start it: {exc.message}", exc.hint
    )


def no_user_session(said: str) -> bool:
    """True when systemctl's words mean there is no user manager to talk to."""
    return any(
        words in said
        for words in (
            "Failed to connect to bus",
            "Failed to connect to user scope bus",
            "$DBUS_SESSION_BUS_ADDRESS and $XDG_RUNTIME_DIR not defined",
            "No medium found",
        )
    )


def uninstall_service(
    target: ServiceFile,
    manager: Manager | None,
    *,
    force: bool = False,
) -> ServiceReport:
    """Stop and disable the service (with a manager), then remove its file if askvault
    wrote it (`force`: whatever wrote it); a file edited since is kept as `<file>.bak`.
    Once the file is gone a manager that cannot reload (no user session) is only noted."""
    found, data = _found(target)
    if found == "foreign" and not force:
        raise AskvaultError(
            f"{target.path} was not written by askvault; left in place",
            "remove it yourself, or pass --force",
        )
    if found is None:
        return ServiceReport(target, False, False, False)
    if manager is not None:
        manager.disable_now(target.handle)
    backup = _keep_copy(target, data) if found != "as_written" and data is not None else None
    target.path.unlink()
    note = None
    if manager is not None:
        try:
            manager.reload()
        except ServiceError as exc:
            note = f"the service manager was not told ({exc.message}): nothing to do here"
    return ServiceReport(
        target, False, False, False, changed=True, found=found, backup=backup, note=note
    )


def service_status(target: ServiceFile, manager: Manager | None) -> ServiceReport:
    """Whether the file is there, askvault's, up to date, and what the manager says."""
    found, data = _found(target)
    exists = found is not None
    state = manager.state(target.handle) if manager is not None and exists else None
    return ServiceReport(
        target,
        exists,
        found not in (None, "foreign"),
        data == target.content,
        state=state,
        found=found,
    )
