"""Embedding with an Ollama model, whichever way the requests travel.

`ModelEmbedder` owns what an embedding is for askvault (the per-model prefixes, the input
budget, splitting a long text and pooling its pieces, batching, the fingerprint); its
`EmbedTransport` owns the three Ollama calls it needs (`/api/tags`, `/api/show`,
`/api/embed`) and turns every failure into an `errors.OllamaError`.

Two transports: the official `ollama` client (adapters/ollama.py, with httpx and pydantic:
~0.2 s to import), used by indexing, answers and the daemon; and `HttpTransport` here, the
same three calls with the standard library's http.client, used where start-up is the cost
a user waits for: the query embedding of `askvault search` and `context` (issue 22 item 6,
docs/decisions.md). Both send the same bodies and raise the same errors with the same
messages for an Ollama that is down, slow, missing the model or failing.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from askvault.adapters.ollama_http import (
    UNAVAILABLE_HINT,
    _find_model,
    check_host_allowed,
    embedding_length,
)
from askvault.core.controls import strip_controls
from askvault.errors import InputRefused, ModelMissing, OllamaUnavailable
from askvault.records import Fingerprint

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


class EmbedTransport(Protocol):
    """The Ollama calls an embedder makes; each raises an `OllamaError` when it fails."""

    def models(self, model: str) -> dict[str, str]:
        """Pulled model name -> digest (`/api/tags`); `model`, the one asked about, is named
        in the errors."""
        ...

    def model_info(self, model: str) -> Mapping[str, Any]:
        """`model_info` of `/api/show` (empty when Ollama gives none)."""
        ...

    def embed(self, model: str, inputs: list[str]) -> list[list[float]]:
        """One vector per input (`/api/embed`, `truncate` false)."""
        ...

    def close(self) -> None: ...


class ModelEmbedder:
    """Embeds texts with an Ollama embedding model (implements `records.Embedder`).

    Inputs go out in batches of `batch_size`, one `/api/embed` call per batch, with
    `truncate=False` so Ollama never cuts a text silently. A text estimated longer than
    `max_input_tokens` (characters / 3; default: the model's context length from
    `/api/show`, at most 2048) is split, its pieces embedded and mean-pooled. `host` is
    the vetted URL (`check_host_allowed`), named in the errors.
    """

    def __init__(
        self,
        host: str,
        model: str,
        transport: EmbedTransport,
        *,
        timeout_s: float,
        batch_size: int = 32,
        max_input_tokens: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.host = host
        self.model = model
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.query_prefix, self.document_prefix = embed_prefixes(model)
        self._max_input_tokens = max_input_tokens
        self._fingerprint: Fingerprint | None = None
        self._transport = transport
        self._siblings: dict[str, ModelEmbedder] = {}

    def close(self) -> None:
        """Close the transport's connections."""
        self._transport.close()

    def __enter__(self) -> ModelEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fingerprint(self) -> Fingerprint:
        """(model, digest from /api/tags, dimension); cached for this client.

        The dimension is the length of a real embedding (one probe call), not what
        /api/show's `<arch>.embedding_length` reports: a model whose vectors disagree with
        its report would have every vector refused as the wrong size (issue 25 item 10).
        """
        if self._fingerprint is None:
            digests = self._transport.models(self.model)
            found = _find_model(list(digests), self.model)
            if found is None:
                raise ModelMissing(self.model, self.host)
            dimension = self.probe_dimension()
            reported = self.reported_dimension()
            if reported is not None and reported != dimension:
                import logging  # ~5 ms a search's start-up never pays

                logging.getLogger(__name__).warning(
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
        return embedding_length(self._transport.model_info(self.model))

    def probe_dimension(self) -> int:
        """The length of a real embedding (one call): what `doctor` checks."""
        return len(self._embed_batch([self.document_prefix + PROBE_TEXT])[0])

    def max_input_tokens(self) -> int:
        """The per-input token budget: the explicit one, else the model's (cached)."""
        if self._max_input_tokens is None:
            info = self._transport.model_info(self.model)
            lengths = [
                v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)
            ]
            self._max_input_tokens = min([EMBED_WINDOW_TOKENS, *lengths])
        return self._max_input_tokens

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, with the model's document prefix."""
        return self._embed_texts(texts, self.document_prefix)

    def embed_query(self, text: str, model: str | None = None) -> list[float]:
        """The vector of a search query, with the model's query prefix; with `model` (the
        index's vectors are another model's), that model's, over the same connection."""
        if model is None or model_base_name(model) == model_base_name(self.model):
            return self._embed_texts([text], self.query_prefix)[0]
        return self._sibling(model).embed_query(text)

    def _sibling(self, model: str) -> ModelEmbedder:
        """An embedder of another model sharing this one's transport (closed by this one)."""
        if model not in self._siblings:
            self._siblings[model] = ModelEmbedder(
                self.host,
                model,
                self._transport,
                timeout_s=self.timeout_s,
                batch_size=self.batch_size,
            )
        return self._siblings[model]

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
        vectors = self._transport.embed(self.model, inputs)
        if len(vectors) != len(inputs):
            raise OllamaUnavailable(
                f"Ollama at {self.host} returned {len(vectors)} embeddings"
                f" for {len(inputs)} inputs",
                UNAVAILABLE_HINT,
            )
        return vectors


def status_error(host: str, model: str, status: int, error: str) -> Exception:
    """The error of an HTTP error answer from Ollama, as both transports report it: 404 is
    the model missing; another 4xx, or 500, refuses the request (perhaps one input: the
    caller splits the batch); anything else is Ollama failing."""
    if status == 404:
        return ModelMissing(model, host)
    error = strip_controls(error)  # the server's words, shown and written
    if 400 <= status < 500 or status == 500:
        return InputRefused(
            f"Ollama at {host} refused the request: {error} (status {status})", UNAVAILABLE_HINT
        )
    return OllamaUnavailable(
        f"Ollama at {host} failed: {error} (status {status})", UNAVAILABLE_HINT
    )


def timed_out(host: str, timeout_s: float) -> OllamaUnavailable:
    return OllamaUnavailable(f"Ollama at {host} sent nothing for {timeout_s:g} s", UNAVAILABLE_HINT)


def unreachable(host: str, reason: str) -> OllamaUnavailable:
    return OllamaUnavailable(f"Ollama is not reachable at {host} ({reason})", UNAVAILABLE_HINT)


class HttpTransport:
    """The embedder's Ollama calls over http.client (implements `EmbedTransport`).

    What the official client sends (its JSON bodies and headers, the bearer token of
    OLLAMA_API_KEY) with no proxy whatever the environment says (the host was vetted, not
    the route), one connection per call (no pooled connection that Ollama may have closed
    meanwhile; a loopback connect costs ~0.1 ms). `timeout_s` bounds the connect and each
    wait for data. Plain http only: an https host goes through the official client, whose
    certificate store the user's setup was made with (app/clients.py).
    """

    def __init__(self, host: str, *, timeout_s: float) -> None:
        split = urllib.parse.urlsplit(host)
        if split.scheme != "http" or not split.hostname:
            raise ValueError(f"HttpTransport speaks plain http to a vetted host, not {host!r}")
        self.host = host
        self.timeout_s = timeout_s
        self._address = (split.hostname, split.port or 80)
        self._prefix = split.path.rstrip("/")

    def close(self) -> None:
        """Nothing held open between calls."""

    def models(self, model: str) -> dict[str, str]:
        listing = self._call("GET", "/api/tags", None, model)
        models = listing.get("models") or []
        if not isinstance(models, list):
            raise self._malformed("/api/tags")
        return {
            str(m.get("model") or ""): str(m.get("digest") or "")
            for m in models
            if isinstance(m, dict)
        }

    def model_info(self, model: str) -> Mapping[str, Any]:
        info = self._call("POST", "/api/show", {"model": model}, model).get("model_info")
        return info if isinstance(info, dict) else {}

    def embed(self, model: str, inputs: list[str]) -> list[list[float]]:
        body = {"model": model, "input": inputs, "truncate": False}
        vectors = self._call("POST", "/api/embed", body, model).get("embeddings")
        try:
            if not isinstance(vectors, list):
                raise TypeError(vectors)
            return [[float(x) for x in v] for v in vectors]
        except (TypeError, ValueError):
            raise self._malformed("/api/embed") from None

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None, model: str
    ) -> dict[str, Any]:
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": "askvault",
        }
        api_key = os.environ.get("OLLAMA_API_KEY")
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        data = None if body is None else json.dumps(body).encode("utf-8")
        try:
            # Connected before http.client is imported: an Ollama that is down costs a
            # search no import at all.
            sock = socket.create_connection(self._address, timeout=self.timeout_s)
        except (TimeoutError, socket.timeout):
            raise timed_out(self.host, self.timeout_s) from None
        except OSError:
            # As the official client says of any failed connect (it raises ConnectionError
            # for each).
            raise unreachable(self.host, "connection refused") from None
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as http.client does
        import http.client  # ~10 ms (email's parser, ssl): only once Ollama answers

        conn = http.client.HTTPConnection(*self._address, timeout=self.timeout_s)
        conn.sock = sock
        try:
            conn.request(method, self._prefix + path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except (TimeoutError, socket.timeout):
            raise timed_out(self.host, self.timeout_s) from None
        except (OSError, http.client.HTTPException) as exc:
            raise unreachable(self.host, _transport_reason(exc)) from None
        finally:
            conn.close()
        text = raw.decode("utf-8", errors="replace")
        if response.status >= 400:
            raise status_error(self.host, model, response.status, _error_text(text))
        try:
            doc = json.loads(text)
        except ValueError:
            raise self._malformed(path) from None
        if not isinstance(doc, dict):
            raise self._malformed(path)
        return doc

    def _malformed(self, path: str) -> OllamaUnavailable:
        return OllamaUnavailable(
            f"Ollama at {self.host} answered {path} with something else than its API's JSON",
            UNAVAILABLE_HINT,
        )


def _transport_reason(exc: BaseException) -> str:
    """Why a call broke off, in the official client's words (httpx's) for the two ways a
    server hangs up: before answering, or within the body."""
    import http.client

    if isinstance(exc, http.client.RemoteDisconnected):
        return "Server disconnected without sending a response."
    if isinstance(exc, http.client.IncompleteRead):
        received = len(exc.partial)
        expected = received + exc.expected if exc.expected is not None else None
        return (
            "peer closed connection without sending complete message body "
            f"(received {received} bytes, expected {expected})"
        )
    return str(exc) or type(exc).__name__


def _error_text(text: str) -> str:
    """The `error` of a JSON error body, else the body itself (as the official client)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    error = doc.get("error", text) if isinstance(doc, dict) else text
    return str(error)


class HttpEmbedder(ModelEmbedder):
    """A `ModelEmbedder` over `HttpTransport`: no third-party import at all. Refuses a
    non-loopback host (unless `allow_remote`) before any connection, as OllamaEmbedder."""

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
        vetted = check_host_allowed(host, allow_remote)
        transport = HttpTransport(vetted, timeout_s=timeout_s)
        super().__init__(
            vetted,
            model,
            transport,
            timeout_s=timeout_s,
            batch_size=batch_size,
            max_input_tokens=max_input_tokens,
        )
