"""systemd/askvault.service is a unit systemd accepts (systemd-analyze verify, when present)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "askvault.service"


def test_the_unit_file_names_the_command_and_restarts_only_on_failure() -> None:
    text = UNIT.read_text(encoding="utf-8")
    assert "ExecStart=%h/.local/bin/askvault run" in text
    assert "Restart=on-failure" in text
    assert "ExecReload=/bin/kill -HUP $MAINPID" in text


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    # %h is the home folder: give the unit an askvault to point at, as an install would.
    script = tmp_path / ".local" / "bin" / "askvault"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    script.chmod(0o755)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(UNIT)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
    if "Failed to initialize manager" in done.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr


def test_the_unit_names_no_documentation_page_that_does_not_exist() -> None:
    for line in UNIT.read_text(encoding="utf-8").splitlines():
        if line.startswith("Documentation="):
            uri = line.removeprefix("Documentation=")
            assert not uri.startswith("file://%h"), f"{uri}: no install puts a page there"


def test_a_refused_start_does_not_restart_in_a_loop() -> None:
    assert "RestartPreventExitStatus=1 2" in UNIT.read_text(encoding="utf-8")


@pytest.mark.parametrize("source", ["the template", "the unit askvault writes"])
def test_no_comment_promises_more_than_its_line_enforces(source: str) -> None:
    """RestrictAddressFamilies limits socket families, not addresses: the comment above it
    once promised "only local sockets", which IPv4 and IPv6 sockets to any host are not."""
    from askvault.core.service_files import ServiceSpec, render_systemd_unit

    spec = ServiceSpec(
        name="askvault-notes",
        vault="/home/me/Notes",
        state_dir="/home/me/.local/state/askvault",
        command=("/usr/bin/python3", "-m", "askvault", "run"),
        environment={},
        documentation="file:///doc.md",
    )
    text = (
        UNIT.read_text(encoding="utf-8") if source == "the template" else render_systemd_unit(spec)
    )
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("RestrictAddressFamilies="))
    comment = " ".join(line for line in lines[max(0, at - 4) : at] if line.startswith("#"))
    assert "Only local sockets" not in comment and "nothing goes out" not in comment
    assert "not the addresses" in comment
