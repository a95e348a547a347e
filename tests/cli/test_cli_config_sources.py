"""Settings in one place (issue 26, item 4): `askvault config-example --write` with no file
writes the user's config file, the one askvault reads by default (never over an existing
one), and `status` and `doctor` name the file in force and where each setting that is not
at its default comes from (the file, the environment, a flag). Through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from askvault.cli.main import cli
from askvault.services.admin.doctor import Check, config_check
from askvault.settings import SettingsTrace, load_traced_settings, render_example_toml
from support.fake_ollama import FakeOllama
from support.settings_factory import cli_env
from support.vault_factory import make_fixture_vault


@pytest.fixture
def env(tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, str]:
    vault = make_fixture_vault(tmp_path / "vault")
    return cli_env(vault, tmp_path / "state", fake_ollama.url)


def user_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "askvault" / "config.toml"


def invoke(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_write_without_a_file_writes_the_users_config_file_and_its_folder(
    env: dict[str, str],
) -> None:
    target = user_file(env)
    assert not target.parent.exists()
    code, out, err = invoke(["config-example", "--write"], env)
    assert code == 0 and out == ""
    assert f"wrote {target}: askvault reads it by default" in err
    assert target.read_text(encoding="utf-8") == render_example_toml()
    assert target.parent.stat().st_mode & 0o777 == 0o700
    # and it is the file the next command reads
    _, trace = load_traced_settings(None, env=env)
    assert trace.file == str(target) and trace.chosen_by == "default"


def test_write_without_a_file_never_replaces_an_existing_one(env: dict[str, str]) -> None:
    target = user_file(env)
    target.parent.mkdir(parents=True)
    target.write_text('vault = "/my/notes"\n', encoding="utf-8")
    code, _, err = invoke(["config-example", "--write"], env)
    assert code == 1 and "exists; not overwriting it" in err
    assert target.read_text(encoding="utf-8") == 'vault = "/my/notes"\n'
    assert [p.name for p in target.parent.iterdir()] == ["config.toml"], "no temp file left"


def test_write_with_force_and_no_file_replaces_the_users_file(env: dict[str, str]) -> None:
    target = user_file(env)
    target.parent.mkdir(parents=True)
    target.write_text("old\n", encoding="utf-8")
    assert invoke(["config-example", "--write", "--force"], env)[0] == 0
    assert target.read_text(encoding="utf-8") == render_example_toml()


def test_write_without_xdg_config_home_writes_under_home(
    env: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "XDG_CONFIG_HOME"} | {"HOME": str(tmp_path)}
    assert invoke(["config-example", "--write"], env)[0] == 0
    assert (tmp_path / ".config" / "askvault" / "config.toml").is_file()


def write_config(env: dict[str, str], text: str) -> Path:
    target = user_file(env)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def test_status_names_the_file_and_where_each_setting_comes_from(env: dict[str, str]) -> None:
    target = write_config(
        env,
        render_example_toml().replace('chat_model = "llama3.2"', 'chat_model = "qwen2.5:1.5b"'),
    )
    env = env | {"ASKVAULT_QUERIES__SETTLE_S": "5"}
    code, out, _ = invoke(["status", "--embed-model", "nomic-embed-text"], env)
    assert code == 0
    assert f"config       {target} (read by default)" in out
    assert '             ollama.chat_model = "qwen2.5:1.5b"  (file)' in out
    assert "             queries.settle_s = 5.0  (environment ASKVAULT_QUERIES__SETTLE_S)" in out
    assert '             ollama.embed_model = "nomic-embed-text"  (flag --embed-model)' in out
    # the example file sets every key, most to their defaults: those are not listed
    assert "ollama.num_ctx" not in out and "queries.folder" not in out

    doc = json.loads(invoke(["status", "--json"], env)[1])
    config = doc["config"]
    assert config["file"] == str(target) and config["chosen_by"] == "default"
    by_key = {item["key"]: item for item in config["settings"]}
    assert by_key["ollama.chat_model"] == {
        "key": "ollama.chat_model",
        "value": '"qwen2.5:1.5b"',
        "source": "file",
        "via": str(target),
    }
    assert by_key["queries.settle_s"]["source"] == "environment"


def test_a_later_layer_wins_and_is_the_one_named(env: dict[str, str]) -> None:
    write_config(env, '[ollama]\nchat_model = "from-file"\n')
    env = env | {"ASKVAULT_CHAT_MODEL": "from-env"}
    out = invoke(["status", "--chat-model", "from-flag"], env)[1]
    assert '             ollama.chat_model = "from-flag"  (flag --chat-model)' in out
    assert "from-file" not in out and "from-env" not in out


def test_status_without_a_config_file_says_where_one_would_be_read(env: dict[str, str]) -> None:
    out = invoke(["status"], env)[1]
    assert (
        f"config       none ({user_file(env)} is read when it exists; "
        "`askvault config-example --write` writes it)"
    ) in out


def test_a_file_named_by_askvault_config_or_config_says_so(
    env: dict[str, str], tmp_path: Path
) -> None:
    other = tmp_path / "other.toml"
    other.write_text('[ollama]\nchat_model = "m"\n', encoding="utf-8")
    assert (
        f"config       {other} (named by ASKVAULT_CONFIG)"
        in (invoke(["status"], env | {"ASKVAULT_CONFIG": str(other)})[1])
    )
    assert (
        f"config       {other} (given with --config)"
        in (invoke(["status", "--config", str(other)], env)[1])
    )


def test_doctor_shows_the_config_first_and_never_fails_on_it(env: dict[str, str]) -> None:
    target = write_config(env, '[ollama]\nchat_model = "qwen2.5:1.5b"\n')
    _, out, _ = invoke(["doctor"], env)
    first = out.splitlines()[0]
    assert first.startswith(f"ok   config: {target} (read by default); set: ")
    assert 'ollama.chat_model = "qwen2.5:1.5b" (file)' in first
    assert "ollama.host = " in first and "(environment OLLAMA_HOST)" in first
    checks = json.loads(invoke(["doctor", "--json"], env)[1])
    assert checks[0]["check"] == "config" and checks[0]["ok"] is True


def test_doctor_without_a_config_file_says_where_one_is_read(
    env: dict[str, str], tmp_path: Path
) -> None:
    plain = {k: v for k, v in env.items() if not k.startswith(("ASKVAULT_", "OLLAMA_"))} | {
        "XDG_STATE_HOME": str(tmp_path / "st")
    }
    vault = tmp_path / "vault"
    _, out, _ = invoke(["doctor", "--vault", str(vault)], plain)
    assert out.splitlines()[0] == (
        f"ok   config: no config file ({user_file(env)} is read when it exists; "
        "`askvault config-example --write` writes it); set: "
        f'vault = "{vault}" (flag --vault)'
    )


def test_the_config_check_with_every_setting_at_its_default_says_so() -> None:
    trace = SettingsTrace(None, "none", "/home/u/.config/askvault/config.toml", ())
    assert config_check(trace) == Check(
        "config",
        True,
        "no config file (/home/u/.config/askvault/config.toml is read when it exists;"
        " `askvault config-example --write` writes it); every setting at its default",
    )
