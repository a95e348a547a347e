"""Talk to Ollama through the official `ollama` client.

Owns: the embedder's transport over the client (the embedding logic itself, prefixes,
batching and splitting, is adapters/ollama_embed.py's), streaming chat, and turning every
client failure into an `errors.OllamaError`. The host rules and the status probe are
adapters/ollama_http.py's (re-exported here).
"""

from __future__ import annotations

import functools
import logging
import socket
import ssl
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import ollama

from askvault.adapters.ollama_embed import (  # noqa: F401 - re-exported
    CHARS_PER_TOKEN_ESTIMATE,
    EMBED_PREFIXES,
    EMBED_WINDOW_TOKENS,
    PROBE_TEXT,
    ModelEmbedder,
    embed_prefixes,
    model_base_name,
    split_for_embedding,
    status_error,
    timed_out,
    unreachable,
)
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
from askvault.errors import OllamaUnavailable

log = logging.getLogger(__name__)


def _client(host: str, timeout_s: float | httpx.Timeout, **options: Any) -> ollama.Client:
    """An `ollama.Client` that ignores the environment's proxy settings (`options` go to
    httpx).

    httpx honours HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and .netrc) unless told not to, which
    would send note text to a proxy off the machine: the host was vetted, not the route.
    """
    return ollama.Client(
        host=host, timeout=timeout_s, trust_env=False, verify=_tls_context(), **options
    )


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The context httpx would make for each client (certifi's certificates, verified;
    no environment), made once per process: reading the certificates took 10-40 ms a
    client (measured on 2 shared cores), and a command makes two (embedding and chat).
    One context serves every connection; only an https host uses it."""
    return httpx.create_ssl_context(trust_env=False)


@contextmanager
def _translated_errors(host: str, model: str, timeout_s: float) -> Iterator[None]:
    """Turn the client's failures into OllamaError subclasses (the messages of
    adapters/ollama_embed.py, which HttpTransport raises too)."""
    try:
        yield
    except ollama.ResponseError as exc:
        raise status_error(host, model, exc.status_code, str(exc.error)) from exc
    except httpx.TimeoutException as exc:
        raise timed_out(host, timeout_s) from exc
    except (httpx.TransportError, ConnectionError) as exc:
        # The client turns httpx.ConnectError into ConnectionError, but not inside streams.
        refused = isinstance(exc, (ConnectionError, httpx.ConnectError))
        raise unreachable(host, "connection refused" if refused else str(exc)) from exc


class ClientTransport:
    """The embedder's Ollama calls through the official client (implements
    `ollama_embed.EmbedTransport`)."""

    def __init__(self, host: str, *, timeout_s: float) -> None:
        self.host = host
        self.timeout_s = timeout_s
        self._client = _client(host, timeout_s)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def models(self, model: str) -> dict[str, str]:
        with _translated_errors(self.host, model, self.timeout_s):
            listing = self._client.list()
        return {m.model or "": m.digest or "" for m in listing.models}

    def model_info(self, model: str) -> Mapping[str, Any]:
        with _translated_errors(self.host, model, self.timeout_s):
            return self._client.show(model).modelinfo or {}

    def embed(self, model: str, inputs: list[str]) -> list[list[float]]:
        with _translated_errors(self.host, model, self.timeout_s):
            response = self._client.embed(model=model, input=inputs, truncate=False)
        return [list(v) for v in response.embeddings]


class OllamaEmbedder(ModelEmbedder):
    """A `ModelEmbedder` over the official client (see adapters/ollama_embed.py); refuses a
    non-loopback host (unless `allow_remote`) before any connection."""

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
        super().__init__(
            vetted,
            model,
            ClientTransport(vetted, timeout_s=timeout_s),
            timeout_s=timeout_s,
            batch_size=batch_size,
            max_input_tokens=max_input_tokens,
        )


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
