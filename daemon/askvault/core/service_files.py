"""The service files of `askvault service install`: a systemd user unit and a launchd agent.

Pure: the caller gives every path; nothing here looks at the machine. Both files carry
`MARKER`, so askvault replaces or removes only a file it wrote, and a digest of what was
written (`DIGEST_LABEL`), so a file the user edited since is told apart (`file_state`).
A path that a unit or a plist cannot hold (a line break, a control character, bytes that
are not UTF-8) is refused with its reason (`unsafe_path`), never written.
"""

from __future__ import annotations

import hashlib
import plistlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

MARKER = "Written by `askvault service install`"
LABEL_PREFIX = "askvault"
DIGEST_LABEL = "askvault-digest: sha256:"
_DIGEST = re.compile(re.escape(DIGEST_LABEL).encode() + rb"([0-9a-f]{64})")
_UNSEALED = b"0" * 64
# A service file as found: not askvault's, askvault's as written, askvault's edited
# since, or askvault's from a version that kept no digest (edited or not: unknown).
FileState = Literal["foreign", "as_written", "edited", "unknown"]
_CONTROL_NAMES = {"\n": "a line break", "\r": "a carriage return", "\t": "a tab"}

# Each line works in a user unit; the comment says why it is there.
_HARDENING = """\
# No new privileges through setuid binaries or file capabilities.
NoNewPrivileges=true
# Socket families: AF_UNIX (the journal) and IPv4/IPv6 (Ollama's HTTP API). This limits
# the kinds of sockets, not the addresses: askvault itself refuses an Ollama host that
# is not this machine (unless ollama.allow_remote_ollama) and binds MCP to loopback.
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


def unsafe_path(text: str) -> str | None:
    """Why `text` cannot go into a service file, or None: systemd reads a carriage return
    as a line break (the path would inject lines into the unit), XML holds no control
    character, and a name that is not UTF-8 cannot be written in either."""
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (surrogateescape)
            return "a byte that is not UTF-8"
        if code < 0x20 or 0x7F <= code <= 0x9F:
            name = _CONTROL_NAMES.get(char, "a control character")
            return f"{name} ({char!r})"
    return None


def _check_spec(spec: ServiceSpec) -> None:
    for part in (*spec.command, spec.vault, spec.state_dir, *spec.environment.values()):
        problem = unsafe_path(part)
        if problem is not None:
            raise ValueError(f"{part!r} holds {problem}")


def _seal(data: bytes) -> bytes:
    """`data` (holding one unsealed digest) with the digest of itself filled in."""
    digest = hashlib.sha256(data).hexdigest().encode()
    return data.replace(DIGEST_LABEL.encode() + _UNSEALED, DIGEST_LABEL.encode() + digest, 1)


def file_state(data: bytes) -> FileState:
    """Whether a service file found on disk is askvault's, and as askvault wrote it."""
    if MARKER.encode("utf-8") not in data:
        return "foreign"
    found = _DIGEST.search(data)
    if found is None:
        return "unknown"
    unsealed = data[: found.start(1)] + _UNSEALED + data[found.end(1) :]
    return (
        "as_written"
        if hashlib.sha256(unsealed).hexdigest().encode() == found.group(1)
        else "edited"
    )


def render_systemd_unit(spec: ServiceSpec) -> str:
    """The systemd user unit that runs `askvault run` for `spec.vault`; ValueError for a
    path it cannot hold (`unsafe_path`)."""
    _check_spec(spec)
    env = "\n".join(_environment_line(k, v) for k, v in sorted(spec.environment.items()))
    text = f"""\
# {MARKER} for the vault
#   {spec.vault}
# (index and state in {spec.state_dir}). Running the install again replaces it while it
# is as askvault wrote it (the digest below); to change a setting, use
# `systemctl --user edit {spec.name}`: a drop-in, kept when askvault installs again.
# Remove it with `askvault service uninstall`. Logs: journalctl --user -u {spec.name} -f
# {DIGEST_LABEL}{_UNSEALED.decode()}

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
    return _seal(text.encode("utf-8")).decode("utf-8")


def render_launchd_plist(spec: ServiceSpec) -> bytes:
    """The launchd agent (macOS) that runs `askvault run` for `spec.vault` at login;
    ValueError for a path it cannot hold (`unsafe_path`)."""
    _check_spec(spec)
    agent = {
        "Label": launchd_label(spec.name),
        "Comment": f"{MARKER} for the vault {spec.vault} (state in {spec.state_dir}); "
        f"documentation: {spec.documentation}; {DIGEST_LABEL}{_UNSEALED.decode()}",
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
    return _seal(plistlib.dumps(agent, sort_keys=False))


def launchd_label(name: str) -> str:
    """The agent's label: `askvault.<vault-id>` (launchd labels are reverse-DNS-like)."""
    return name.replace(f"{LABEL_PREFIX}-", f"{LABEL_PREFIX}.", 1)


def is_ours(data: bytes) -> bool:
    """True if a service file was written by askvault (so it may remove it)."""
    return file_state(data) != "foreign"


def command_of(executable: str, vault: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """`<python> -m askvault run --vault <vault>`: the interpreter of this very install."""
    return (executable, "-m", "askvault", "run", "--vault", vault, *extra)
