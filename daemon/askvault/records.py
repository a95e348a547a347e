"""Plain value types shared by every layer.

Records carry data between stages; they hold no behaviour that touches a file,
the database or the network. Paths inside records are vault-relative and
`/`-separated (POSIX style) whatever the platform.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

# The states values pass through, each a closed set: mypy checks every spelled value.
# What an answer came to (services/answer's result; `queries.*` answer notes).
AnswerOutcome = Literal["answered", "no-answer", "waiting", "failed"]
# An answer note's `status:`: an outcome, or still being written, or cited pages changed.
AnswerStatus = Literal[AnswerOutcome, "answering", "stale"]
# A question in the inbox: being answered, waiting for Ollama, failed, or answered and
# still to be moved to the archive (`archiving`), then to be logged (`logging`).
QuestionStatus = Literal["answering", "waiting", "failed", "archiving", "logging"]
# A question note in the inbox as `askvault status` reports it.
InboxState = Literal["new", "answering", "waiting", "filing", "draft", "empty", "failed"]
# An embedding model's vectors: serving searches, being built beside the active one
# (a model change), or replaced (its bit table dropped, its cached vectors kept).
FingerprintState = Literal["active", "building", "retired"]
# A wikilink of an answer: it names a page (`resolved`), a review candidate in queries/
# (`pending`), or nothing that can be read (`broken`).
CitationState = Literal["resolved", "pending", "broken"]
# How well a text backs a sentence.
SupportVerdict = Literal["supported", "weak", "unsupported"]


@dataclass(frozen=True)
class Heading:
    """A Markdown ATX heading (`## Text`) of a note; `line` is 1-based in the file."""

    level: int
    text: str
    line: int


@dataclass(frozen=True)
class Link:
    """One wikilink or embed as written in a note or an answer.

    `target` is the page part (`folder/A` of `[[folder/A#H|label]]`); it is empty
    for a same-note link such as `[[#Heading]]`. `heading` and `block` are the
    parts after `#` and `#^`. `line` is 1-based in the text it was found in.
    """

    target: str
    heading: str | None = None
    block: str | None = None
    label: str | None = None
    embed: bool = False
    line: int = 0
    raw: str = ""


@dataclass(frozen=True)
class ParsedNote:
    """The result of parsing one note: metadata, body, structure and links."""

    path: str
    title: str
    frontmatter: dict[str, Any]
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    type: str | None
    sources: tuple[str, ...]
    related: tuple[str, ...]
    body: str
    body_start_line: int
    headings: tuple[Heading, ...]
    links: tuple[Link, ...]
    block_ids: tuple[str, ...]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Chunk:
    """A piece of a note's body, the unit of retrieval and of embedding.

    `text_hash` (sha256 hex of `text`) identifies the chunk: equal text means an
    equal hash wherever it appears, so a vector is computed once per text.
    `heading_path` is the chain of headings above the chunk; `start_line` and
    `end_line` are 1-based, inclusive, in the note file.
    """

    text: str
    text_hash: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    position: int


@dataclass(frozen=True)
class FileStamp:
    """What `stat` says about a vault file; cheap change detection."""

    path: str
    size: int
    mtime_ns: int
    inode: int


@dataclass(frozen=True)
class Skipped:
    """A vault file that is not indexed, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class NoteFile:
    """A note read from disk: decoded text plus the hash of its bytes."""

    stamp: FileStamp
    text: str
    content_hash: str
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fingerprint:
    """Identifies an embedding space: vectors of different fingerprints never mix."""

    model: str
    digest: str
    dimension: int

    @property
    def key(self) -> str:
        return f"{self.model}@{self.digest[:12]}/{self.dimension}"


@dataclass(frozen=True)
class IndexedChunk:
    """A chunk as the index holds it, with what retrieval needs of its note: its names
    (title, aliases), metadata, and the stamps its freshness is judged by. Search fetches
    each once; its hits, the evidence pack and the answer all read these same records."""

    chunk_id: int
    path: str
    title: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    type: str | None
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    sources: tuple[str, ...]
    size: int
    mtime_ns: int
    inode: int
    content_hash: str

    @property
    def heading(self) -> str | None:
        """The heading the chunk is under (the last of its heading path)."""
        return self.heading_path[-1] if self.heading_path else None


@dataclass(frozen=True)
class Hit:
    """One search result: an indexed chunk (a page's best one, unless search was asked for
    every chunk) with its score and the points each channel gave it."""

    chunk: IndexedChunk
    score: float
    matched: tuple[tuple[str, float], ...] = field(default=())

    @property
    def chunk_id(self) -> int:
        return self.chunk.chunk_id

    @property
    def note_path(self) -> str:
        return self.chunk.path

    @property
    def title(self) -> str:
        return self.chunk.title

    @property
    def heading(self) -> str | None:
        return self.chunk.heading

    @property
    def lines(self) -> tuple[int, int]:
        return (self.chunk.start_line, self.chunk.end_line)

    @property
    def text(self) -> str:
        return self.chunk.text

    @property
    def type(self) -> str | None:
        return self.chunk.type


class Embedder(Protocol):
    """Turns texts into vectors; the Ollama adapter is the real one."""

    def fingerprint(self) -> Fingerprint: ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str, model: str | None = None) -> list[float]:
        """The vector of a search query. `model`: the model of the vectors it is compared
        with, when that is not this client's own (while a new model's vectors are built,
        searches still use the old model's, so the query must be the old model's too)."""
        ...

    def close(self) -> None:
        """Release the connection pool; called once by whoever asked for the client."""


class Generator(Protocol):
    """Streams a chat reply as text pieces; the Ollama adapter is the real one.

    `format` is Ollama's: a JSON schema the reply must follow (grammar-constrained);
    `options` override the client's chat options for this request (e.g. `num_predict`)."""

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        model: str,
        num_ctx: int,
        format: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Iterator[str]: ...

    def abort(self) -> None:
        """Stop the replies being streamed, from any thread: their connections are closed
        (so the server stops generating) and each such stream raises OllamaUnavailable.
        A stream asked for but not started yet is stopped too."""

    def close(self) -> None:
        """Release the connection pool; called once by whoever asked for the client."""


class Cancellation(threading.Event):
    """A request to stop a call, set once from any thread (an MCP client's cancel).

    Besides `is_set()` and `wait()`, `on_cancel(callback)` runs `callback` the moment it is
    set (at once if it already is) while the block lasts: a wait no check between steps
    would end, such as a reply the model has not started, is cut instead of polled."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []
        self._callbacks_lock = threading.Lock()

    def set(self) -> None:
        with self._callbacks_lock:
            if self.is_set():
                return
            super().set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    @contextlib.contextmanager
    def on_cancel(self, callback: Callable[[], None]) -> Iterator[None]:
        """Call `callback` when this is set during the block (or now, if it already is)."""
        with self._callbacks_lock:
            self._callbacks.append(callback)
            already = self.is_set()
        if already:
            callback()
        try:
            yield
        finally:
            with self._callbacks_lock:
                self._callbacks.remove(callback)


class ModelClients(Protocol):
    """Makes the model clients a service needs. The composition root (app/clients.py)
    builds the real ones from Settings; a service never builds one itself. Each call makes
    a new client, which the caller closes. Raises OllamaError (e.g. RemoteHostRefused)
    when the configuration refuses the host."""

    def embedder(self) -> Embedder:
        """The embedder for indexing and answers (`ollama.timeout_s`)."""
        ...

    def query_embedder(self) -> Embedder:
        """The embedder of search queries: waits at most `search.embed_timeout_s`, costs
        nothing until its first call, and never raises for a refused host (its calls do)."""
        ...

    def generator(self) -> Generator:
        """The chat client (timeouts on silence, the chat options)."""
        ...


@dataclass(frozen=True)
class QuestionOptions:
    """What a question note's frontmatter (or the `ask` flags) narrow the answer to."""

    folders: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    max_sources: int | None = None
    model: str | None = None
    language: str | None = None
    # `ask --since/--until` (a date, `2024-01`, `2023` or words); else the question's words.
    since: str | None = None
    until: str | None = None


@dataclass(frozen=True)
class PeriodRequest:
    """How a search finds its period: explicit bounds (`--since`/`--until`: a date,
    `2024-01`, `2023` or words), else the words of `words` (the first of them that names
    a period; empty: the query itself) unless `from_words` is False; `now` anchors
    relative words (None: the clock's time, local). A follow-up's search reads its
    period from the follow-up as typed, then from its first question
    (core.followup.period_texts), never from its standalone question: carried terms, out
    of their sentence, are not read ("how it was yesterday" is no period, "(... back
    yesterday)" would be)."""

    since: str | None = None
    until: str | None = None
    now: datetime | None = None
    from_words: bool = True
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class PeriodScope:
    """The period a search was narrowed to: the words understood, the inclusive ISO days
    (None: open), how many notes have a day in it, and the query searched without its
    period words."""

    words: str
    since: str | None
    until: str | None
    notes: int
    query: str

    def describe(self) -> str:
        """`2023-07-03 to 2023-07-09`, `since 2024-01-05`, `until 2022-12-31`."""
        if self.since and self.until:
            return self.since if self.since == self.until else f"{self.since} to {self.until}"
        if self.since:
            return f"since {self.since}"
        return f"until {self.until}" if self.until else "any time"


@dataclass(frozen=True)
class SearchFilters:
    """Narrow a search: notes under these folders, with these tags, of this period;
    derived notes (answers still in queries/) are left out unless asked for."""

    folders: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    include_derived: bool = False
    # A period: notes whose day (core/note_dates.py) is in [since, until], ISO days.
    since: str | None = None
    until: str | None = None

    def narrows(self) -> bool:
        """True when a filter beyond `derived` applies (folders, tags or a period)."""
        return bool(self.folders or self.tags or self.since or self.until)


@dataclass(frozen=True)
class EvidenceChunk:
    """A chunk of the evidence pack. `fresh` is False when the file changed since indexing
    and the text could not be re-read to match."""

    chunk_id: int
    heading: str | None
    heading_path: tuple[str, ...]
    lines: tuple[int, int]
    text: str
    score: float
    fresh: bool = True


@dataclass(frozen=True)
class EvidencePage:
    """A page of the evidence pack with its best chunks, in score order."""

    path: str
    title: str
    wikilink: str
    score: float
    matched: tuple[tuple[str, float], ...]
    chunks: tuple[EvidenceChunk, ...]
    type: str | None = None
    sources: tuple[str, ...] = ()
    fresh: bool = True
    warning: str | None = None


@dataclass(frozen=True)
class Neighbour:
    """A page one link away from a primary page, and why it is included."""

    path: str
    title: str
    wikilink: str
    why: str


@dataclass(frozen=True)
class SourceWindow:
    """Raw text from a vault `sources/` or `raw/` file that a primary page cites."""

    path: str
    cited_by: str
    lines: tuple[int, int]
    text: str


@dataclass(frozen=True)
class ContextPack:
    """The evidence for a prompt, without an answer (`askvault context`, and answering)."""

    prompt: str
    pages: tuple[EvidencePage, ...]
    neighbours: tuple[Neighbour, ...] = ()
    degraded: str | None = None
    warnings: tuple[str, ...] = ()
    budget_tokens: int = 0
    used_tokens: int = 0
    trace: dict[str, Any] = field(default_factory=dict)
    actions: tuple[str, ...] = ()
    source_windows: tuple[SourceWindow, ...] = ()
    period: PeriodScope | None = None  # the period the search was narrowed to, if any
