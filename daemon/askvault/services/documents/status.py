"""The `askvault status --json` document (DESIGN §6), also the MCP `status` tool's result.

Built by services/admin/status.py, which gathers its parts from the index, the inbox, the lock
and Ollama."""

from __future__ import annotations

from askvault.adapters.lockfile import LockHolder
from askvault.core.abstention import CutoffSource
from askvault.core.schema import document, prop
from askvault.records import InboxState, Skipped
from askvault.settings import ConfigChoice, SettingSource, SettingsTrace


@document
class EmbedFailure:
    """A chunk text the embedding model refused or embedded unusably (retried later)."""

    file: str = prop("A note holding the text.")
    reason: str
    attempts: int


@document
class EmbeddingState:
    """The embedding state of the configured model."""

    model: str = prop("The configured embedding model.")
    fingerprint: str | None = prop("Its fingerprint in the index, when it has vectors.")
    index_model: str | None = prop("The model whose vectors search uses now.")
    building: str | None = prop("A model being embedded while the active one serves.")
    waiting: str | None = prop("Why embedding waits (e.g. Ollama unreachable), else null.")
    rate_per_s: float | None = prop(
        "Texts the daemon embeds per second in the drain under way, else null."
    )
    eta_s: float | None = prop(
        "About how long until every pending chunk has a vector, at that rate (s), else null."
    )


@document
class DistanceCutoff:
    """The distance cut-off answers use: beyond it from every chunk, no answer is published."""

    value: float | None = prop("The cosine distance; null when no cut-off is in force.")
    source: CutoffSource = prop(
        "setting (queries.max_distance), measured (for the embedding model), calibrated"
        " (from the vault's note titles) or none."
    )
    detail: str = prop("Where it comes from, or why there is none, in words.")


@document
class ScanState:
    """A reconcile of the daemon under way (at start-up it reads every note once)."""

    reason: str = prop("Why it runs: start-up, periodic, SIGHUP, events lost, ...")
    done: int = prop("Notes of the vault it has been through.")
    total: int = prop("Notes of the vault.")
    seconds: float = prop("Since it began (s).")


@document
class StaleAnswer:
    """An answer whose cited pages changed since it was written."""

    path: str
    marked: bool = prop("False when the user edited the note, so askvault left it as it is.")


@document
class OllamaState:
    """Ollama as the current settings reach it."""

    url: str = prop("The Ollama host in force.")
    reachable: bool | None = prop("Null when it was not probed.")
    refused: bool | None = prop("The configuration refuses this host (not loopback).")
    embed_model: str
    chat_model: str
    error: str | None = prop("Why it is not reachable.")
    hint: str | None = prop("What to do about it.")


@document
class ConfigSetting:
    """A setting not left at its default, and where its value in force comes from."""

    key: str = prop("Its dotted key (`ollama.embed_model`).")
    value: str = prop("Its value in force, as TOML writes it.")
    source: SettingSource = prop(
        "file, environment or flag: the last of defaults, file, environment, flags wins."
    )
    via: str = prop("The file's path, the environment variable, or the flag.")


@document
class ConfigInForce:
    """Which config file is read, and the settings that do not keep their default."""

    file: str | None = prop("The config file read, or null when none is.")
    chosen_by: ConfigChoice = prop(
        "Why that file: --config, ASKVAULT_CONFIG, default (the user's file exists), or none."
    )
    user_file: str = prop(
        "The file askvault reads by default, $XDG_CONFIG_HOME/askvault/config.toml;"
        " `askvault config-example --write` writes it."
    )
    settings: tuple[ConfigSetting, ...]

    @classmethod
    def of(cls, trace: SettingsTrace) -> ConfigInForce:
        return cls(
            trace.file,
            trace.chosen_by,
            trace.user_file,
            tuple(ConfigSetting(o.key, o.value, o.source, o.via) for o in trace.settings),
        )


@document
class NoteDays:
    """How many notes have a day (for questions about a period), by where it came from."""

    daily: int = prop("From a daily note's name (the Daily notes format, under its folder).")
    name: int = prop("From a date at the start of the file name (2023-05-20 ...).")
    property: int = prop("From a date property (index.date_properties: date, created).")
    mtime: int = prop("From the file's modification time (no other date found).")
    undated: int = prop("Not dated yet (the next reconcile dates them).")


@document
class StatusDocument:
    """`askvault status --json`: what the index holds, what waits, who is up."""

    vault: str = prop("The vault's folder.")
    index: str = prop("The index file.")
    notes: int
    chunks: int
    embedded_chunks: int = prop("Chunks with a vector of the model search uses.")
    pending_embeddings: int = prop("Chunks waiting for a vector of the configured model.")
    skipped: tuple[Skipped, ...] = prop("Vault files the index leaves out, and why.")
    note_days: NoteDays = prop("Where the notes' days come from (questions about a period).")
    embed_failures: tuple[EmbedFailure, ...] = prop("Texts the model refused (the first 20).")
    last_change_indexed_at: str | None = prop("ISO 8601 with the local offset.")
    embedding: EmbeddingState
    distance_cutoff: DistanceCutoff = prop(
        "The distance cut-off answers use and where it comes from."
    )
    stale_answers: tuple[StaleAnswer, ...]
    vault_unavailable: str | None = prop(
        "Why the last reconcile refused the vault (an empty mount), else null."
    )
    ollama: OllamaState
    questions: dict[InboxState, tuple[str, ...]] = prop("The inbox's question notes by state.")
    queue: int = prop("Questions askvault will answer without help (new, answering, waiting).")
    follow_ups: tuple[str, ...] = prop(
        "Answer notes with a follow-up askvault has not answered yet (a `## Follow-up` under"
        " a finished answer), by path."
    )
    daemon: int | None = prop("The pid of `askvault run`, if it runs.")
    writer: LockHolder | None = prop(
        "Who holds the vault's lock: its pid and command (`run` or `index`), either null "
        "when unknown; null when nobody does."
    )
    scan: ScanState | None = prop("The daemon's reconcile under way, else null.")
    config: ConfigInForce | None = prop(
        "The config file in force and where each setting that is not at its default comes"
        " from; null when the caller did not say."
    )
