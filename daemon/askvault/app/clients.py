"""The composition root: the one place that builds the Ollama clients from Settings.

The CLI's commands, the daemon and the MCP server hand an `OllamaClients` to the services
they call; the services see only the `records.ModelClients`, `Embedder` and `Generator`
protocols and never build a client themselves (tests/repo/test_architecture.py checks
that this module is the only one that imports the client classes).

The `ollama` client (with httpx and pydantic, ~0.2 s) is imported when the first client
is built, not with this module: `askvault --help`, `status` and a words-only search never
load it, and a search's query embedder does without it (adapters/ollama_embed.py's
HttpEmbedder: the same calls, bodies and errors over the standard library; issue 22).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from askvault.adapters.ollama_embed import HttpEmbedder
from askvault.adapters.ollama_http import RefusedEmbedder, check_host_allowed
from askvault.errors import RemoteHostRefused
from askvault.records import Embedder, Fingerprint, Generator
from askvault.settings import Settings

if TYPE_CHECKING:
    from askvault.adapters.ollama import OllamaEmbedder


class OllamaClients:
    """Builds the clients of one configuration (implements `records.ModelClients`)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def embedder(self) -> Embedder:
        """The embedder for indexing and answers."""
        return self._embedder(self.settings.ollama.timeout_s)

    def query_embedder(self) -> Embedder:
        """The embedder of search queries: a slow or hung server costs a search at most
        `search.embed_timeout_s`, then it answers from words and says why. A refused host
        gives a `RefusedEmbedder`, so a search says which setting allows it.

        Over plain http (every local Ollama) it is an `HttpEmbedder`, which imports
        nothing but the standard library: the official client and pydantic cost a whole
        `askvault search` ~0.2 s more than the search itself (issue 22 item 6). An https
        host keeps the official client (its certificate store), built on first use."""
        ollama = self.settings.ollama
        try:
            url = check_host_allowed(ollama.host, ollama.allow_remote_ollama)
        except RemoteHostRefused as exc:
            return RefusedEmbedder(exc)
        timeout_s = min(ollama.timeout_s, self.settings.search.embed_timeout_s)
        if url.startswith("http://"):
            return HttpEmbedder(
                url,
                ollama.embed_model,
                timeout_s=timeout_s,
                batch_size=ollama.embed_batch_size,
                max_input_tokens=ollama.embed_max_tokens,
                allow_remote=ollama.allow_remote_ollama,
            )
        return _LazyEmbedder(self, timeout_s)

    def generator(self) -> Generator:
        """The chat client: `reply_silence_s` bounds each wait for the next piece of a reply."""
        from askvault.adapters.ollama import OllamaGenerator

        ollama = self.settings.ollama
        return OllamaGenerator(
            ollama.host,
            timeout_s=ollama.timeout_s,
            silence_s=ollama.reply_silence_s,
            allow_remote=ollama.allow_remote_ollama,
            options={"temperature": ollama.temperature, "num_predict": ollama.num_predict},
        )

    def _embedder(self, timeout_s: float) -> OllamaEmbedder:
        from askvault.adapters.ollama import OllamaEmbedder

        ollama = self.settings.ollama
        return OllamaEmbedder(
            ollama.host,
            ollama.embed_model,
            timeout_s=timeout_s,
            batch_size=ollama.embed_batch_size,
            max_input_tokens=ollama.embed_max_tokens,
            allow_remote=ollama.allow_remote_ollama,
        )


class _LazyEmbedder:
    """The query embedder, built on first use: a search that needs no query vector (words
    mode, an index without vectors) never imports the `ollama` client (issue 11)."""

    def __init__(self, clients: OllamaClients, timeout_s: float) -> None:
        self._clients = clients
        self._timeout_s = timeout_s
        self._embedder: OllamaEmbedder | None = None

    def _real(self) -> OllamaEmbedder:
        if self._embedder is None:
            self._embedder = self._clients._embedder(self._timeout_s)
        return self._embedder

    def fingerprint(self) -> Fingerprint:
        return self._real().fingerprint()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._real().embed_documents(texts)

    def embed_query(self, text: str, model: str | None = None) -> list[float]:
        return self._real().embed_query(text, model)

    def close(self) -> None:
        if self._embedder is not None:
            self._embedder.close()
