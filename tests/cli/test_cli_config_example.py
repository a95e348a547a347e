"""`askvault config-example --write FILE` never overwrites a file unless told to (issue 14,
item 7). Through the real CLI entry point."""

from __future__ import annotations

import tomllib
from pathlib import Path

from click.testing import CliRunner

from askvault.cli.main import cli
from askvault.settings import render_example_toml


def invoke(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_write_creates_a_new_file_with_the_example(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    code, _, err = invoke(["config-example", "--write", str(target)])
    assert code == 0 and f"wrote {target}" in err
    assert target.read_text(encoding="utf-8") == render_example_toml()
    tomllib.loads(target.read_text(encoding="utf-8"))
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"], "no temp file left"


def test_write_refuses_an_existing_file_and_keeps_its_bytes(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text('vault = "/my/notes"\n', encoding="utf-8")
    code, _, err = invoke(["config-example", "--write", str(target)])
    assert code == 1
    assert "exists; not overwriting it" in err and "--force" in err
    assert target.read_text(encoding="utf-8") == 'vault = "/my/notes"\n'
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


def test_write_refuses_a_dangling_symlink_too(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.symlink_to(tmp_path / "elsewhere.toml")
    assert invoke(["config-example", "--write", str(target)])[0] == 1
    assert not (tmp_path / "elsewhere.toml").exists()


def test_write_with_force_replaces_the_file(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text("old\n", encoding="utf-8")
    code, _, _ = invoke(["config-example", "--write", str(target), "--force"])
    assert code == 0 and target.read_text(encoding="utf-8") == render_example_toml()


def test_write_into_a_missing_folder_says_to_create_it(tmp_path: Path) -> None:
    code, _, err = invoke(["config-example", "--write", str(tmp_path / "nope" / "c.toml")])
    assert code == 1 and "does not exist" in err and "mkdir -p" in err


def test_without_write_it_prints_the_example() -> None:
    code, out, _ = invoke(["config-example"])
    assert code == 0 and out == render_example_toml()
