"""Settings for tests: a vault, a private state dir and the fake Ollama's URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from askvault.settings import Settings, load_settings
from support.fake_ollama import FAKE_EMBED_MODEL


def settings_for(vault: Path, state: Path, ollama_url: str, **flags: Any) -> Settings:
    """Settings that never read the user's config or environment."""
    env = {
        "ASKVAULT_VAULT": str(vault),
        "ASKVAULT_STATE_DIR": str(state),
        "OLLAMA_HOST": ollama_url,
        "ASKVAULT_EMBED_MODEL": FAKE_EMBED_MODEL,
        "ASKVAULT_OLLAMA__TIMEOUT_S": "5",
    }
    return load_settings(None, env=env, flags=flags)


def cli_env(vault: Path, state: Path, ollama_url: str, **extra: str) -> dict[str, str]:
    """Environment for running the `askvault` command against a test vault."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKVAULT_", "OLLAMA_"))}
    env.update(
        {
            "ASKVAULT_VAULT": str(vault),
            "ASKVAULT_STATE_DIR": str(state),
            "OLLAMA_HOST": ollama_url,
            "ASKVAULT_EMBED_MODEL": FAKE_EMBED_MODEL,
            "ASKVAULT_OLLAMA__TIMEOUT_S": "5",
            "XDG_CONFIG_HOME": str(state / "xdg-config"),
        }
    )
    env.update(extra)
    return env
