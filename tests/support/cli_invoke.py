"""The `askvault` command run in the test's process (click's CliRunner), as the CLI tests of
several folders run it."""

from __future__ import annotations

from click.testing import CliRunner

from askvault.cli.main import cli


def invoke(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`askvault ARGS` with `env`: its exit code, stdout and stderr. An exception the
    command does not handle is raised here, not turned into an exit code."""
    result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr
