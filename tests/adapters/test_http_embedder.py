"""The standard library's embedder (a search's query, issue 22 item 6) against the official
client's, on the fake Ollama: the same vectors, requests and errors, message for message;
and what only the HTTP transport does itself (no proxy, the API key, a host's path, a reply
that is not Ollama's JSON)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from askvault.adapters.ollama import OllamaEmbedder
from askvault.adapters.ollama_embed import HttpEmbedder, HttpTransport, ModelEmbedder
from askvault.app.clients import OllamaClients
from askvault.errors import InputRefused, ModelMissing, OllamaError, OllamaUnavailable
from support.fake_ollama import FakeOllama
from support.settings_factory import settings_for

EMBED = "nomic-embed-text"
QUERIES = ["which tools", "", "ünïcode and 漢字 and emoji 🌱", " ".join(["long"] * 400)]


def _both(url: str, model: str = EMBED) -> list[ModelEmbedder]:
    return [OllamaEmbedder(url, model, timeout_s=2.0), HttpEmbedder(url, model, timeout_s=2.0)]


def _failure(call: Callable[[], object]) -> tuple[type, str, str | None]:
    with pytest.raises(OllamaError) as failed:
        call()
    return type(failed.value), failed.value.message, failed.value.hint


def test_both_embedders_give_the_same_vectors_and_send_the_same_requests(
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.context_lengths[EMBED] = 100  # the long query is split and pooled
    sent: list[list[tuple[str, Any]]] = []
    results = []
    for embedder in _both(fake_ollama.url):
        before = len(fake_ollama.requests)
        with embedder:
            results.append(
                (
                    [embedder.embed_query(q) for q in QUERIES],
                    embedder.embed_documents(QUERIES),
                    embedder.fingerprint(),
                )
            )
        sent.append(fake_ollama.requests[before:])
    assert results[0] == results[1]
    assert sent[0] == sent[1]
    assert [path for path, _ in sent[0]][:2] == ["/api/show", "/api/embed"]


@pytest.mark.parametrize(
    "fault",
    ["down", "slow", "404", "500", "die_midstream", "model not pulled", "unknown route"],
)
def test_both_embedders_fail_alike_with_the_same_message_and_hint(
    fake_ollama: FakeOllama, fault: str, tmp_path: Path
) -> None:
    url = fake_ollama.url
    model = EMBED
    if fault == "model not pulled":
        model = "mxbai-embed-large"
    elif fault == "unknown route":
        url += "/not-ollama"  # a host with a path: every call goes under it, as the client's
    elif fault == "slow":
        fake_ollama.set_fault("slow", delay_s=3.0)
    elif fault != "down":
        fake_ollama.set_fault(fault)
    if fault == "down":
        fake_ollama.set_fault("down")
    timeout = 0.3 if fault == "slow" else 2.0
    failures = {}
    for name, make in (("client", OllamaEmbedder), ("http", HttpEmbedder)):
        with make(url, model, timeout_s=timeout, max_input_tokens=100) as embedder:
            failures[name] = [
                _failure(lambda e=embedder: e.embed_query("x")),  # type: ignore[misc]
                _failure(lambda e=embedder: e.fingerprint()),  # type: ignore[misc]
            ]
    assert failures["http"] == failures["client"]
    kind, message, hint = failures["http"][0]
    expected = {
        "down": (OllamaUnavailable, f"Ollama is not reachable at {url} (connection refused)"),
        "slow": (OllamaUnavailable, f"Ollama at {url} sent nothing for 0.3 s"),
        "404": (ModelMissing, f"model '{model}' is not available on Ollama at {url}"),
        "500": (
            InputRefused,
            f"Ollama at {url} refused the request: fake ollama: injected internal server error"
            " (status 500)",
        ),
        "model not pulled": (ModelMissing, f"model '{model}' is not available on Ollama at {url}"),
        "unknown route": (ModelMissing, f"model '{model}' is not available on Ollama at {url}"),
    }
    if fault == "die_midstream":
        assert kind is OllamaUnavailable
        assert message.startswith(
            f"Ollama is not reachable at {url} (peer closed connection without sending"
            " complete message body (received "
        )
    else:
        assert (kind, message) == expected[fault]
    assert hint == "is `ollama serve` running? Try `askvault doctor`" or kind is ModelMissing


def test_the_http_transport_goes_to_ollama_directly_whatever_the_proxy_settings_say(
    fake_ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # a proxy that is not there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with HttpEmbedder(fake_ollama.url, EMBED, timeout_s=2.0) as embedder:
        assert embedder.embed_query("q") == fake_ollama.vector("search_query: q", EMBED)


def test_a_query_for_another_model_s_vectors_uses_that_model_and_its_prefix(
    fake_ollama: FakeOllama,
) -> None:
    """While the index still searches nomic-embed-text's vectors, a client configured for
    all-minilm embeds the query as nomic-embed-text would, over its own connection."""
    with HttpEmbedder(fake_ollama.url, "all-minilm", timeout_s=2.0) as embedder:
        assert embedder.embed_query("q") == fake_ollama.vector("q", "all-minilm")
        old = embedder.embed_query("q", model=EMBED)
        assert old == fake_ollama.vector("search_query: q", EMBED)
        assert embedder.embed_query("q", model="all-minilm:latest") == embedder.embed_query("q")
    models = [body["model"] for body in fake_ollama.requests_to("/api/embed")]
    assert models == ["all-minilm", EMBED, "all-minilm", "all-minilm"]


class _Recorder(BaseHTTPRequestHandler):
    """One canned answer for every request; the requests' headers and bodies recorded."""

    answer: tuple[int, bytes] = (200, b"{}")
    seen: list[tuple[str, dict[str, str], Any]] = []

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self._reply(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._reply(json.loads(self.rfile.read(length)))

    def _reply(self, body: Any) -> None:
        type(self).seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        status, data = type(self).answer
        if status == 0:  # hang up without a word
            self.close_connection = True
            return
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def canned() -> Iterator[tuple[str, type[_Recorder]]]:
    handler = type("Handler", (_Recorder,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_http_transport_sends_the_api_key_and_json_headers_and_keeps_a_hosts_path(
    canned: tuple[str, type[_Recorder]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, handler = canned
    handler.answer = (200, b'{"embeddings": [[1, 0.5]]}')
    monkeypatch.setenv("OLLAMA_API_KEY", "secret-token")
    transport = HttpTransport(url + "/ollama/", timeout_s=2.0)
    assert transport.embed("m", ["a"]) == [[1.0, 0.5]]
    path, headers, body = handler.seen[-1]
    assert path == "/ollama/api/embed"
    assert body == {"model": "m", "input": ["a"], "truncate": False}
    assert headers["authorization"] == "Bearer secret-token"
    assert headers["content-type"] == headers["accept"] == "application/json"
    monkeypatch.delenv("OLLAMA_API_KEY")
    transport.embed("m", ["a"])
    assert "authorization" not in handler.seen[-1][1]


@pytest.mark.parametrize(
    ("answer", "path"),
    [
        (b"not json at all", "/api/embed"),
        (b"[1, 2]", "/api/embed"),
        (b'{"embeddings": "no"}', "/api/embed"),
        (b'{"embeddings": [["x"]]}', "/api/embed"),
        (b'{"models": 3}', "/api/tags"),
    ],
)
def test_a_reply_that_is_not_ollamas_json_is_unavailable_not_a_crash(
    canned: tuple[str, type[_Recorder]], answer: bytes, path: str
) -> None:
    url, handler = canned
    handler.answer = (200, answer)
    with HttpEmbedder(url, EMBED, timeout_s=2.0, max_input_tokens=50) as embedder:
        call = embedder.fingerprint if path == "/api/tags" else lambda: embedder.embed_query("q")
        kind, message, hint = _failure(call)
    assert kind is OllamaUnavailable
    assert message == f"Ollama at {url} answered {path} with something else than its API's JSON"
    assert hint and "askvault doctor" in hint


@pytest.mark.parametrize(
    ("status", "body", "kind", "said"),
    [
        (400, b'{"error": "input too long"}', InputRefused, "refused the request: input too long"),
        (503, b"busy\x1b[31m", OllamaUnavailable, "failed: busy (status 503)"),
        (502, b'{"error": {"nested": 1}}', OllamaUnavailable, "failed: {'nested': 1}"),
    ],
)
def test_an_error_answer_is_told_with_the_servers_words_without_control_characters(
    canned: tuple[str, type[_Recorder]], status: int, body: bytes, kind: type, said: str
) -> None:
    url, handler = canned
    handler.answer = (status, body)
    with HttpEmbedder(url, EMBED, timeout_s=2.0, max_input_tokens=50) as embedder:
        found, message, _ = _failure(lambda: embedder.embed_query("q"))
    assert found is kind and said in message and "\x1b" not in message


def test_a_server_that_hangs_up_before_answering_is_told_in_the_clients_words(
    canned: tuple[str, type[_Recorder]],
) -> None:
    url, handler = canned
    handler.answer = (0, b"")
    failures = []
    for make in (OllamaEmbedder, HttpEmbedder):
        with make(url, EMBED, timeout_s=2.0, max_input_tokens=50) as embedder:
            failures.append(_failure(lambda e=embedder: e.embed_query("q")))  # type: ignore[misc]
    assert failures[0] == failures[1]
    assert failures[1][:2] == (
        OllamaUnavailable,
        f"Ollama is not reachable at {url} (Server disconnected without sending a response.)",
    )


def test_the_query_embedder_speaks_http_itself_and_keeps_the_client_for_https(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    plain = OllamaClients(settings_for(tmp_path, tmp_path / "s", fake_ollama.url))
    embedder = plain.query_embedder()
    assert isinstance(embedder, HttpEmbedder)
    # search.embed_timeout_s bounds the wait, as it did with the official client.
    assert embedder.timeout_s == min(5.0, plain.settings.search.embed_timeout_s)
    secure = OllamaClients(settings_for(tmp_path, tmp_path / "s", "https://localhost:9"))
    lazy = secure.query_embedder()
    assert not isinstance(lazy, ModelEmbedder)  # built (with the client) on first use
    lazy.close()
