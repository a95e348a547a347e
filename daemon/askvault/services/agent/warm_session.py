"""One vault kept open for many calls: the index connection and the Ollama clients.

`askvault mcp` serves agents through this: each call is the same service function the
CLI command calls (search, build_context, ask_question, collect_status) and returns the
same typed document as that command's `--json` (services/documents/), without paying for
start-up, imports or a new connection each time. Calls may come from several threads: the shared search
connection is used by one call at a time, and `ask` (seconds of generation) runs on its
own connection so that searches are not held up behind it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from askvault.adapters.db import Connection, connect
from askvault.errors import AskvaultError, OllamaError
from askvault.records import (
    Cancellation,
    Embedder,
    Generator,
    ModelClients,
    PeriodRequest,
    QuestionOptions,
    SearchFilters,
)
from askvault.services.admin.status import collect_status
from askvault.services.agent.note_view import read_vault_note
from askvault.services.answer import read_thread
from askvault.services.answer.resources import AnswerResources
from askvault.services.documents.answer import AnswerDocument, answer_document
from askvault.services.documents.context import ContextDocument, context_document
from askvault.services.documents.note import NoteDocument
from askvault.services.documents.search import SearchDocument, search_document
from askvault.services.documents.status import StatusDocument
from askvault.services.inbox.ask import ask_follow_up, ask_question
from askvault.services.inbox.question_options import clean_tags, vault_folders
from askvault.services.retrieval.context import DEFAULT_BUDGET_TOKENS, build_context
from askvault.services.retrieval.search import open_search, search
from askvault.settings import Settings, SettingsTrace


class WarmSession:
    """The vault of `settings`, opened on first use and kept open until `close()`; its
    clients come from `clients`.

    The index may not exist yet when the session starts (the daemon is still building
    it): each call then fails with the CLI's "no index" error, and a later call opens it."""

    def __init__(
        self, settings: Settings, clients: ModelClients, *, config: SettingsTrace | None = None
    ) -> None:
        self.settings = settings
        self.clients = clients
        self.config = config
        self._search_lock = threading.Lock()
        self._ask_lock = threading.Lock()
        self._stack = contextlib.ExitStack()
        self._conn: Connection | None = None
        self._embedder: Embedder | None = None
        self._generator: Generator | None = None
        self._ask_embedder: Embedder | None = None

    def open(self) -> None:
        """Open the index and the query embedder now (a no-op when open); raises StoreError
        when the vault has no index yet."""
        with self._search_lock:
            self._open_locked()

    def _open_locked(self) -> tuple[Connection, Embedder | None]:
        if self._conn is None:
            self._conn, self._embedder = self._stack.enter_context(
                open_search(self.settings, self.clients)
            )
        return self._conn, self._embedder

    def close(self) -> None:
        """Close the connection and every Ollama client."""
        with self._search_lock, self._ask_lock:
            self._stack.close()
            self._conn = self._embedder = None
            for client in (self._generator, self._ask_embedder):
                if client is not None:
                    client.close()
            self._generator = self._ask_embedder = None

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        folders: Sequence[str] = (),
        tags: Sequence[str] = (),
        since: str | None = None,
        until: str | None = None,
        explain: bool = False,
    ) -> SearchDocument:
        """The `askvault search --json` document (`since`/`until` as `--since`/`--until`,
        `--explain`'s with `explain`)."""
        filters = self._filters(folders, tags)
        with self._search_lock:
            conn, embedder = self._open_locked()
            result = search(
                conn,
                self.settings,
                query,
                limit=limit,
                embedder=embedder,
                filters=filters,
                period=PeriodRequest(since=since, until=until),
            )
        return search_document(result, explain=explain)

    def context(
        self,
        prompt: str,
        *,
        budget: int = DEFAULT_BUDGET_TOKENS,
        include_sources: bool = False,
        folders: Sequence[str] = (),
        tags: Sequence[str] = (),
        since: str | None = None,
        until: str | None = None,
    ) -> ContextDocument:
        """The `askvault context --json` envelope (`since`/`until` as in `search`)."""
        filters = self._filters(folders, tags)
        with self._search_lock:
            conn, embedder = self._open_locked()
            pack = build_context(
                conn,
                self.settings,
                prompt,
                budget_tokens=budget,
                embedder=embedder,
                filters=filters,
                include_sources=include_sources,
                period=PeriodRequest(since=since, until=until),
            )
        return context_document(pack)

    def read_note(
        self,
        target: str,
        *,
        heading: str | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
    ) -> NoteDocument:
        """One note, confined to the vault (services/agent/note_view.py)."""
        with self._search_lock:
            conn: Connection | None = None
            with contextlib.suppress(AskvaultError):
                conn, _ = self._open_locked()  # only a wikilink needs the index
            return read_vault_note(
                self.settings,
                conn,
                target,
                heading=heading,
                start_line=start_line,
                end_line=end_line,
            )

    def ask(
        self,
        question: str,
        *,
        folders: Sequence[str] = (),
        save: bool = False,
        follow_up: str | None = None,
        cancelled: Cancellation | None = None,
    ) -> AnswerDocument:
        """The `askvault ask --json` document. With `save`, the answer note is written under
        queries/answers/ (never over another file); nothing else in the vault is written,
        so the log note is left alone. With `follow_up` (an answer note), `question` is
        answered as its follow-up, with the options it keeps (`folders` overriding them),
        and with `save` the turn is written into that note as the inbox writes one
        (`ask_follow_up`) instead of a new note. Raises AnswerCancelled when `cancelled`
        is set first; the reply being generated then is closed at once (Ollama stops)."""
        options = QuestionOptions(folders=self._folders(folders))
        cancelled = cancelled if cancelled is not None else Cancellation()
        with self._ask_lock:
            if not self.settings.db_path.exists():
                self.open()  # the CLI's "no index" error
            if self._generator is None:
                self._generator = self.clients.generator()
                with contextlib.suppress(OllamaError):
                    self._ask_embedder = self.clients.embedder()
            conn = connect(self.settings.db_path)
            # Lent: the clients stay open for the next call, the connection is closed here.
            resources = AnswerResources(
                conn, _StoppedOnCancel(self._generator, cancelled), self._ask_embedder
            )
            try:
                if follow_up is not None and save:
                    outcome = ask_follow_up(
                        self.settings,
                        follow_up,
                        question,
                        resources=resources,
                        options=options,
                        should_stop=cancelled.is_set,
                    )
                else:
                    outcome = ask_question(
                        self.settings,
                        resources,
                        question,
                        save=save,
                        options=options,
                        log=False,
                        should_stop=cancelled.is_set,
                        thread=read_thread(self.settings, follow_up) if follow_up else None,
                    )
            finally:
                conn.close()
        return answer_document(
            outcome.result, saved=outcome.saved, logged=outcome.logged, turn=outcome.turn
        )

    def status(self) -> StatusDocument:
        """The `askvault status --json` document."""
        return collect_status(self.settings, config=self.config)

    def _folders(self, folders: Sequence[str]) -> tuple[str, ...]:
        """Folders of the vault, checked as a question note's are; raises AskvaultError
        naming each that is outside the vault or no folder."""
        errors: list[str] = []
        kept = vault_folders(folders, self.settings.vault_path, "folders", errors)
        if errors:
            raise AskvaultError("; ".join(errors), "pass folders relative to the vault root")
        return kept

    def _filters(self, folders: Sequence[str], tags: Sequence[str]) -> SearchFilters | None:
        """Notes under one of `folders` (if any) with one of `tags` (if any)."""
        if not folders and not tags:
            return None
        kept = clean_tags(tags)
        if len(kept) != len(tags):
            raise AskvaultError(
                "tags: " + ", ".join(repr(t) for t in tags if not clean_tags([t])) + " is no tag",
                "pass tag names, with or without #",
            )
        return SearchFilters(folders=self._folders(folders), tags=kept)


class _StoppedOnCancel:
    """The session's chat client for one call (a `Generator`): cancelling the call closes
    its reply at once, even before the first piece, when no check between pieces could."""

    def __init__(self, generator: Generator, cancelled: Cancellation) -> None:
        self.generator = generator
        self.cancelled = cancelled

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        model: str,
        num_ctx: int,
        format: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Iterator[str]:
        pieces = self.generator.stream(
            messages, model=model, num_ctx=num_ctx, format=format, options=options
        )
        return self._until_cancelled(pieces)

    def _until_cancelled(self, pieces: Iterator[str]) -> Iterator[str]:
        with self.cancelled.on_cancel(self.generator.abort):
            yield from pieces

    def abort(self) -> None:
        self.generator.abort()

    def close(self) -> None:
        """The session's client: closed with the session, not per call."""
