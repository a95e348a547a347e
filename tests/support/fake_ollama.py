"""A real HTTP server on 127.0.0.1 that speaks the parts of the Ollama API askvault uses.

Tests run the official `ollama` client against it, so request and response shapes
follow the client's pydantic types (ollama 0.6.x). What it offers:

- deterministic embeddings: hashed bag of words plus character trigrams, L2-normalised,
  so texts sharing words are close and paraphrases overlap a little;
- scripted chat (`chat_script`: replies consumed in order, or a callable), with an
  extractive default reply that cites the first `[[Page]]` of the prompt;
- faults settable while running (`set_fault`): down, slow, 404, 500, die_midstream, and
  endless (a chat reply that never ends: its pieces again and again, `done` never sent,
  `num_predict` ignored, until the client hangs up);
- `num_predict` honoured as Ollama does (the reply stops there, `done_reason: length`);
- malformed vectors for chosen texts (`malformed`: a marker in the text -> `short`, `long`,
  `empty`, `nan` or `inf`), so one batch can come back ragged or with non-finite values;
- a request log (`requests`, `embedded_inputs`, `embed_calls`, `embed_batches`);
- a slow embedder: `embed_delay_per_input_s` seconds per input of an /api/embed request;
- whether a client went away before its response ended (`abandoned`, `hung_up`): as
  Ollama, the fake watches the connection while it "computes" (a `slow` fault, the delay
  between tokens) and stops there, so a test can tell a closed stream from a forgotten one.

Run it by hand: `python tests/support/fake_ollama.py --port 11435`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import select
import selectors
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The suite's embedding model: a name of its own, so that no cut-off measured for a real
# model (core/abstention.MEASURED_MAX_DISTANCE) ever applies to the fake's vectors, whose
# distances are on another scale (~0.7). Tests of a real model's rules name that model.
FAKE_EMBED_MODEL = "fake-embed"
DEFAULT_MODELS = (FAKE_EMBED_MODEL, "nomic-embed-text", "all-minilm", "llama3.2")
DEFAULT_DIMENSION = 64
FAKE_CHARS_PER_TOKEN = 4
FAULT_KINDS = ("down", "slow", "404", "500", "die_midstream", "endless")
MALFORMED_KINDS = ("short", "long", "empty", "nan", "inf")
NO_ANSWER_REPLY = "The notes provided do not contain the answer to this question."
MODIFIED_AT = "2025-01-01T00:00:00Z"

# (family, context length in tokens, capabilities) per model base name, as Ollama reports them.
MODEL_TRAITS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    FAKE_EMBED_MODEL: ("fake", 2048, ("embedding",)),
    "nomic-embed-text": ("nomic-bert", 2048, ("embedding",)),
    "all-minilm": ("bert", 512, ("embedding",)),
    "mxbai-embed-large": ("bert", 512, ("embedding",)),
    "embeddinggemma": ("gemma3", 2048, ("embedding",)),
    "snowflake-arctic-embed": ("bert", 512, ("embedding",)),
    "llama3.2": ("llama", 131072, ("completion", "tools")),
}
DEFAULT_TRAITS = ("fake", 2048, ("completion", "embedding"))

_WORD = re.compile(r"\w+")
_WIKILINK = re.compile(r"\[\[([^\[\]|]+)(?:\|[^\[\]]*)?\]\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")
_PIECE = re.compile(r"\S+\s*|\s+")


def full_name(model: str) -> str:
    """`llama3.2` -> `llama3.2:latest`; a name with a tag is kept."""
    return model if ":" in model else f"{model}:latest"


def base_name(model: str) -> str:
    """`nomic-embed-text:latest` -> `nomic-embed-text`."""
    return model.split(":", 1)[0]


def fake_embedding(text: str, dimension: int = DEFAULT_DIMENSION, salt: str = "") -> list[float]:
    """The fake's embedding of `text`: hashed words (weight 1) and word trigrams (0.25)."""
    vector = [0.0] * dimension
    for word in _WORD.findall(text.lower()):
        _add_feature(vector, f"{salt}|w|{word}", 1.0)
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            _add_feature(vector, f"{salt}|t|{padded[i : i + 3]}", 0.25)
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [x / norm for x in vector]


def _add_feature(vector: list[float], feature: str, weight: float) -> None:
    h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
    sign = 1.0 if (h >> 40) & 1 else -1.0
    vector[h % len(vector)] += sign * weight


def fake_token_count(text: str) -> int:
    """The fake's token count: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / FAKE_CHARS_PER_TOKEN)


def extractive_reply(messages: Sequence[dict[str, Any]]) -> str:
    """Default chat reply: the first sentence of text after the first `[[Page]]`, citing that
    page (headings and quote markers skipped: the sentence a model would copy)."""
    prompt = "\n".join(str(m.get("content") or "") for m in messages)
    match = _WIKILINK.search(prompt)
    if match is None:
        return NO_ANSWER_REPLY
    lines = prompt[match.end() :].split("\n")
    text_lines = [re.sub(r"^[>\s]*", "", line) for line in lines]
    text_lines = [line for line in text_lines if line and not line.startswith("#")]
    rest = " ".join(text_lines).lstrip(" \t\r\n:-—>")
    sentence = _SENTENCE_END.split(rest, maxsplit=1)[0].strip().rstrip(".!?")
    if not sentence:
        sentence = "This is described in the notes"
    return f"{sentence} [[{match.group(1).strip()}]]."


@dataclass
class _Fault:
    kind: str
    delay_s: float
    remaining: int | None
    paths: tuple[str, ...] | None
    skip: int = 0  # matching requests served normally before the fault starts


class _Server(ThreadingHTTPServer):
    # Non-daemon handler threads, so server_close() joins them: no test leaks a thread.
    daemon_threads = False
    allow_reuse_address = True
    fake: FakeOllama

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Dropped connections are part of the fault drills: stay quiet about them."""


def _serve(httpd: _Server, wake: socket.socket) -> None:
    """Serve `httpd` until `wake` is readable. Not `serve_forever`: its `shutdown()` waits
    for the next poll of the loop (50 ms at the interval we had), which every test that
    stopped a fake paid once (and twice with a `down` fault); this loop wakes at once."""
    with wake, selectors.DefaultSelector() as selector:
        selector.register(httpd, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        while all(key.fileobj is not wake for key, _ in selector.select()):
            httpd.handle_request()  # a connection waits: accepted without blocking


# The fakes listening now, by URL: an index copied from a template is keyed on the state of
# the fake at the settings' host (tests/support/index_templates.py).
SERVING: dict[str, FakeOllama] = {}


class FakeOllama:
    """The fake Ollama server; `start()`/`stop()` or use it as a context manager."""

    def __init__(
        self,
        *,
        port: int = 0,
        dimension: int = DEFAULT_DIMENSION,
        models: Iterable[str] = DEFAULT_MODELS,
        version: str = "0.12.0",
        host: str = "127.0.0.1",
    ) -> None:
        self.host = host
        self.port = port
        self.dimension = dimension
        self.dimensions: dict[str, int] = {}
        # What /api/show reports as a model's embedding length, where it should disagree
        # with the vectors it returns (model base name -> length).
        self.reported_dimensions: dict[str, int] = {}
        self.models: list[str] = [full_name(m) for m in models]
        self.digests: dict[str, str] = {}
        self.context_lengths: dict[str, int] = {}
        self.malformed: dict[str, str] = {}
        # A marker in any input of an /api/embed request -> that HTTP status for the whole
        # request, as Ollama answers an input its runner cannot process.
        self.refused: dict[str, int] = {}
        self.version = version
        self.chat_script: list[str] | Callable[[list[dict[str, Any]]], str] | None = None
        self.token_delay_s = 0.0
        # Seconds an /api/embed request takes per input (a slow embedder's rate).
        self.embed_delay_per_input_s = 0.0
        self.requests: list[tuple[str, Any]] = []
        self.embed_batches: list[list[str]] = []
        self.refused_batches: list[list[str]] = []
        # Paths of the requests whose client closed its connection before the response
        # ended, in order; `hung_up` is set at the first.
        self.abandoned: list[str] = []
        self.hung_up = threading.Event()
        self._lock = threading.Lock()
        self._fault: _Fault | None = None
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()
        self._connections: set[socket.socket] = set()
        self._wake: socket.socket | None = None  # written to once: the serving loop ends

    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:40123`."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> FakeOllama:
        """Listen on `port` (0: a free one, then kept for `recover()`) and serve in a thread."""
        self._listen()
        return self

    def stop(self) -> None:
        """Stop listening, drop open connections and join every thread."""
        self._unlisten()

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _listen(self) -> None:
        if self._httpd is not None:
            return
        self._halt = threading.Event()
        httpd = _Server((self.host, self.port), _Handler)
        httpd.fake = self
        self.port = httpd.server_address[1]
        self._httpd = httpd
        woken, self._wake = socket.socketpair()
        self._thread = threading.Thread(target=_serve, args=(httpd, woken), name="fake-ollama")
        self._thread.start()
        SERVING[self.url] = self

    def _unlisten(self) -> None:
        httpd, thread, wake = self._httpd, self._thread, self._wake
        if httpd is None or thread is None or wake is None:
            return
        SERVING.pop(self.url, None)
        self._halt.set()
        wake.send(b"x")
        thread.join()
        wake.close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()  # joins the handler threads
        self._httpd = self._thread = self._wake = None

    def set_fault(
        self,
        kind: str | None,
        *,
        delay_s: float = 5.0,
        count: int | None = None,
        paths: Iterable[str] | None = None,
        after: int = 0,
    ) -> None:
        """Inject a fault for the next `count` requests (None: until cleared), once `after`
        of them have been served normally.

        `down` closes the listening socket (connections are refused) until `recover()`
        or `set_fault(None)`; `count` and `paths` do not apply to it. `paths` limits the
        other faults to some endpoints, e.g. `("/api/chat",)`.
        """
        if kind is not None and kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; one of {FAULT_KINDS}")
        with self._lock:
            self._fault = None
            if kind not in (None, "down"):
                self._fault = _Fault(kind, delay_s, count, tuple(paths) if paths else None, after)
        if kind == "down":
            self._unlisten()
        elif self._httpd is None:
            self._listen()

    def recover(self) -> None:
        """Clear any fault and listen again on the same port."""
        self.set_fault(None)

    def _take_fault(self, path: str) -> _Fault | None:
        with self._lock:
            fault = self._fault
            if fault is None or (fault.paths is not None and path not in fault.paths):
                return None
            if fault.skip > 0:
                fault.skip -= 1
                return None
            if fault.remaining is not None:
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._fault = None
            return fault

    def index_state(self) -> str:
        """What of the fake shapes an index made with it (its models, their vectors and
        lengths, refused and malformed texts, a fault): equal for two fakes that give the
        same index of the same files."""
        with self._lock:
            fault = repr(self._fault)
        return repr(
            (
                self.dimension,
                sorted(self.dimensions.items()),
                sorted(self.reported_dimensions.items()),
                self.models,
                sorted(self.digests.items()),
                sorted(self.context_lengths.items()),
                sorted(self.malformed.items()),
                sorted(self.refused.items()),
                self.version,
                fault,
            )
        )

    def has_model(self, model: str) -> bool:
        """True if `model` (with or without tag) is in `models`."""
        return full_name(model) in self.models

    def digest(self, model: str) -> str:
        """The model's digest: from `digests` if set there, else derived from its name."""
        name = full_name(model)
        return self.digests.get(name) or hashlib.sha256(name.encode()).hexdigest()

    def dimension_of(self, model: str) -> int:
        """Embedding dimension of `model` (`dimensions` override, else `dimension`)."""
        return self.dimensions.get(base_name(model), self.dimension)

    def context_length(self, model: str) -> int:
        """Context length in tokens (`context_lengths` override, else the model's trait)."""
        return self.context_lengths.get(base_name(model), _traits(model)[1])

    def vector(self, text: str, model: str = DEFAULT_MODELS[0]) -> list[float]:
        """What the fake returns for `text` embedded by `model` (malformed if `text` holds a
        marker of `malformed`)."""
        vector = fake_embedding(text, self.dimension_of(model), salt=base_name(model))
        kind = next((k for marker, k in self.malformed.items() if marker in text), None)
        if kind is not None and kind not in MALFORMED_KINDS:
            raise ValueError(f"unknown malformed kind {kind!r}; one of {MALFORMED_KINDS}")
        if kind == "short":
            return vector[:-1]
        if kind == "long":
            return [*vector, 0.0]
        if kind == "empty":
            return []
        if kind in ("nan", "inf"):
            return [float(kind), *vector[1:]]
        return vector

    def reply_to(self, messages: list[dict[str, Any]]) -> str:
        """The next chat reply: scripted, or the extractive default."""
        script = self.chat_script
        if callable(script):
            return script(messages)
        with self._lock:
            if script:
                return script.pop(0)
        return extractive_reply(messages)

    def _record_abandoned(self, path: str) -> None:
        with self._lock:
            self.abandoned.append(path)
        self.hung_up.set()

    def _log(self, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append((path, body))

    @property
    def embedded_inputs(self) -> list[str]:
        """Every text embedded so far, in order (answered embed requests only)."""
        with self._lock:
            return [text for batch in self.embed_batches for text in batch]

    @property
    def embed_calls(self) -> int:
        """How many embed requests (/api/embed and /api/embeddings) were answered."""
        with self._lock:
            return len(self.embed_batches)

    def embed_calls_without(self, *markers: str) -> int:
        """Embed requests none of whose inputs holds one of `markers` (a client's probes
        left out of a count of the texts it embedded)."""
        with self._lock:
            return sum(
                not any(m in t for m in markers for t in batch) for batch in self.embed_batches
            )

    def requests_to(self, path: str) -> list[Any]:
        """JSON bodies of the requests received on `path`."""
        with self._lock:
            return [body for p, body in self.requests if p == path]


def _traits(model: str) -> tuple[str, int, tuple[str, ...]]:
    return MODEL_TRAITS.get(base_name(model), DEFAULT_TRAITS)


def _model(body: dict[str, Any]) -> str:
    return str(body.get("model") or body.get("name") or "")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked streams, as Ollama
    # TCP_NODELAY: headers and body go out in two writes, and Nagle held the second back
    # until the client's delayed ACK, 40 ms a request (Ollama's own server does not wait).
    disable_nagle_algorithm = True
    server: _Server
    _die = False
    _endless = False
    _path = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr line."""

    def setup(self) -> None:
        super().setup()
        with self.server.fake._lock:
            self.server.fake._connections.add(self.connection)
        if self.server.fake._halt.is_set():
            # Accepted just as the listener closed: drop it so server_close() never waits on it.
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def finish(self) -> None:
        with self.server.fake._lock:
            self.server.fake._connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    @property
    def fake(self) -> FakeOllama:
        return self.server.fake

    def do_GET(self) -> None:
        self._dispatch({})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            self._send_json(400, {"error": "invalid JSON body"})
            return
        self._dispatch(body)

    def _dispatch(self, body: dict[str, Any]) -> None:
        path = self.path.split("?", 1)[0]
        self.fake._log(path, body)
        self._path = path
        self._die = self._endless = False
        fault = self.fake._take_fault(path)
        if fault is not None:
            if fault.kind == "slow":
                if self._compute(fault.delay_s, path):
                    self._drop()
                    return
            elif fault.kind == "404":
                self._model_not_found(_model(body))
                return
            elif fault.kind == "500":
                self._send_json(500, {"error": "fake ollama: injected internal server error"})
                return
            elif fault.kind == "die_midstream":
                self._die = True
            elif fault.kind == "endless":
                self._endless = True
        route = _ROUTES.get((self.command, path))
        if route is None:
            self._send_text(404, "404 page not found")
        elif path in _MODEL_PATHS and not self.fake.has_model(_model(body)):
            self._model_not_found(_model(body))
        else:
            route(self, body)

    def _version(self, body: dict[str, Any]) -> None:
        self._send_json(200, {"version": self.fake.version})

    def _tags(self, body: dict[str, Any]) -> None:
        models = [
            {
                "name": name,
                "model": name,
                "modified_at": MODIFIED_AT,
                "size": 274302450,
                "digest": self.fake.digest(name),
                "details": _details(name),
            }
            for name in list(self.fake.models)
        ]
        self._send_json(200, {"models": models})

    def _show(self, body: dict[str, Any]) -> None:
        model = _model(body)
        family, _, capabilities = _traits(model)
        self._send_json(
            200,
            {
                "license": "",
                "modelfile": f"# fake Modelfile for {full_name(model)}",
                "parameters": "",
                "template": "{{ .Prompt }}",
                "details": _details(model),
                "model_info": {
                    "general.architecture": family,
                    f"{family}.embedding_length": self.fake.reported_dimensions.get(
                        base_name(model), self.fake.dimension_of(model)
                    ),
                    f"{family}.context_length": self.fake.context_length(model),
                },
                "capabilities": list(capabilities),
                "modified_at": MODIFIED_AT,
            },
        )

    def _embed(self, body: dict[str, Any]) -> None:
        model = _model(body)
        raw_input = body.get("input", "")
        texts = [raw_input] if isinstance(raw_input, str) else list(raw_input)
        limit = self.fake.context_length(model)
        truncate = body.get("truncate", True)
        if not truncate and any(fake_token_count(t) > limit for t in texts):
            self._send_json(400, {"error": "the input length exceeds the context length"})
            return
        refusal = next(
            (
                status
                for marker, status in self.fake.refused.items()
                if any(marker in t for t in texts)
            ),
            None,
        )
        if refusal is not None:
            self._record_refused(texts)
            self._send_json(
                refusal, {"error": "failed to process inputs: this input cannot be embedded"}
            )
            return
        if self.fake.embed_delay_per_input_s:
            time.sleep(self.fake.embed_delay_per_input_s * len(texts))
        # Ollama truncates silently when `truncate` is true (its default).
        clipped = [t[: limit * FAKE_CHARS_PER_TOKEN] for t in texts]
        vectors = [self.fake.vector(t, model) for t in clipped]
        self._record_embed(texts)
        self._send_json(
            200,
            {
                "model": model,
                "embeddings": vectors,
                "total_duration": 1_000_000,
                "load_duration": 100_000,
                "prompt_eval_count": sum(fake_token_count(t) for t in clipped),
            },
        )

    def _embeddings(self, body: dict[str, Any]) -> None:
        model = _model(body)
        text = str(body.get("prompt") or "")
        self._record_embed([text])
        self._send_json(200, {"embedding": self.fake.vector(text, model)})

    def _chat(self, body: dict[str, Any]) -> None:
        reply = self.fake.reply_to(list(body.get("messages") or []))
        self._answer(body, reply, lambda text: {"message": {"role": "assistant", "content": text}})

    def _generate(self, body: dict[str, Any]) -> None:
        reply = self.fake.reply_to([{"role": "user", "content": str(body.get("prompt") or "")}])
        self._answer(body, reply, lambda text: {"response": text})

    def _answer(self, body: dict[str, Any], reply: str, shape: Callable[[str], dict]) -> None:
        model = str(body.get("model") or "")
        pieces = _PIECE.findall(reply)
        if self._endless and body.get("stream", True):
            self._send_endless(model, [shape(p) for p in pieces or ["more "]])
            return
        limit = (body.get("options") or {}).get("num_predict")
        cut = isinstance(limit, int) and 0 < limit < len(pieces)
        pieces = pieces[:limit] if cut else pieces
        final = {
            "model": model,
            "created_at": _now(),
            **shape(""),
            "done": True,
            "done_reason": "length" if cut else "stop",
            "total_duration": 2_000_000,
            "load_duration": 100_000,
            "prompt_eval_count": 10,
            "prompt_eval_duration": 500_000,
            "eval_count": len(pieces),
            "eval_duration": 1_000_000,
        }
        if not body.get("stream", True):
            final.update(shape(reply))
            self._send_json(200, final)
            return
        chunks = [{"model": model, "created_at": _now(), **shape(p), "done": False} for p in pieces]
        self._send_stream(chunks + [final])

    def _record_refused(self, texts: list[str]) -> None:
        with self.fake._lock:
            self.fake.refused_batches.append(list(texts))

    def _record_embed(self, texts: list[str]) -> None:
        with self.fake._lock:
            self.fake.embed_batches.append(list(texts))

    def _model_not_found(self, model: str) -> None:
        self._send_json(404, {"error": f'model "{model}" not found, try pulling it first'})

    def _send_text(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self._die:
            self.wfile.write(data[: len(data) // 2])
            self._drop()
            return
        self.wfile.write(data)

    def _send_stream(self, chunks: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        # die_midstream: some content chunks, never the final done chunk.
        stop_at = max(1, (len(chunks) - 1) // 2) if self._die else None
        for i, chunk in enumerate(chunks):
            if stop_at is not None and i == stop_at:
                self._drop()
                return
            line = (json.dumps(chunk) + "\n").encode()
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            except OSError:  # the client closed the stream: stop generating, as Ollama
                self.fake._record_abandoned(self._path)
                raise
            if self.fake.token_delay_s and not chunk.get("done"):
                if self._compute(self.fake.token_delay_s, self._path):
                    self._drop()
                    return
        self.wfile.write(b"0\r\n\r\n")

    def _send_endless(self, model: str, shapes: list[dict[str, Any]]) -> None:
        """The pieces of a reply again and again, never `done`, until the client hangs up
        (or the server stops)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        i = 0
        while not self.fake._halt.is_set():
            chunk = {"model": model, "created_at": _now(), **shapes[i % len(shapes)], "done": False}
            line = (json.dumps(chunk) + "\n").encode()
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            except OSError:
                return  # the client hung up: what a reply that never ends waits for
            i += 1
            if self.fake.token_delay_s and self.fake._halt.wait(self.fake.token_delay_s):
                break
        self._drop()

    def _compute(self, seconds: float, path: str) -> bool:
        """Wait `seconds` as a model computing; True when the fake stops meanwhile or the
        client closes its connection (recorded in `abandoned`), as Ollama stops then."""
        deadline = time.monotonic() + seconds
        while True:
            if self.fake._halt.is_set():
                return True
            if self._client_gone():
                self.fake._record_abandoned(path)
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.fake._halt.wait(min(left, 0.02))

    def _client_gone(self) -> bool:
        """The request was read whole: a readable socket now is the client's end of stream."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


_MODEL_PATHS = {"/api/show", "/api/embed", "/api/embeddings", "/api/chat", "/api/generate"}
_ROUTES: dict[tuple[str, str], Callable[[_Handler, dict[str, Any]], None]] = {
    ("GET", "/api/version"): _Handler._version,
    ("GET", "/api/tags"): _Handler._tags,
    ("POST", "/api/show"): _Handler._show,
    ("POST", "/api/embed"): _Handler._embed,
    ("POST", "/api/embeddings"): _Handler._embeddings,
    ("POST", "/api/chat"): _Handler._chat,
    ("POST", "/api/generate"): _Handler._generate,
}


def _details(model: str) -> dict[str, Any]:
    family = _traits(model)[0]
    return {
        "parent_model": "",
        "format": "gguf",
        "family": family,
        "families": [family],
        "parameter_size": "137M",
        "quantization_level": "F16",
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the fake in the foreground until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(description="A fake Ollama server for askvault tests.")
    parser.add_argument("--port", type=int, default=11435)
    parser.add_argument("--dimension", type=int, default=DEFAULT_DIMENSION)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated")
    parser.add_argument("--token-delay-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    fake = FakeOllama(port=args.port, dimension=args.dimension, models=args.models.split(","))
    fake.token_delay_s = args.token_delay_s
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with fake:
        print(f"fake ollama listening on {fake.url}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
