"""The service managers: `systemctl --user` (Linux) and `launchctl` (macOS), as subprocesses.

Each call is one command with a timeout; a manager that is missing or fails becomes a
ServiceError with what it said, never a traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from askvault.errors import AskvaultError

CALL_TIMEOUT_S = 30.0


class ServiceError(AskvaultError):
    """The service manager refused or is not there."""


@dataclass(frozen=True)
class ManagerState:
    """What the manager says about one service (None where it could not say)."""

    enabled: str | None
    active: str | None


def _run(args: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    if shutil.which(args[0]) is None:
        raise ServiceError(
            f"`{args[0]}` is not installed here", "pass --no-start to only write the service file"
        )
    try:
        done = subprocess.run(
            list(args), capture_output=True, text=True, timeout=CALL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"`{' '.join(args)}` failed: {exc}") from exc
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ServiceError(
            f"`{' '.join(args)}` failed: {said[-1] if said else done.returncode}",
            "see `journalctl --user -xe`" if args[0] == "systemctl" else "",
        )
    return done


class SystemdUser:
    """`systemctl --user` for one unit."""

    def reload(self) -> None:
        """Make systemd read the unit files again."""
        _run(["systemctl", "--user", "daemon-reload"])

    def enable_now(self, unit: str) -> None:
        _run(["systemctl", "--user", "enable", "--now", unit])

    def restart(self, unit: str) -> None:
        _run(["systemctl", "--user", "restart", unit])

    def disable_now(self, unit: str) -> None:
        _run(["systemctl", "--user", "disable", "--now", unit], check=False)

    def state(self, unit: str) -> ManagerState:
        enabled = _run(["systemctl", "--user", "is-enabled", unit], check=False)
        active = _run(["systemctl", "--user", "is-active", unit], check=False)
        return ManagerState(enabled.stdout.strip() or None, active.stdout.strip() or None)


class Launchd:
    """`launchctl` for one agent of the logged-in user."""

    def __init__(self, uid: int | None = None) -> None:
        self.domain = f"gui/{os.getuid() if uid is None else uid}"

    def reload(self) -> None:
        """launchd reads a plist when it is bootstrapped: nothing to do."""

    def enable_now(self, plist: str) -> None:
        _run(["launchctl", "bootstrap", self.domain, plist])

    def restart(self, label: str) -> None:
        _run(["launchctl", "kickstart", "-k", f"{self.domain}/{label}"])

    def disable_now(self, label: str) -> None:
        _run(["launchctl", "bootout", f"{self.domain}/{label}"], check=False)

    def state(self, label: str) -> ManagerState:
        done = _run(["launchctl", "print", f"{self.domain}/{label}"], check=False)
        if done.returncode != 0:
            return ManagerState("not loaded", None)
        active = next(
            (
                line.split("=", 1)[1].strip()
                for line in done.stdout.splitlines()
                if line.strip().startswith("state =")
            ),
            None,
        )
        return ManagerState("loaded", active)
