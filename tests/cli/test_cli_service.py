"""`askvault service install|uninstall|status` (issue 14, item 9), through the real CLI.

The unit goes to a temp folder (--unit-dir); `--no-start` skips systemctl, and where the
manager's calls are the point, a stand-in `systemctl` / `launchctl` on PATH records them.
The written unit is checked by `systemd-analyze verify` when this machine has it, the plist
by plistlib."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from click.testing import CliRunner

from askvault.cli.main import cli
from support.cli_invoke import invoke
from support.settings_factory import cli_env

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "My Notes 100% $HOME"  # spaces, a specifier and a dollar sign
    root.mkdir()
    (root / "Note.md").write_text("# Note\n", encoding="utf-8")
    return root


@pytest.fixture
def env(vault: Path, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        **cli_env(vault, tmp_path / "state", "http://127.0.0.1:9"),
        "HOME": str(home),
        "ASKVAULT_SERVICE_DIR": str(tmp_path / "units"),
    }


def unit_of(env: dict[str, str]) -> Path:
    units = list(Path(env["ASKVAULT_SERVICE_DIR"]).iterdir())
    assert len(units) == 1, units
    return units[0]


def test_install_writes_a_unit_with_this_vault_and_state_filled_in(
    env: dict[str, str], vault: Path, tmp_path: Path
) -> None:
    code, out, err = invoke(["service", "install", "--no-start", "--platform", "linux"], env)
    assert code == 0, err
    unit = unit_of(env)
    assert unit.name.startswith("askvault-My-Notes-100-HOME-") and unit.suffix == ".service"
    text = unit.read_text(encoding="utf-8")
    assert f'ExecStart="{sys.executable}" "-m" "askvault" "run" "--vault"' in text
    assert '"--vault" "' + str(vault).replace("%", "%%").replace("$", "$$") + '"' in text
    assert f'Environment="ASKVAULT_STATE_DIR={tmp_path / "state"}"' in text
    assert "RestartPreventExitStatus=1 2" in text and "WantedBy=default.target" in text
    assert f"systemctl --user enable --now {unit.name}" in out


def test_the_units_documentation_is_a_page_that_exists(env: dict[str, str]) -> None:
    invoke(["service", "install", "--no-start", "--platform", "linux"], env)
    line = next(
        line
        for line in unit_of(env).read_text(encoding="utf-8").splitlines()
        if line.startswith("Documentation=")
    )
    uri = urlparse(line.removeprefix("Documentation="))
    page = Path(unquote(uri.path))
    assert uri.scheme == "file" and page.is_file()
    assert page.read_text(encoding="utf-8") == (
        REPO / "docs" / "how-to" / "run-as-a-service.md"
    ).read_text(encoding="utf-8"), (
        "the packaged page drifted from docs/how-to/run-as-a-service.md: copy it"
    )


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verify_accepts_the_written_unit(env: dict[str, str]) -> None:
    invoke(["service", "install", "--no-start", "--platform", "linux"], env)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(unit_of(env))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "HOME": env["HOME"]},
    )
    if "Failed to initialize manager" in done.stderr or "Failed to setup" in done.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr


def test_install_again_is_unchanged_and_status_says_up_to_date(env: dict[str, str]) -> None:
    args = ["--no-start", "--platform", "linux"]
    assert invoke(["service", "status", *args], env)[1].startswith("not installed")
    invoke(["service", "install", *args], env)
    code, out, _ = invoke(["service", "install", *args], env)
    assert code == 0 and out.startswith("unchanged ")
    code, out, _ = invoke(["service", "status", *args], env)
    assert "(up to date)" in out
    moved = {**env, "ASKVAULT_STATE_DIR": str(Path(env["ASKVAULT_STATE_DIR"]) / "elsewhere")}
    code, out, _ = invoke(["service", "status", *args], moved)
    assert "differs from what install writes now" in out


def test_a_unit_file_askvault_did_not_write_is_never_replaced_or_removed(
    env: dict[str, str],
) -> None:
    args = ["--no-start", "--platform", "linux"]
    invoke(["service", "install", *args], env)
    unit = unit_of(env)
    unit.write_text("[Service]\nExecStart=/bin/true\n", encoding="utf-8")
    code, _, err = invoke(["service", "install", *args], env)
    assert code == 1 and "not written by askvault" in err and "--force" in err
    code, _, err = invoke(["service", "uninstall", *args], env)
    assert code == 1 and unit.read_text(encoding="utf-8") == "[Service]\nExecStart=/bin/true\n"
    assert invoke(["service", "install", *args, "--force"], env)[0] == 0
    assert "askvault service install" in unit.read_text(encoding="utf-8")


def test_uninstall_removes_the_unit_and_is_quiet_when_there_is_none(env: dict[str, str]) -> None:
    args = ["--no-start", "--platform", "linux"]
    invoke(["service", "install", *args], env)
    unit = unit_of(env)
    code, out, _ = invoke(["service", "uninstall", *args], env)
    assert code == 0 and out.startswith("removed ") and not unit.exists()
    code, out, _ = invoke(["service", "uninstall", *args], env)
    assert code == 0 and "nothing to remove" in out


def _recorder(tmp_path: Path, name: str, stdout: str = "") -> Path:
    """A stand-in for `name` on PATH that appends its arguments to a log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / f"{name}.calls"
    script = bin_dir / name
    script.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nprintf "{stdout}"\n', encoding="utf-8")
    script.chmod(0o755)
    return log


def test_install_and_uninstall_call_systemctl_for_this_unit(
    env: dict[str, str], tmp_path: Path
) -> None:
    log = _recorder(tmp_path, "systemctl", "active\\n")
    env = {**env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"}
    code, out, err = invoke(["service", "install", "--platform", "linux"], env)
    assert code == 0, err
    name = unit_of(env).name
    assert log.read_text().splitlines() == [
        "--user daemon-reload",
        f"--user enable --now {name}",
        f"--user is-enabled {name}",
        f"--user is-active {name}",
    ]
    assert f"enabled and started {name}" in out
    log.unlink()
    assert invoke(["service", "uninstall", "--platform", "linux"], env)[0] == 0
    assert log.read_text().splitlines() == [f"--user disable --now {name}", "--user daemon-reload"]


def test_a_missing_systemctl_is_one_line_with_the_no_start_hint(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = invoke(
        ["service", "install", "--platform", "linux"], {**env, "PATH": str(tmp_path / "empty")}
    )
    assert code == 1 and "`systemctl` is not installed here" in err and "--no-start" in err


def test_macos_install_writes_a_launchd_agent_plistlib_reads(
    env: dict[str, str], vault: Path, tmp_path: Path
) -> None:
    code, out, err = invoke(["service", "install", "--no-start", "--platform", "macos"], env)
    assert code == 0, err
    plist = unit_of(env)
    assert plist.suffix == ".plist" and plist.name.startswith("askvault.My-Notes")
    agent = plistlib.loads(plist.read_bytes())
    assert agent["Label"] == plist.name.removesuffix(".plist")
    assert agent["ProgramArguments"] == [
        sys.executable,
        "-m",
        "askvault",
        "run",
        "--vault",
        str(vault),
    ]
    assert agent["EnvironmentVariables"]["ASKVAULT_STATE_DIR"] == str(tmp_path / "state")
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] == {"Crashed": True}
    assert agent["StandardErrorPath"].startswith(env["HOME"])
    assert "launchctl bootstrap" in out


def test_macos_install_bootstraps_the_agent_with_launchctl(
    env: dict[str, str], tmp_path: Path
) -> None:
    log = _recorder(tmp_path, "launchctl")
    env = {**env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"}
    assert invoke(["service", "install", "--platform", "macos"], env)[0] == 0
    plist = unit_of(env)
    calls = log.read_text().splitlines()
    assert calls[0] == f"bootstrap gui/{os.getuid()} {plist}"
    assert calls[1] == f"print gui/{os.getuid()}/{plist.name.removesuffix('.plist')}"


# -- issue 25 items 7 and 8, issue 26 item 5 ---------------------------------------------


@pytest.mark.parametrize("platform", ["linux", "macos"])
@pytest.mark.parametrize(
    ("char", "named"),
    [("\r", "a carriage return"), ("\n", "a line break"), ("\x1b", "a control character")],
)
def test_a_vault_path_a_service_file_cannot_hold_is_refused_in_one_line_and_nothing_written(
    tmp_path: Path, env: dict[str, str], platform: str, char: str, named: str
) -> None:
    # systemd reads a carriage return as a line break: the path would inject lines.
    vault = tmp_path / f"Notes{char}ExecStartPre=touch evil"
    vault.mkdir()
    env = {**env, "ASKVAULT_VAULT": str(vault)}
    result = CliRunner().invoke(
        cli, ["service", "install", "--no-start", "--platform", platform], env=env
    )
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[1].startswith("hint: ")
    assert lines[0].startswith("askvault: cannot install the service: the vault path ")
    assert f"holds {named}" in lines[0] and char not in lines[0]
    assert not Path(env["ASKVAULT_SERVICE_DIR"]).exists(), "nothing may be written"


def _edit(unit: Path, old: str, new: str) -> bytes:
    text = unit.read_text(encoding="utf-8")
    assert old in text
    unit.write_text(text.replace(old, new), encoding="utf-8")
    return unit.read_bytes()


def test_a_unit_the_user_edited_is_kept_status_says_so_and_force_keeps_a_copy(
    env: dict[str, str],
) -> None:
    args = ["--no-start", "--platform", "linux"]
    invoke(["service", "install", *args], env)
    unit = unit_of(env)
    edited = _edit(unit, "RestartSec=5", "RestartSec=30")  # the marker line is kept
    moved = {**env, "ASKVAULT_STATE_DIR": str(Path(env["ASKVAULT_STATE_DIR"]) / "elsewhere")}
    code, _, err = invoke(["service", "install", *args], moved)
    assert code == 1 and "was edited since askvault wrote it" in err
    assert "--force" in err and f"systemctl --user edit {unit.name}" in err
    assert unit.read_bytes() == edited
    _, out, _ = invoke(["service", "status", *args], moved)
    assert "edited since askvault wrote it" in out and "leaves it as it is" in out
    assert "run `askvault service install`" not in out, "status must not advise losing edits"
    code, out, _ = invoke(["service", "install", *args, "--force"], moved)
    backup = unit.with_name(unit.name + ".bak")
    assert code == 0 and f"kept the file it replaced as {backup}" in out
    assert backup.read_bytes() == edited
    assert "RestartSec=5" in unit.read_text(encoding="utf-8")
    code, out, _ = invoke(["service", "install", *args], env)  # as written again: replaced
    assert code == 0 and out.startswith("wrote ") and "kept the file" not in out


def test_a_unit_of_an_older_askvault_without_a_digest_is_not_replaced_without_force(
    env: dict[str, str],
) -> None:
    args = ["--no-start", "--platform", "linux"]
    invoke(["service", "install", *args], env)
    unit = unit_of(env)
    old = b"".join(
        line
        for line in unit.read_bytes().splitlines(keepends=True)
        if b"askvault-digest" not in line
    )
    unit.write_bytes(old)
    moved = {**env, "ASKVAULT_STATE_DIR": str(Path(env["ASKVAULT_STATE_DIR"]) / "elsewhere")}
    code, _, err = invoke(["service", "install", *args], moved)
    assert code == 1 and "older askvault" in err and unit.read_bytes() == old
    assert "perhaps edited since" in invoke(["service", "status", *args], moved)[1]


def test_an_edited_launchd_agent_is_kept_too(env: dict[str, str]) -> None:
    args = ["--no-start", "--platform", "macos"]
    invoke(["service", "install", *args], env)
    plist = unit_of(env)
    edited = _edit(plist, "<integer>5</integer>", "<integer>30</integer>")
    moved = {**env, "ASKVAULT_STATE_DIR": str(Path(env["ASKVAULT_STATE_DIR"]) / "elsewhere")}
    code, _, err = invoke(["service", "install", *args], moved)
    assert code == 1 and "was edited since askvault wrote it" in err
    assert plist.read_bytes() == edited


def test_uninstall_of_an_edited_unit_keeps_a_copy(env: dict[str, str]) -> None:
    args = ["--no-start", "--platform", "linux"]
    invoke(["service", "install", *args], env)
    unit = unit_of(env)
    edited = _edit(unit, "RestartSec=5", "RestartSec=30")
    code, out, _ = invoke(["service", "uninstall", *args], env)
    assert code == 0 and not unit.exists()
    assert unit.with_name(unit.name + ".bak").read_bytes() == edited and "kept as" in out


def _no_user_session(tmp_path: Path) -> dict[str, str]:
    """A `systemctl` on PATH that answers like one without a user manager to talk to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "systemctl"
    script.write_text(
        '#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_install_without_a_user_session_says_what_was_written_why_and_what_to_do(
    env: dict[str, str], tmp_path: Path
) -> None:
    env = {**env, **_no_user_session(tmp_path)}
    code, _, err = invoke(["service", "install", "--platform", "linux"], env)
    unit = unit_of(env)
    lines = err.splitlines()
    assert code == 1 and len(lines) == 2
    assert lines[0].startswith(f"askvault: wrote {unit}, but cannot start it: ")
    assert "no systemd user session" in lines[0]
    assert "loginctl enable-linger" in lines[1] and "askvault run" in lines[1]
    assert "--no-start" in lines[1] and "journalctl" not in err
    assert unit.is_file()


def test_uninstall_without_a_user_session_removes_the_file_and_exits_0(
    env: dict[str, str], tmp_path: Path
) -> None:
    invoke(["service", "install", "--no-start", "--platform", "linux"], env)
    unit = unit_of(env)
    code, out, err = invoke(
        ["service", "uninstall", "--platform", "linux"], {**env, **_no_user_session(tmp_path)}
    )
    assert code == 0, err
    assert not unit.exists() and out.startswith(f"removed {unit}")
    assert "Failed to connect to bus" in out
