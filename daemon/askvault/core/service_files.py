"""The service files of `askvault service install`: a systemd user unit and a launchd agent.

Pure: the caller gives every path; nothing here looks at the machine. Both files carry
`MARKER`, so askvault replaces or removes only a file it wrote.
"""

from __future__ import annotations

import plistlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MARKER = "Written by `askvault service install`"
LABEL_PREFIX = "askvault"

# Each line works in a user unit; the comment says why it is there.
_HARDENING = """\
# No new privileges through setuid binaries or file capabilities.
NoNewPrivileges=true
# Only local sockets: Ollama runs on this machine (127.0.0.1), nothing goes out.
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
# No realtime scheduling, no personality changes, no namespaces.
RestrictRealtime=true
LockPersonality=true
RestrictNamespaces=true
# Only the native system-call ABI (no 32-bit compat calls).
SystemCallArchitectures=native
# Files the daemon creates (the index, answer notes) are not world-writable.
UMask=0022
"""


@dataclass(frozen=True)
class ServiceSpec:
    """What the service runs, for which vault, with which state and config."""

    name: str  # `askvault-<vault-id>`: the unit's name and the agent's label suffix
    vault: str
    state_dir: str
    command: tuple[str, ...]  # the executable and its arguments, absolute paths
    environment: Mapping[str, str]
    documentation: str  # a URI of a page that exists (file:///…)
    log_file: str = ""  # launchd only: where stdout and stderr go


def service_name(vault_id: str) -> str:
    """`askvault-<vault-id>`, restricted to what unit names and labels allow."""
    return LABEL_PREFIX + "-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", vault_id).strip("-")


def _escape_specifiers(text: str) -> str:
    """systemd expands `%x` specifiers in most settings: a literal % is `%%`."""
    return text.replace("%", "%%")


def _quote_word(word: str) -> str:
    """One word of ExecStart=, quoted: `\\` and `"` escaped, `%` and `$` doubled."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"')
    escaped = _escape_specifiers(escaped).replace("$", "$$")
    return f'"{escaped}"'


def _environment_line(key: str, value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'Environment="{key}={_escape_specifiers(escaped)}"'


def render_systemd_unit(spec: ServiceSpec) -> str:
    """The systemd user unit that runs `askvault run` for `spec.vault`."""
    if any("\n" in part for part in (*spec.command, spec.vault, *spec.environment.values())):
        raise ValueError("a path of the service holds a line break")
    env = "\n".join(_environment_line(k, v) for k, v in sorted(spec.environment.items()))
    return f"""\
# {MARKER} for the vault
#   {spec.vault}
# (index and state in {spec.state_dir}). Replace it by running the install again;
# remove it with `askvault service uninstall`. Logs: journalctl --user -u {spec.name} -f

[Unit]
Description=askvault: fresh index and answers for the vault {_escape_specifiers(spec.vault)}
Documentation={spec.documentation}
# Ollama may start later or not at all: askvault waits for it by itself.
After=network.target

[Service]
Type=simple
ExecStart={" ".join(_quote_word(w) for w in spec.command)}
ExecReload=/bin/kill -HUP $MAINPID
{env}
# Crashes restart it; a refused start (exit 1: bad configuration, a refused Ollama host,
# another askvault on this vault) or a usage error (exit 2) does not loop: fix what
# `journalctl --user -u {spec.name}` says, then `systemctl --user restart {spec.name}`.
Restart=on-failure
RestartSec=5
RestartPreventExitStatus=1 2
# SIGTERM: askvault exits within 5 s; the margin covers a slow disk.
TimeoutStopSec=15
KillMode=mixed

{_HARDENING}
[Install]
WantedBy=default.target
"""


def render_launchd_plist(spec: ServiceSpec) -> bytes:
    """The launchd agent (macOS) that runs `askvault run` for `spec.vault` at login."""
    agent = {
        "Label": launchd_label(spec.name),
        "Comment": f"{MARKER} for the vault {spec.vault} (state in {spec.state_dir}); "
        f"documentation: {spec.documentation}",
        "ProgramArguments": list(spec.command),
        "EnvironmentVariables": dict(sorted(spec.environment.items())),
        "RunAtLoad": True,
        # Restarted after a crash (a signal), not after a clean exit or a refused start.
        "KeepAlive": {"Crashed": True},
        "ThrottleInterval": 5,
        "ProcessType": "Background",
        "StandardOutPath": spec.log_file,
        "StandardErrorPath": spec.log_file,
        "ExitTimeOut": 15,
    }
    return plistlib.dumps(agent, sort_keys=False)


def launchd_label(name: str) -> str:
    """The agent's label: `askvault.<vault-id>` (launchd labels are reverse-DNS-like)."""
    return name.replace(f"{LABEL_PREFIX}-", f"{LABEL_PREFIX}.", 1)


def is_ours(data: bytes) -> bool:
    """True if a service file was written by askvault (so it may replace or remove it)."""
    return MARKER.encode("utf-8") in data


def command_of(executable: str, vault: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """`<python> -m askvault run --vault <vault>`: the interpreter of this very install."""
    return (executable, "-m", "askvault", "run", "--vault", vault, *extra)
