"""All talk to Ollama, through the official `ollama` client.

Owns: refusing non-loopback hosts before any connection, the per-model embedding
prefixes, batching and splitting of embedding inputs, streaming chat, the status
probe, and turning every client failure into an `errors.OllamaError`.
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import ollama

from askvault.adapters.ollama_http import (  # noqa: F401 - re-exported
    DEFAULT_HOST,
    DEFAULT_PORT,
    REMOTE_HINT,
    UNAVAILABLE_HINT,
    OllamaStatus,
    RefusedEmbedder,
    _find_model,
    check_host_allowed,
    embedding_length,
    host_refusal,
    model_present,
    probe_ollama,
)
from askvault.core.controls import strip_controls
from askvault.errors import (
    InputRefused,
    ModelMissing,
    OllamaUnavailable,
)
from askvault.records import Fingerprint

log = logging.getLogger(__name__)

# Tokenizers average ~4 characters per token on English prose; 3 keeps a margin for
# code, numbers and non-Latin text, so a piece estimated to fit really fits.
CHARS_PER_TOKEN_ESTIMATE = 3
# Ollama runs embedding models with a 2048-token window by default, whatever the
# model's own context length, so a longer input would not fit either.
EMBED_WINDOW_TOKENS = 2048
PROBE_TEXT = "askvault dimension probe"

_SEARCH_PASSAGES = "Represent this sentence for searching relevant passages: "
# model base name -> (query prefix, document prefix), as each model card asks.
EMBED_PREFIXES: dict[str, tuple[str, str]] = {
    "nomic-embed-text": ("search_query: ", "search_document: "),
    "embeddinggemma": ("task: search result | query: ", "title: none | text: "),
    "mxbai-embed-large": (_SEARCH_PASSAGES, ""),
    "snowflake-arctic-embed": (_SEARCH_PASSAGES, ""),
    "snowflake-arctic-embed2": ("query: ", ""),
}


def model_base_name(model: str) -> str:
    """`nomic-embed-text:latest` -> `nomic-embed-text`; `ns/name:tag` -> `name`."""
    return model.split(":", 1)[0].rsplit("/", 1)[-1].lower()


def embed_prefixes(model: str) -> tuple[str, str]:
    """The (query, document) prefixes for `model`; ("", "") for a model without any."""
    return EMBED_PREFIXES.get(model_base_name(model), ("", ""))


def _client(host: str, timeout_s: float | httpx.Timeout, **options: Any) -> ollama.Client:
    """An `ollama.Client` that ignores the environment's proxy settings (`options` go to
    httpx).

    httpx honours HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and .netrc) unless told not to, which
    would send note text to a proxy off the machine: the host was vetted, not the route.
    """
    return ollama.Client(host=host, timeout=timeout_s, trust_env=False, **options)


@contextmanager
def _translated_errors(host: str, model: str, timeout_s: float) -> Iterator[None]:
    """Turn the client's failures into OllamaError subclasses."""
    try:
        yield
    except ollama.ResponseError as exc:
        if exc.status_code == 404:
            raise ModelMissing(model, host) from exc
        error = strip_controls(str(exc.error))  # the server's words, shown and written
        if 400 <= exc.status_code < 500 or exc.status_code == 500:
            raise InputRefused(
                f"Ollama at {host} refused the request: {error} (status {exc.status_code})",
                UNAVAILABLE_HINT,
            ) from exc
        raise OllamaUnavailable(
            f"Ollama at {host} failed: {error} (status {exc.status_code})", UNAVAILABLE_HINT
        ) from exc
    except httpx.TimeoutException as exc:
        raise OllamaUnavailable(
            f"Ollama at {host} sent nothing for {timeout_s:g} s", UNAVAILABLE_HINT
        ) from exc
    except (httpx.TransportError, ConnectionError) as exc:
        # The client turns httpx.ConnectError into ConnectionError, but not inside streams.
        refused = isinstance(exc, (ConnectionError, httpx.ConnectError))
        reason = "connection refused" if refused else str(exc)
        raise OllamaUnavailable(
            f"Ollama is not reachable at {host} ({reason})", UNAVAILABLE_HINT
        ) from exc


def split_for_embedding(text: str, max_chars: int) -> list[str]:
    """Cut `text` into pieces of at most `max_chars`, at whitespace when one is near the limit."""
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    pieces: list[str] = []
    start = 0
    while len(text) - start > max_chars:
        end = start + max_chars
        cut = max(text.rfind(ch, start + max_chars // 2, end) for ch in " \n\t")
        cut = cut + 1 if cut > start else end
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def _pool(vectors: Sequence[Sequence[float]], weights: Sequence[int]) -> list[float]:
    """Length-weighted mean of piece vectors, L2-normalised again."""
    if len({len(v) for v in vectors}) != 1:
        return []  # ragged pieces: an empty vector, which the caller refuses to store
    total = float(sum(weights)) or 1.0
    mean = [sum(w * v[i] for v, w in zip(vectors, weights)) / total for i in range(len(vectors[0]))]
    norm = math.sqrt(sum(x * x for x in mean)) or 1.0
    return [x / norm for x in mean]


class OllamaEmbedder:
    """Embeds texts with an Ollama embedding model (implements `records.Embedder`).

    Inputs go out in batches of `batch_size`, one `/api/embed` call per batch, with
    `truncate=False` so Ollama never cuts a text silently. A text estimated longer than
    `max_input_tokens` (characters / 3; default: the model's context length from
    `/api/show`, at most 2048) is split, its pieces embedded and mean-pooled.
    """

    def __init__(
        self,
        host: str,
        model: str,
        *,
        timeout_s: float,
        batch_size: int = 32,
        max_input_tokens: int | None = None,
        allow_remote: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.host = check_host_allowed(host, allow_remote)
        self.model = model
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.query_prefix, self.document_prefix = embed_prefixes(model)
        self._max_input_tokens = max_input_tokens
        self._fingerprint: Fingerprint | None = None
        self._client = _client(self.host, timeout_s)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OllamaEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _errors(self) -> AbstractContextManager[None]:
        return _translated_errors(self.host, self.model, self.timeout_s)

    def fingerprint(self) -> Fingerprint:
        """(model, digest from /api/tags, dimension); cached for this client.

        The dimension is the length of a real embedding (one probe call), not what
        /api/show's `<arch>.embedding_length` reports: a model whose vectors disagree with
        its report would have every vector refused as the wrong size (issue 25 item 10).
        """
        if self._fingerprint is None:
            with self._errors():
                listing = self._client.list()
            digests = {m.model or "": m.digest or "" for m in listing.models}
            found = _find_model(list(digests), self.model)
            if found is None:
                raise ModelMissing(self.model, self.host)
            dimension = self.probe_dimension()
            reported = self.reported_dimension()
            if reported is not None and reported != dimension:
                log.warning(
                    "Ollama reports %d dimensions for %s but its vectors have %d: using %d",
                    reported,
                    self.model,
                    dimension,
                    dimension,
                )
            self._fingerprint = Fingerprint(self.model, digests[found] or "unknown", dimension)
        return self._fingerprint

    def reported_dimension(self) -> int | None:
        """`<arch>.embedding_length` of /api/show, when the model says it."""
        with self._errors():
            info = self._client.show(self.model).modelinfo or {}
        return embedding_length(info)

    def probe_dimension(self) -> int:
        """The length of a real embedding (one call): what `doctor` checks."""
        return len(self._embed_batch([self.document_prefix + PROBE_TEXT])[0])

    def max_input_tokens(self) -> int:
        """The per-input token budget: the explicit one, else the model's (cached)."""
        if self._max_input_tokens is None:
            with self._errors():
                info = self._client.show(self.model).modelinfo or {}
            lengths = [
                v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)
            ]
            self._max_input_tokens = min([EMBED_WINDOW_TOKENS, *lengths])
        return self._max_input_tokens

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, with the model's document prefix."""
        return self._embed_texts(texts, self.document_prefix)

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query, with the model's query prefix."""
        return self._embed_texts([text], self.query_prefix)[0]

    def _embed_texts(self, texts: Sequence[str], prefix: str) -> list[list[float]]:
        if not texts:
            return []
        budget = max(1, self.max_input_tokens() * CHARS_PER_TOKEN_ESTIMATE - len(prefix))
        pieces: list[str] = []
        owners: list[int] = []
        for index, text in enumerate(texts):
            for piece in split_for_embedding(text, budget):
                pieces.append(prefix + piece)
                owners.append(index)
        vectors: list[list[float]] = []
        for start in range(0, len(pieces), self.batch_size):
            vectors.extend(self._embed_batch(pieces[start : start + self.batch_size]))
        grouped: list[list[int]] = [[] for _ in texts]
        for position, owner in enumerate(owners):
            grouped[owner].append(position)
        return [
            vectors[ps[0]]
            if len(ps) == 1
            else _pool([vectors[p] for p in ps], [len(pieces[p]) for p in ps])
            for ps in grouped
        ]

    def _embed_batch(self, inputs: list[str]) -> list[list[float]]:
        with self._errors():
            response = self._client.embed(model=self.model, input=inputs, truncate=False)
        vectors = [list(v) for v in response.embeddings]
        if len(vectors) != len(inputs):
            raise OllamaUnavailable(
                f"Ollama at {self.host} returned {len(vectors)} embeddings"
                f" for {len(inputs)} inputs",
                UNAVAILABLE_HINT,
            )
        return vectors


@dataclass
class ReplyUsage:
    """What Ollama reported about the last reply (None where it said nothing)."""

    prompt_tokens: int | None = None
    reply_tokens: int | None = None
    prompt_eval_s: float | None = None
    generation_s: float | None = None
    done_reason: str | None = None  # "stop", or "length" when num_predict cut the reply


class _Reply:
    """One reply being streamed: its socket once connected, and whether it was aborted.

    Ollama stops generating when its client closes the connection, but a thread blocked
    reading the next piece (the model still reading the prompt, minutes on a CPU) cannot
    close anything: `abort()` shuts the socket down from any thread, which ends that read
    and tells Ollama at once."""

    def __init__(self) -> None:
        self.aborted = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace callback: keeps the socket of the connection just made."""
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            with self._lock:
                self._sock = sock
                aborted = self.aborted
            if aborted:
                _shut(sock)

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            sock = self._sock
        _shut(sock)


def _shut(sock: socket.socket | None) -> None:
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: nothing left to stop


class OllamaGenerator:
    """Streams chat replies from Ollama (implements `records.Generator`).

    A slow model is not a dead one: `silence_s` bounds each wait for the next piece of a
    reply, the first one included (a CPU evaluates the whole prompt before it says
    anything), never the whole reply; `timeout_s` bounds connecting. `options` (e.g.
    temperature, num_predict) go with every request. After a stream, `usage` holds
    Ollama's own counts and times. `abort()` stops the replies in progress from any
    thread: each reply has a connection of its own (no keep-alive, one local connect per
    reply), whose socket is shut down, so Ollama sees its client leave and stops.
    """

    def __init__(
        self,
        host: str,
        *,
        timeout_s: float,
        allow_remote: bool = False,
        options: dict[str, Any] | None = None,
        silence_s: float | None = None,
    ) -> None:
        self.host = check_host_allowed(host, allow_remote)
        self.timeout_s = timeout_s
        self.silence_s = silence_s if silence_s is not None else timeout_s
        self.options = dict(options or {})
        self.usage = ReplyUsage()
        self._replies: weakref.WeakSet[_Reply] = weakref.WeakSet()
        self._replies_lock = threading.Lock()
        self._sending = threading.local()  # the reply whose request this thread sends
        self._client = _client(
            self.host,
            httpx.Timeout(timeout_s, read=self.silence_s),
            limits=httpx.Limits(max_keepalive_connections=0),
            event_hooks={"request": [self._trace_request]},
        )

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def abort(self) -> None:
        """Stop every reply being streamed or asked for (see `records.Generator`)."""
        with self._replies_lock:
            replies = list(self._replies)
        for reply in replies:
            reply.abort()

    def _trace_request(self, request: httpx.Request) -> None:
        reply = self._sending.__dict__.pop("reply", None)
        if reply is not None:
            request.extensions["trace"] = reply.trace

    def __enter__(self) -> OllamaGenerator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        model: str,
        num_ctx: int,
        format: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Iterator[str]:
        """Yield the reply's text pieces; raise OllamaUnavailable if it ends before `done`.

        `format` (a JSON schema) constrains the reply; `options` override the client's."""
        merged = {**self.options, **(options or {}), "num_ctx": num_ctx}
        self.usage = ReplyUsage()
        reply = _Reply()  # registered now: an abort() before the first piece stops it too
        with self._replies_lock:
            self._replies.add(reply)
        return self._stream(reply, list(messages), model, merged, dict(format) if format else None)

    def _stream(
        self,
        reply: _Reply,
        messages: list[dict[str, str]],
        model: str,
        options: dict[str, Any],
        format: dict[str, Any] | None = None,
    ) -> Iterator[str]:
        done = False
        parts: Iterator[ollama.ChatResponse] | None = None
        try:
            if reply.aborted:
                raise self._stopped()
            with _translated_errors(self.host, model, self.silence_s):
                parts = self._client.chat(
                    model=model, messages=messages, stream=True, options=options, format=format
                )
                self._sending.reply = reply
                for part in parts:
                    if part.message.content:
                        yield part.message.content
                    if part.done:
                        done = True
                        self.usage = _usage(part)
        except OllamaUnavailable:
            if reply.aborted:
                raise self._stopped() from None
            raise
        finally:
            self._sending.__dict__.pop("reply", None)
            with self._replies_lock:
                self._replies.discard(reply)
            # A consumer that stops early must not leave the HTTP stream open.
            close = getattr(parts, "close", None)
            if close is not None:
                close()
        if not done:
            if reply.aborted:
                raise self._stopped()
            raise OllamaUnavailable(
                f"Ollama at {self.host} stopped before the reply was complete", UNAVAILABLE_HINT
            )

    def _stopped(self) -> OllamaUnavailable:
        return OllamaUnavailable(f"the reply from Ollama at {self.host} was stopped (cancelled)")


def _usage(part: Any) -> ReplyUsage:
    def seconds(ns: Any) -> float | None:
        return ns / 1e9 if isinstance(ns, int) and ns > 0 else None

    def count(n: Any) -> int | None:
        return n if isinstance(n, int) and n >= 0 else None

    reason = getattr(part, "done_reason", None)
    return ReplyUsage(
        count(part.prompt_eval_count),
        count(part.eval_count),
        seconds(part.prompt_eval_duration),
        seconds(part.eval_duration),
        reason if isinstance(reason, str) else None,
    )
