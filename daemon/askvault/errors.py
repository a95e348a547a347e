"""The small error hierarchy. Every message says what happened; `hint` says what to do next."""

from __future__ import annotations


class AskvaultError(Exception):
    """Base of every error askvault raises on purpose."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class ConfigError(AskvaultError):
    """Invalid settings; `problems` lists every `dotted.key: reason` found."""

    def __init__(self, problems: list[str], hint: str = "") -> None:
        self.problems = list(problems)
        super().__init__(
            "invalid configuration: " + "; ".join(self.problems),
            hint
            or "fix the values above (`askvault config-example` prints every key with its default and meaning)",
        )


class VaultError(AskvaultError):
    """The vault is missing, unreadable, or a path would leave it."""


class PathOutsideVault(VaultError):
    """A path resolves outside the vault (via `..`, an absolute path or a symlink)."""


class NoteUnreadable(VaultError):
    """A note could not be read (permissions, vanished, not a regular file)."""


class StoreError(AskvaultError):
    """The index database is unusable (corrupt, locked too long, disk full)."""


class IndexBusy(StoreError):
    """Another writer held the index longer than the busy timeout: a delay, not a failure.

    The daemon retries with backoff; a one-shot command reports it and exits 1."""


class DiskFull(StoreError):
    """The disk under the index (or a file askvault writes) is full: retried once space returns."""


class VaultUnavailable(VaultError):
    """The vault root is missing, empty or on another device (an unmounted drive or share):
    a reconcile would delete every note, so it is refused and retried."""


class OllamaError(AskvaultError):
    """Base of the Ollama failures; each becomes a clear state, never a crash."""


class OllamaUnavailable(OllamaError):
    """Ollama did not answer (down, refused, timed out, died mid-stream, 5xx)."""


class InputRefused(OllamaUnavailable):
    """Ollama answered an embedding request with an error (4xx other than 404, or 500): one
    of its inputs may be one the model cannot process, so the caller splits the batch to
    find it; when every input fails alone and a probe fails too, Ollama itself is failing."""


class ModelMissing(OllamaError):
    """Ollama answered 404: the model is not pulled."""

    def __init__(self, model: str, host: str = "") -> None:
        self.model = model
        super().__init__(
            f"model {model!r} is not available on Ollama{' at ' + host if host else ''}",
            f"run `ollama pull {model}`",
        )


class RemoteHostRefused(OllamaError):
    """OLLAMA_HOST is not a loopback address and `allow_remote_ollama` is off."""


class VaultLocked(AskvaultError):
    """Another askvault process (`run` or `index`) holds the vault's single-writer lock."""


class AnswerCancelled(Exception):
    """The caller asked to stop (shutdown, or the question changed) while answering.

    Not an AskvaultError: nothing went wrong, and nothing was written."""
