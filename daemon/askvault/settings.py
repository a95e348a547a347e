"""One typed Settings object: defaults -> TOML file -> ASKVAULT_* environment -> flags.

Every layer may read Settings; nothing here touches the network or the index.
Validation runs once, after all sources are merged, and reports every problem
with its dotted key (`ollama.timeout_s: must be > 0`) in one ConfigError.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import tomllib
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from askvault.errors import ConfigError

# Token budget of `askvault context` (and get_context_pack) when none is given; here so that
# the CLI can show it without importing the services.
DEFAULT_BUDGET_TOKENS = 4000


# The settings whose value is one of a few words: the words are the type, listed once; the
# validation, the example file and the reference read them from it (`setting_choices`).
WatchMode = Literal["auto", "events", "polling"]
LogFormat = Literal["text", "json"]
LogLevel = Literal["debug", "info", "warning", "error"]
FusionMethod = Literal["convex", "rrf", "rerank"]
PromptForm = Literal["answer", "quote-first"]
VerifyMode = Literal["off", "judge", "again", "doubtful"]


def _opt(default: Any, help: str, **checks: Any) -> Any:
    """A settings field with its help text and checks (min, min_excl) as metadata."""
    meta = {"help": help, **checks}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class OllamaSettings:
    host: str = _opt("http://127.0.0.1:11434", "Ollama server URL (env OLLAMA_HOST).")
    allow_remote_ollama: bool = _opt(
        False, "Allow a non-loopback Ollama host. Off: askvault talks to this machine only."
    )
    embed_model: str = _opt("all-minilm", "Embedding model (env ASKVAULT_EMBED_MODEL).")
    chat_model: str = _opt("llama3.2", "Chat model for answers (env ASKVAULT_CHAT_MODEL).")
    timeout_s: float = _opt(
        60.0,
        "Timeout of one Ollama request (connect, embeddings, model list), in seconds.",
        min_excl=0,
    )
    reply_silence_s: float = _opt(
        600.0,
        "Longest silence of a streamed answer, before its first piece (a CPU reads the whole"
        " prompt first) or between two pieces (s); `reply_max_s` bounds the writing.",
        min_excl=0,
    )
    num_ctx: int = _opt(4096, "Context window requested from the chat model (tokens).", min=512)
    temperature: float = _opt(0.1, "Sampling temperature of answers (low: repeatable).", min=0)
    num_predict: int = _opt(
        400,
        "Longest answer, in tokens (1 to 3 short paragraphs need ~250): asked of Ollama and"
        " enforced by askvault too (a reply cut there says so).",
        min=16,
    )
    reply_max_bytes: int = _opt(
        32768,
        "Longest answer, in bytes of text: askvault stops reading there, checks what"
        " arrived and says the reply was cut.",
        min=1024,
    )
    reply_max_s: float = _opt(
        300.0,
        "Longest time writing one answer, from its first piece to its last (s): askvault"
        " stops reading there, checks what arrived and says the reply was cut.",
        min_excl=0,
    )
    embed_batch_size: int = _opt(32, "Most texts per embedding request.", min=1)
    embed_batch_seconds: float = _opt(
        4.0,
        "Aim for each embedding request of the backlog, in seconds: it holds what the model"
        " embeds in that time at its measured rate (a question waits for the request in"
        " flight). 0: always embed_batch_size texts.",
        min=0,
    )
    embed_max_tokens: int = _opt(
        2048,
        "Longest input sent to the embedding model; longer text is split, never truncated.",
        min=16,
    )


@dataclass(frozen=True)
class IndexSettings:
    max_note_bytes: int = _opt(5_000_000, "Notes larger than this are skipped (bytes).", min=1)
    chunk_max_tokens: int = _opt(
        400,
        "Largest chunk, in estimated embedding tokens (a change re-cuts every note once).",
        min=32,
    )
    ignore_globs: list[str] = _opt(
        [], "Extra vault-relative globs to ignore (as well as Obsidian's Excluded files)."
    )
    index_queries: bool = _opt(
        False,
        "Index the queries/ folder (answers) as knowledge. Off: only moved-out answers count.",
    )
    parse_workers: int = _opt(
        2, "Processes that read and parse notes when many changed at once (1: no pool).", min=1
    )
    date_properties: list[str] = _opt(
        ["date", "created"],
        "Properties read for a note's date, first first, after a daily note's name and a"
        " dated file name and before the file's time (questions about a period).",
    )


@dataclass(frozen=True)
class DaemonSettings:
    reconcile_interval_s: float = _opt(
        600.0, "Periodic full reconcile, the safety net behind file events (seconds).", min=1
    )
    debounce_s: float = _opt(0.3, "Quiet time per path before an event is processed.", min=0)
    watch_mode: WatchMode = _opt(
        "auto",
        "How the vault is watched: polling for filesystems without inotify events, events"
        " for inotify's, auto chooses by the file system.",
    )
    poll_interval_s: float = _opt(2.0, "Polling interval in polling mode (seconds).", min_excl=0)
    log_format: LogFormat = _opt("text", "Log lines as text, or as one JSON object each.")
    busy_timeout_s: float = _opt(
        15.0,
        "How long a write waits for another writer of the index before backing off (s).",
        min_excl=0,
    )
    log_level: LogLevel = _opt("info", "The least severe log lines written.")


@dataclass(frozen=True)
class SearchSettings:
    fusion: FusionMethod = _opt(
        "convex",
        "convex (words and vector scores scaled and mixed) | rrf (rank fusion of words and"
        " vectors) | rerank (vector top-K, then BM25).",
    )
    limit: int = _opt(10, "Default number of hits.", min=1)
    candidates: int = _opt(100, "Candidates taken from each channel before fusion.", min=1)
    embed_timeout_s: float = _opt(
        5.0,
        "Longest wait for a search query's embedding before `search` and `context`"
        " answer from words alone, saying why (s).",
        min_excl=0,
    )


@dataclass(frozen=True)
class QueriesSettings:
    folder: str = _opt("queries", "Vault folder of the question protocol.")
    inbox: str = _opt("inbox", "Sub-folder where questions are dropped.")
    answers: str = _opt("answers", "Sub-folder where answer notes are written.")
    archive: str = _opt("archive", "Sub-folder where answered questions are moved.")
    log: str = _opt("log.md", "Log note (one line per question).")
    settle_s: float = _opt(
        3.0,
        "A question that looks finished (it ends with a question mark; or with a full stop"
        " and you are not on the note in Obsidian; or `draft: true` was just removed) is"
        " taken once unchanged for this long (s).",
        min=0,
    )
    unfinished_settle_s: float = _opt(
        60.0,
        "A question that does not look finished is taken once unchanged for this long (s):"
        " longer than people pause mid-sentence (up to 30 s in the replayed typing"
        " sessions).",
        min=0,
    )
    max_sources: int = _opt(8, "Most pages sent to the model for one answer.", min=1)
    excerpt_tokens: int = _opt(
        1000,
        "Most (estimated) tokens of excerpts in an answer's prompt, best first; measured in"
        " docs/benchmarks.md (a CPU reads ~20-50 prompt tokens/s).",
        min=64,
    )
    prompt: PromptForm = _opt(
        "answer",
        "answer: the model answers from the numbered excerpts. quote-first: it first copies"
        " the sentence that answers, then answers from it (the copy is never published).",
    )
    verify: VerifyMode = _opt(
        "off",
        "judge: after the lexical check, the chat model is asked (a short, grammar-constrained"
        " request) whether the passages the claims rest on answer the question as asked;"
        " an answer judged wrong is not published. again: the model is asked the question a"
        " second time with the excerpts in reverse order, and an answer whose second reply"
        " rests on none of the same sentences and gives other values (numbers, code) is not"
        " published. doubtful: the same second asking, only for a reply the lexical check"
        " backs in part (some of its sentences are not found in the notes). off: the"
        " lexical check alone.",
    )
    own_question: bool = _opt(
        True,
        "Before an answer is published, the chat model is asked (one short request, from the"
        " answer's text alone) which question the answer answers; when the embedder puts that"
        " question far from yours (or, for a follow-up, nearer an earlier question of the"
        " note than the follow-up), the reply answers something else and is not published."
        " Needs an embedding model with a measured cut-off (all-minilm) or"
        " `queries.min_own_question_cosine`.",
    )
    min_own_question_cosine: float = _opt(
        0.0,
        "The cosine below which the answer's own question is another than yours. 0: the value"
        " measured for the embedding model (all-minilm: 0.30); a model never measured is not"
        " checked.",
        min=0,
    )
    max_distance: float = _opt(
        0.0,
        "No answer is published when the nearest chunk is farther than this cosine distance"
        " from the question (nothing in the vault is about it). 0: the value measured for"
        " the embedding model (all-minilm: 0.58, nomic-embed-text: 0.31), else the one the"
        " vault calibrates from its note titles once every chunk has a vector (`askvault"
        " status` shows the cut-off in force).",
        min=0,
    )


@dataclass(frozen=True)
class Settings:
    vault: str = _opt("", "The vault folder (env ASKVAULT_VAULT, flag --vault).")
    state_dir: str = _opt(
        "", "Folder holding index files (env ASKVAULT_STATE_DIR); empty: $XDG_STATE_HOME/askvault."
    )
    ollama: OllamaSettings = field(default_factory=OllamaSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    queries: QueriesSettings = field(default_factory=QueriesSettings)

    @property
    def vault_path(self) -> Path:
        return Path(self.vault).expanduser().resolve()

    @property
    def state_path(self) -> Path:
        """The index folder of this vault: `<state_dir>/<vault-id>/`."""
        base = (
            Path(self.state_dir).expanduser() if self.state_dir else _xdg_state_home() / "askvault"
        )
        return base / vault_id(self.vault_path)

    @property
    def db_path(self) -> Path:
        return self.state_path / "index.sqlite"


def _section_types() -> dict[str, type]:
    """Each section of Settings (a field whose type is a settings dataclass) by name, in
    the order Settings declares them: the sections are listed once, as its fields."""
    hints = typing.get_type_hints(Settings)
    return {
        f.name: hints[f.name]
        for f in fields(Settings)
        if isinstance(hints[f.name], type) and dataclasses.is_dataclass(hints[f.name])
    }


SECTION_TYPES = _section_types()
SECTIONS = tuple(SECTION_TYPES)
DEFAULT_SETTINGS = Settings()

# Environment variables named in DESIGN §6, mapped to dotted keys.
ENV_ALIASES: dict[str, str] = {
    "OLLAMA_HOST": "ollama.host",
    "ASKVAULT_VAULT": "vault",
    "ASKVAULT_STATE_DIR": "state_dir",
    "ASKVAULT_EMBED_MODEL": "ollama.embed_model",
    "ASKVAULT_CHAT_MODEL": "ollama.chat_model",
}


def _xdg_state_home() -> Path:
    env = os.environ.get("XDG_STATE_HOME")
    return Path(env) if env else Path.home() / ".local" / "state"


def vault_id(vault: Path) -> str:
    """A stable folder name for a vault: readable name plus a hash of its real path."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", vault.name).strip("-") or "vault"
    digest = hashlib.sha256(str(vault).encode("utf-8")).hexdigest()[:12]
    return f"{name}-{digest}"


def user_config_file(env: Mapping[str, str]) -> Path:
    """The user's config file, whether it exists or not: `$XDG_CONFIG_HOME/askvault/config.toml`
    (`~/.config/askvault/config.toml` when XDG_CONFIG_HOME is unset)."""
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "askvault" / "config.toml"


def default_config_file(env: Mapping[str, str]) -> Path | None:
    """`ASKVAULT_CONFIG`, else `$XDG_CONFIG_HOME/askvault/config.toml` if it exists."""
    if env.get("ASKVAULT_CONFIG"):
        return Path(env["ASKVAULT_CONFIG"]).expanduser()
    candidate = user_config_file(env)
    return candidate if candidate.is_file() else None


SettingSource = Literal["file", "environment", "flag"]
ConfigChoice = Literal["--config", "ASKVAULT_CONFIG", "default", "none"]


@dataclass(frozen=True)
class SettingOrigin:
    """Where a setting's value in force comes from: the last layer that set it."""

    key: str
    value: str  # as TOML writes it
    source: SettingSource
    via: str  # the file's path, the environment variable, or the flag


@dataclass(frozen=True)
class SettingsTrace:
    """Which config file is in force, why, and where each setting not left at its
    default comes from (defaults -> file -> environment -> flags; the last one wins)."""

    file: str | None
    chosen_by: ConfigChoice
    user_file: str  # where `config-example --write` writes when given no file
    settings: tuple[SettingOrigin, ...]


def load_settings(
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge defaults, the TOML file, the environment and flags (dotted keys); validate once.

    Raises ConfigError listing every invalid value with its dotted key.
    """
    return load_traced_settings(config_file, env, flags)[0]


def load_traced_settings(
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> tuple[Settings, SettingsTrace]:
    """`load_settings`, and where each value came from (for `status` and `doctor`)."""
    env = os.environ if env is None else env
    problems: list[str] = []
    path = config_file if config_file is not None else default_config_file(env)
    chosen: ConfigChoice = (
        "--config"
        if config_file is not None
        else "ASKVAULT_CONFIG"
        if env.get("ASKVAULT_CONFIG")
        else "default"
        if path is not None
        else "none"
    )
    layers: list[tuple[SettingSource, dict[str, Any]]] = [
        ("file", _read_toml(path, problems) if path is not None else {}),
        ("environment", _read_env(env)),
        ("flag", {k: v for k, v in (flags or {}).items() if v is not None}),
    ]
    values: dict[str, Any] = {}
    origins: dict[str, tuple[SettingSource, str]] = {}
    env_names = _env_names(env)
    for source, layer in layers:
        values.update(layer)
        for key in layer:
            via = (
                str(path)
                if source == "file"
                else env_names.get(key, key)
                if source == "environment"
                else "--" + key.rsplit(".", 1)[-1].replace("_", "-")
            )
            origins[key] = (source, via)
    settings = _build(values, problems)
    if problems:
        raise ConfigError(problems)
    trace = SettingsTrace(
        file=str(path) if path is not None else None,
        chosen_by=chosen,
        user_file=str(user_config_file(env)),
        settings=tuple(
            SettingOrigin(key, _toml_value(setting_value(settings, key)), *origins[key])
            for key in sorted(origins)
            # a key set to its default (as the example file sets every key) changes nothing
            if setting_value(settings, key) != setting_value(DEFAULT_SETTINGS, key)
        ),
    )
    return settings, trace


def setting_value(settings: Settings, key: str) -> Any:
    """The value in force of a dotted key (`ollama.embed_model`, `vault`)."""
    value: Any = settings
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _read_toml(path: Path, problems: list[str]) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        problems.append(f"config: file not found: {path}")
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problems.append(f"config: cannot read {path}: {exc}")
        return {}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key in SECTIONS and isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def _read_env(env: Mapping[str, str]) -> dict[str, Any]:
    """ASKVAULT_<KEY> and ASKVAULT_<SECTION>__<KEY>, plus the aliases of DESIGN §6."""
    out: dict[str, Any] = {}
    for name, value in env.items():
        if name in ENV_ALIASES:
            out[ENV_ALIASES[name]] = value
        elif name.startswith("ASKVAULT_") and name not in ("ASKVAULT_CONFIG",):
            rest = name[len("ASKVAULT_") :].lower()
            key = rest.replace("__", ".", 1) if "__" in rest else rest
            # Unrelated ASKVAULT_* variables (a wrapper script's, say) are not ours to reject.
            if key in known_keys():
                out[key] = value
    return out


def _env_names(env: Mapping[str, str]) -> dict[str, str]:
    """Dotted key -> the environment variable that sets it (the last one read wins)."""
    out: dict[str, str] = {}
    for name in env:
        if name in ENV_ALIASES:
            out[ENV_ALIASES[name]] = name
        elif name.startswith("ASKVAULT_") and name != "ASKVAULT_CONFIG":
            rest = name[len("ASKVAULT_") :].lower()
            out[rest.replace("__", ".", 1) if "__" in rest else rest] = name
    return out


def known_keys() -> set[str]:
    """Every dotted settings key."""
    keys = {f"{s}.{f.name}" for s in SECTIONS for f in fields(section_type(s))}
    return keys | {f.name for f in fields(Settings) if f.name not in SECTIONS}


def _build(values: dict[str, Any], problems: list[str]) -> Settings:
    known = known_keys()
    for key in sorted(values):
        if key not in known:
            problems.append(f"{key}: unknown setting")
    top = {
        f.name: _coerce(f.name, values[f.name], Settings, f, problems)
        for f in fields(Settings)
        if f.name not in SECTIONS and f.name in values
    }
    sections = {}
    for section in SECTIONS:
        cls = section_type(section)
        kwargs = {
            f.name: _coerce(f"{section}.{f.name}", values[f"{section}.{f.name}"], cls, f, problems)
            for f in fields(cls)
            if f"{section}.{f.name}" in values
        }
        sections[section] = replace(cls(), **{k: v for k, v in kwargs.items() if v is not None})
    return Settings(**{k: v for k, v in top.items() if v is not None}, **sections)


def section_type(section: str) -> type:
    """The dataclass of a section of Settings (`ollama` -> OllamaSettings)."""
    return SECTION_TYPES[section]


@functools.cache
def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def setting_choices(cls: type, name: str) -> tuple[str, ...]:
    """The words a setting of `cls` may be (its Literal type's), or () for any value."""
    hint = _field_types(cls)[name]
    return typing.get_args(hint) if typing.get_origin(hint) is Literal else ()


def setting_kind(cls: type, name: str) -> str:
    """How a setting's value is read: bool, int, float, str, list[str] (a Literal is a str)."""
    hint = _field_types(cls)[name]
    origin = typing.get_origin(hint)
    if origin is Literal:
        return "str"
    return hint.__name__ if origin is None else str(hint)  # list[str]


def _coerce(key: str, raw: Any, cls: type, f: Any, problems: list[str]) -> Any:
    """Convert a TOML/env/flag value to the field's type and check it; None if invalid."""
    try:
        value = _convert(setting_kind(cls, f.name), raw)
    except (TypeError, ValueError) as exc:
        problems.append(f"{key}: {exc}")
        return None
    meta = f.metadata
    if "min" in meta and value < meta["min"]:
        problems.append(f"{key}: must be >= {meta['min']} (got {value!r})")
        return None
    if "min_excl" in meta and value <= meta["min_excl"]:
        problems.append(f"{key}: must be > {meta['min_excl']} (got {value!r})")
        return None
    choices = setting_choices(cls, f.name)
    if choices and value not in choices:
        problems.append(f"{key}: must be one of {', '.join(choices)} (got {value!r})")
        return None
    return value


def _to_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(raw, str) and raw.strip().lower() in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"must be true or false (got {raw!r})")


def _to_int(raw: Any) -> int:
    if isinstance(raw, bool) or isinstance(raw, float):
        raise ValueError(f"must be an integer (got {raw!r})")
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"must be an integer (got {raw!r})") from None


def _to_float(raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError(f"must be a number (got {raw!r})")
    try:
        return float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"must be a number (got {raw!r})") from None


def _to_str_list(raw: Any) -> list[str]:
    if isinstance(raw, str):
        return [part.strip() for part in raw.split(",") if part.strip()]
    if isinstance(raw, (list, tuple)) and all(isinstance(x, str) for x in raw):
        return list(raw)
    raise ValueError(f"must be a list of strings (got {raw!r})")


def _to_str(raw: Any) -> str:
    if isinstance(raw, (str, Path)):
        return str(raw)
    raise ValueError(f"must be a string (got {raw!r})")


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "bool": _to_bool,
    "int": _to_int,
    "float": _to_float,
    "list[str]": _to_str_list,
    "str": _to_str,
}


def _convert(kind: str, raw: Any) -> Any:
    converter = _CONVERTERS.get(kind)
    if converter is None:
        raise TypeError(f"unsupported setting type {kind}")
    return converter(raw)


def render_example_toml() -> str:
    """The commented example config, generated from the Settings fields."""
    lines = [
        "# askvault configuration: every key with its default.",
        "# Generated from daemon/askvault/settings.py by `askvault config-example`;",
        "# a test fails when it drifts. Order: defaults -> this file -> ASKVAULT_* env -> flags.",
        "",
    ]
    for f in fields(Settings):
        if f.name in SECTIONS:
            continue
        lines += [*_comment(Settings, f), f"{f.name} = {_toml_value(_default(f))}", ""]
    for section in SECTIONS:
        lines.append(f"[{section}]")
        cls = section_type(section)
        for f in fields(cls):
            lines += [*_comment(cls, f), f"{f.name} = {_toml_value(_default(f))}"]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _comment(cls: type, f: Any) -> list[str]:
    """A setting's comment lines in the example file: its help, then its words if any."""
    choices = setting_choices(cls, f.name)
    return [f"# {f.metadata['help']}"] + ([f"# One of: {', '.join(choices)}."] if choices else [])


def _default(f: Any) -> Any:
    return f.default_factory() if f.default is MISSING else f.default


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
