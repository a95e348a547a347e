"""What an answer uses: the index's connection and the two model clients, and who closes them.

Built by the caller that owns them (a command opens its own for one answer; the warm
session of the MCP server lends the ones it keeps open for many) and handed down, so no
service takes the same resources two ways (optional parameters and a flag saying which).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from askvault.adapters.db import Connection, connect
from askvault.errors import OllamaError
from askvault.records import Embedder, Generator, ModelClients
from askvault.settings import Settings


@dataclass(frozen=True)
class AnswerResources:
    """The connection, the chat client, and the embedder (None when it could not be made:
    the answer then comes from words), lent for the answers asked with them."""

    conn: Connection
    generator: Generator
    embedder: Embedder | None


@contextlib.contextmanager
def opened(settings: Settings, clients: ModelClients) -> Iterator[AnswerResources]:
    """Resources made for one command, and closed when it ends (what was made, even when
    a later part failed). An embedder the configuration refuses is left out, as a search
    leaves out the vectors: the chat client then says why Ollama cannot be used."""
    with contextlib.ExitStack() as stack:
        conn = connect(settings.db_path)
        stack.callback(conn.close)
        generator = clients.generator()
        stack.callback(generator.close)
        embedder: Embedder | None = None
        with contextlib.suppress(OllamaError):
            embedder = clients.embedder()
            stack.callback(embedder.close)
        yield AnswerResources(conn, generator, embedder)
