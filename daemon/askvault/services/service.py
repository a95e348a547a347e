"""`askvault service install|uninstall|status`: the per-vault service of the user's login.

Linux: a systemd user unit in `$XDG_CONFIG_HOME/systemd/user/`; macOS: a launchd agent in
`~/Library/LaunchAgents/`. The file names this install's interpreter, the vault, the state
folder and the config file, so the service sees what the command line saw. A file askvault
did not write is never replaced or removed (`force` replaces it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol

from askvault.adapters.service_manager import Launchd, ManagerState, SystemdUser
from askvault.adapters.vault_writes import write_atomic
from askvault.core.service_files import (
    ServiceSpec,
    command_of,
    is_ours,
    launchd_label,
    render_launchd_plist,
    render_systemd_unit,
    service_name,
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

    def as_dict(self) -> dict[str, object]:
        return {
            "platform": self.file.platform,
            "name": self.file.handle,
            "file": str(self.file.path),
            "exists": self.exists,
            "ours": self.ours,
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
        command=command_of(executable or sys.executable, str(vault)),
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


def _found(target: ServiceFile) -> tuple[bool, bool, bytes | None]:
    try:
        data = target.path.read_bytes()
    except FileNotFoundError:
        return False, False, None
    except OSError as exc:
        raise AskvaultError(f"cannot read {target.path}: {exc.strerror or exc}") from exc
    return True, is_ours(data), data


def install_service(
    target: ServiceFile,
    manager: Manager | None,
    *,
    force: bool = False,
) -> ServiceReport:
    """Write the service file (atomically) and, with a manager, enable and start it.

    A file at that path that askvault did not write is refused unless `force`."""
    exists, ours, data = _found(target)
    if exists and not ours and not force:
        raise AskvaultError(
            f"{target.path} exists and was not written by askvault",
            "pass --force to replace it, or remove it first",
        )
    changed = data != target.content
    if changed:
        target.path.parent.mkdir(parents=True, exist_ok=True)
        if target.platform == "macos":
            (Path.home() / "Library" / "Logs" / "askvault").mkdir(parents=True, exist_ok=True)
        # Re-checked right before the rename: a file someone put there meanwhile is kept.
        if not write_atomic(
            target.path, target.content, still_ours=(is_ours if exists and not force else None)
        ):
            raise AskvaultError(
                f"{target.path} changed while being replaced; left as it is",
                "run the install again",
            )
    state = None
    if manager is not None:
        if target.platform == "linux":
            manager.reload()
            manager.enable_now(target.handle)
            if changed and exists:
                manager.restart(target.handle)  # the running one still has the old file
        else:
            if changed and exists:
                manager.disable_now(target.handle)
            manager.enable_now(str(target.path))
        state = manager.state(target.handle)
    return ServiceReport(
        target, True, True, True, changed=changed, started=manager is not None, state=state
    )


def uninstall_service(
    target: ServiceFile,
    manager: Manager | None,
    *,
    force: bool = False,
) -> ServiceReport:
    """Stop and disable the service (with a manager), then remove its file if askvault
    wrote it (`force`: whatever wrote it)."""
    exists, ours, _ = _found(target)
    if exists and not ours and not force:
        raise AskvaultError(
            f"{target.path} was not written by askvault; left in place",
            "remove it yourself, or pass --force",
        )
    if manager is not None and exists:
        manager.disable_now(target.handle)
    if exists:
        target.path.unlink()
        if manager is not None:
            manager.reload()
    return ServiceReport(target, False, False, False, changed=exists, started=False)


def service_status(target: ServiceFile, manager: Manager | None) -> ServiceReport:
    """Whether the file is there, askvault's, up to date, and what the manager says."""
    exists, ours, data = _found(target)
    state = manager.state(target.handle) if manager is not None and exists else None
    return ServiceReport(target, exists, ours, data == target.content, state=state)
