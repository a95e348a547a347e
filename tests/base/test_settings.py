"""Settings: defaults -> TOML -> environment -> flags, validated once with dotted keys."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from askvault.errors import ConfigError
from askvault.settings import (
    SECTIONS,
    Settings,
    known_keys,
    load_settings,
    render_example_toml,
    section_type,
    setting_choices,
    setting_kind,
    vault_id,
)

REPO = Path(__file__).resolve().parents[2]


def test_defaults_without_file_or_env() -> None:
    settings = load_settings(None, env={})
    assert settings.ollama.host == "http://127.0.0.1:11434"
    assert settings.ollama.embed_model == "all-minilm"
    assert settings.queries.settle_s == 3.0
    assert settings.daemon.reconcile_interval_s == 600.0


def test_precedence_file_then_env_then_flags(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        'vault = "/from/file"\n[ollama]\nembed_model = "file-model"\nchat_model = "file-chat"\n'
        "timeout_s = 5\n"
    )
    env = {"ASKVAULT_EMBED_MODEL": "env-model", "ASKVAULT_OLLAMA__TIMEOUT_S": "7.5"}
    settings = load_settings(
        config, env=env, flags={"ollama.chat_model": "flag-chat", "vault": None}
    )
    assert settings.vault == "/from/file"
    assert settings.ollama.embed_model == "env-model"
    assert settings.ollama.chat_model == "flag-chat"
    assert settings.ollama.timeout_s == 7.5


def test_design_environment_variables_are_honoured() -> None:
    env = {
        "OLLAMA_HOST": "http://127.0.0.1:9999",
        "ASKVAULT_VAULT": "/v",
        "ASKVAULT_STATE_DIR": "/s",
        "ASKVAULT_EMBED_MODEL": "all-minilm",
        "ASKVAULT_CHAT_MODEL": "qwen",
    }
    settings = load_settings(None, env=env)
    assert (settings.ollama.host, settings.vault, settings.state_dir) == (
        "http://127.0.0.1:9999",
        "/v",
        "/s",
    )
    assert (settings.ollama.embed_model, settings.ollama.chat_model) == ("all-minilm", "qwen")


def test_every_invalid_value_is_reported_at_once_with_its_key(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        "[ollama]\ntimeout_s = -1\nnum_ctx = 'big'\n[daemon]\nwatch_mode = 'x'\n[nope]\na = 1\n"
    )
    with pytest.raises(ConfigError) as info:
        load_settings(config, env={"ASKVAULT_INDEX__MAX_NOTE_BYTES": "0"})
    problems = "\n".join(info.value.problems)
    for key in (
        "ollama.timeout_s",
        "ollama.num_ctx",
        "daemon.watch_mode",
        "nope",
        "index.max_note_bytes",
    ):
        assert key in problems


def test_bad_toml_and_missing_file_are_config_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("vault = ")
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(bad, env={})
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "missing.toml", env={})


def test_booleans_and_lists_from_environment() -> None:
    settings = load_settings(
        None,
        env={
            "ASKVAULT_OLLAMA__ALLOW_REMOTE_OLLAMA": "yes",
            "ASKVAULT_INDEX__IGNORE_GLOBS": "a/**, *.tmp.md",
        },
    )
    assert settings.ollama.allow_remote_ollama is True
    assert settings.index.ignore_globs == ["a/**", "*.tmp.md"]
    with pytest.raises(ConfigError, match="ollama.allow_remote_ollama"):
        load_settings(None, env={"ASKVAULT_OLLAMA__ALLOW_REMOTE_OLLAMA": "maybe"})


def test_unrelated_askvault_environment_variables_are_ignored() -> None:
    assert load_settings(None, env={"ASKVAULT_SOMETHING_ELSE": "1"}) == Settings()


def test_index_lives_outside_the_vault_under_the_state_dir(tmp_path: Path) -> None:
    settings = load_settings(
        None,
        env={
            "ASKVAULT_VAULT": str(tmp_path / "My Vault"),
            "ASKVAULT_STATE_DIR": str(tmp_path / "state"),
        },
    )
    assert settings.db_path.parent.parent == tmp_path / "state"
    assert settings.db_path.name == "index.sqlite"
    assert vault_id(tmp_path / "a") != vault_id(tmp_path / "b")


def test_example_config_matches_the_settings() -> None:
    committed = (REPO / "config" / "askvault.example.toml").read_text(encoding="utf-8")
    assert committed == render_example_toml(), (
        "config/askvault.example.toml drifted: run `askvault config-example "
        "--write config/askvault.example.toml`"
    )


def test_example_config_loads_to_the_defaults(tmp_path: Path) -> None:
    config = tmp_path / "example.toml"
    config.write_text(render_example_toml())
    assert load_settings(config, env={}) == Settings()


# Every setting that is one of a few words, with its words: the Literal type is their one list.
CHOICE_SETTINGS = {
    "daemon.watch_mode": ("auto", "events", "polling"),
    "daemon.log_format": ("text", "json"),
    "daemon.log_level": ("debug", "info", "warning", "error"),
    "search.fusion": ("convex", "rrf", "rerank"),
    "queries.prompt": ("answer", "quote-first"),
    "queries.verify": ("off", "judge", "again", "doubtful"),
}


def _choice_fields() -> dict[str, tuple[str, ...]]:
    found = {}
    for section in SECTIONS:
        cls = section_type(section)
        for f in fields(cls):
            if setting_choices(cls, f.name):
                found[f"{section}.{f.name}"] = setting_choices(cls, f.name)
    return found


def test_the_settings_of_a_few_words_take_them_from_their_literal_type() -> None:
    assert _choice_fields() == CHOICE_SETTINGS
    # no second list beside the type: the fields' metadata holds the help and bounds only
    assert all("choices" not in f.metadata for s in SECTIONS for f in fields(section_type(s)))


@pytest.mark.parametrize("key", sorted(CHOICE_SETTINGS))
def test_each_word_of_a_choice_setting_is_accepted_and_another_is_refused(key: str) -> None:
    section, name = key.split(".")
    for word in CHOICE_SETTINGS[key]:
        settings = load_settings(None, env={}, flags={key: word})
        assert getattr(getattr(settings, section), name) == word
    with pytest.raises(ConfigError) as info:
        load_settings(None, env={f"ASKVAULT_{section.upper()}__{name.upper()}": "other"})
    assert info.value.problems == [
        f"{key}: must be one of {', '.join(CHOICE_SETTINGS[key])} (got 'other')"
    ]


def test_a_choice_setting_is_a_string_first() -> None:
    """A number where a word is expected is refused as a string would be: not one of them."""
    with pytest.raises(ConfigError, match=r"daemon.log_format: must be a string \(got 1\)"):
        load_settings(None, env={}, flags={"daemon.log_format": 1})
    assert setting_kind(section_type("daemon"), "log_format") == "str"
    assert setting_kind(section_type("index"), "ignore_globs") == "list[str]"
    assert setting_kind(Settings, "vault") == "str"


def test_the_example_file_names_the_words_of_each_choice_setting() -> None:
    text = render_example_toml()
    for key, words in CHOICE_SETTINGS.items():
        name = key.split(".")[1]
        assert f"# One of: {', '.join(words)}.\n{name} = " in text


def test_the_sections_are_the_settings_fields_of_a_section_type() -> None:
    """The sections are listed once, as fields of Settings: the TOML tables, the known keys
    and the example file follow them."""
    assert SECTIONS == ("ollama", "index", "daemon", "search", "queries")
    assert [section_type(s).__name__ for s in SECTIONS] == [
        "OllamaSettings",
        "IndexSettings",
        "DaemonSettings",
        "SearchSettings",
        "QueriesSettings",
    ]
    tables = [line for line in render_example_toml().splitlines() if line.startswith("[")]
    assert tables == [f"[{s}]" for s in SECTIONS]
    assert "vault" in known_keys() and "ollama" not in known_keys()
