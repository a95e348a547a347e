"""The fake Ollama server speaks what the official client expects, and fails on demand."""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import ollama
import pytest

from support.fake_ollama import FakeOllama, extractive_reply, fake_embedding

CHAT = "llama3.2"
EMBED = "nomic-embed-text"


def _client(server: FakeOllama, timeout_s: float = 5.0) -> ollama.Client:
    return ollama.Client(host=server.url, timeout=timeout_s)


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def test_fake_embedding_is_deterministic_normalised_and_word_sensitive() -> None:
    a = fake_embedding("Obsidian embeds show another note inline")
    assert a == fake_embedding("Obsidian embeds show another note inline")
    assert math.isclose(sum(x * x for x in a), 1.0)
    near = fake_embedding("embeds show a note inline in Obsidian")
    far = fake_embedding("sourdough bread needs a long cold fermentation")
    assert _cosine(a, near) > _cosine(a, far) + 0.3


def test_fake_embedding_of_text_without_words_is_still_a_unit_vector() -> None:
    assert fake_embedding("   ...  ", 8) == [1.0] + [0.0] * 7


def test_embed_returns_one_vector_per_input_and_logs_them(fake_ollama: FakeOllama) -> None:
    with _client(fake_ollama) as client:
        single = client.embed(model=EMBED, input="alpha beta")
        many = client.embed(model=f"{EMBED}:latest", input=["alpha beta", "gamma"])
    assert single.embeddings[0] == many.embeddings[0] == fake_ollama.vector("alpha beta", EMBED)
    assert len(many.embeddings) == 2 and len(many.embeddings[1]) == 64
    assert fake_ollama.embed_calls == 2
    assert fake_ollama.embedded_inputs == ["alpha beta", "alpha beta", "gamma"]
    assert fake_ollama.requests_to("/api/embed")[1]["input"] == ["alpha beta", "gamma"]


def test_legacy_embeddings_endpoint_and_per_model_dimension(fake_ollama: FakeOllama) -> None:
    fake_ollama.dimensions["all-minilm"] = 16
    with _client(fake_ollama) as client:
        vector = client.embeddings(model="all-minilm", prompt="hello there").embedding
    assert len(vector) == 16
    assert fake_ollama.embedded_inputs == ["hello there"]


def test_embed_refuses_over_long_input_only_when_truncate_is_false(fake_ollama: FakeOllama) -> None:
    fake_ollama.context_lengths[EMBED] = 5  # 20 characters
    long_text = "word " * 10
    with _client(fake_ollama) as client:
        with pytest.raises(ollama.ResponseError) as refused:
            client.embed(model=EMBED, input=long_text, truncate=False)
        clipped = client.embed(model=EMBED, input=long_text).embeddings[0]
    assert refused.value.status_code == 400
    assert clipped == fake_ollama.vector(long_text[:20], EMBED)


def test_unknown_model_is_a_404_worded_like_ollama(fake_ollama: FakeOllama) -> None:
    with _client(fake_ollama) as client:
        with pytest.raises(ollama.ResponseError) as missing:
            client.embed(model="nope", input="x")
    assert missing.value.status_code == 404
    assert missing.value.error == 'model "nope" not found, try pulling it first'


def test_unknown_path_is_a_plain_404_and_unknown_fault_is_refused(fake_ollama: FakeOllama) -> None:
    response = httpx.get(f"{fake_ollama.url}/api/nothing", timeout=5)
    assert (response.status_code, response.text) == (404, "404 page not found")
    with pytest.raises(ValueError, match="unknown fault"):
        fake_ollama.set_fault("flaky")


def test_show_of_an_unknown_model_is_a_404(fake_ollama: FakeOllama) -> None:
    with _client(fake_ollama) as client:
        with pytest.raises(ollama.ResponseError) as missing:
            client.show("nope")
    assert missing.value.status_code == 404


def test_tags_show_and_version_parse_with_the_client(fake_ollama: FakeOllama) -> None:
    with _client(fake_ollama) as client:
        names = [m.model for m in client.list().models]
        shown = client.show(EMBED)
    assert names == [
        "fake-embed:latest",
        "nomic-embed-text:latest",
        "all-minilm:latest",
        "llama3.2:latest",
    ]
    assert shown.modelinfo is not None
    assert shown.modelinfo["nomic-bert.embedding_length"] == 64
    assert shown.details is not None and shown.details.family == "nomic-bert"
    version = httpx.get(f"{fake_ollama.url}/api/version", timeout=5).json()
    assert version == {"version": fake_ollama.version}


def test_tags_carry_a_digest_that_can_be_changed(fake_ollama: FakeOllama) -> None:
    fake_ollama.digests["nomic-embed-text:latest"] = "sha256-new"
    with _client(fake_ollama) as client:
        digests = {m.model: m.digest for m in client.list().models}
    assert digests["nomic-embed-text:latest"] == "sha256-new"
    assert len(digests["llama3.2:latest"] or "") == 64


def test_chat_streams_pieces_then_a_done_chunk(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_script = ["Embeds show a note [[Embeds]]."]
    with _client(fake_ollama) as client:
        parts = list(client.chat(model=CHAT, messages=[], stream=True))
    assert "".join(p.message.content or "" for p in parts) == "Embeds show a note [[Embeds]]."
    assert [p.done for p in parts] == [False] * (len(parts) - 1) + [True]
    assert len(parts) > 2


def test_chat_script_is_consumed_in_order_then_falls_back_to_extractive(
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.chat_script = ["first", "second"]
    prompt = [{"role": "user", "content": "[[Cats]] Cats sleep a lot. They purr."}]
    with _client(fake_ollama) as client:
        replies = [client.chat(model=CHAT, messages=prompt).message.content for _ in range(3)]
    assert replies == ["first", "second", "Cats sleep a lot [[Cats]]."]


def test_chat_script_may_be_a_callable_of_the_messages(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_script = lambda messages: f"{len(messages)} messages"
    with _client(fake_ollama) as client:
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        reply = client.chat(model=CHAT, messages=messages)
    assert reply.message.content == "2 messages"


def test_extractive_reply_cites_first_link_or_says_no_answer() -> None:
    prompt = [{"content": "See [[A#H|label]]: Alpha is first. Beta."}]
    assert extractive_reply(prompt) == "Alpha is first [[A#H]]."
    assert "do not contain" in extractive_reply([{"content": "no links here"}])


def test_generate_answers_with_a_response_field(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_script = ["hello"]
    with _client(fake_ollama) as client:
        assert client.generate(model=CHAT, prompt="hi").response == "hello"


def test_fault_500_lasts_count_requests(fake_ollama: FakeOllama) -> None:
    fake_ollama.set_fault("500", count=1)
    with _client(fake_ollama) as client:
        with pytest.raises(ollama.ResponseError) as failed:
            client.list()
        assert failed.value.status_code == 500
        assert client.list().models


def test_fault_404_and_paths_filter(fake_ollama: FakeOllama) -> None:
    fake_ollama.set_fault("404", paths=["/api/embed"])
    with _client(fake_ollama) as client:
        assert client.list().models
        with pytest.raises(ollama.ResponseError) as missing:
            client.embed(model=EMBED, input="x")
    assert missing.value.status_code == 404


def test_fault_slow_outlasts_a_client_timeout(fake_ollama: FakeOllama) -> None:
    fake_ollama.set_fault("slow", delay_s=5.0)
    started = time.monotonic()
    with _client(fake_ollama, timeout_s=0.3) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.list()
    assert time.monotonic() - started < 2.0


def test_fault_down_refuses_connections_and_recover_listens_on_same_port(
    fake_ollama: FakeOllama,
) -> None:
    port = fake_ollama.port
    with _client(fake_ollama) as client:
        assert client.list().models  # a pooled keep-alive connection now exists
        fake_ollama.set_fault("down")
        with pytest.raises(ConnectionError):
            client.list()
        fake_ollama.recover()
        assert fake_ollama.port == port
        assert client.list().models


def test_fault_die_midstream_drops_the_connection(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_script = ["one two three four five six"]
    fake_ollama.set_fault("die_midstream", count=2)
    seen: list[str] = []
    with _client(fake_ollama) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            for part in client.chat(model=CHAT, messages=[], stream=True):
                seen.append(part.message.content or "")
        with pytest.raises(httpx.RemoteProtocolError):
            client.list()
    assert seen and not any(p.endswith("six") for p in seen)


def test_token_delay_spaces_out_stream_chunks(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_script = ["a b c"]
    fake_ollama.token_delay_s = 0.05
    started = time.monotonic()
    with _client(fake_ollama) as client:
        list(client.chat(model=CHAT, messages=[], stream=True))
    assert time.monotonic() - started >= 0.15


def _post_chat_and_hang_up(server: FakeOllama, after: str) -> None:
    """A raw client: sends a streamed chat request, waits for `after` (the request seen, or
    a first piece read), then closes its socket."""
    body = b'{"model": "llama3.2", "messages": [], "stream": true}'
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(
            b"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        if after == "a piece":
            assert sock.recv(4096)
        else:
            while not server.requests_to("/api/chat"):
                time.sleep(0.01)


@pytest.mark.parametrize("when", ["computing the first piece", "between pieces"])
def test_a_client_that_hangs_up_is_recorded_as_abandoned(
    fake_ollama: FakeOllama, when: str
) -> None:
    if when == "computing the first piece":
        fake_ollama.set_fault("slow", delay_s=30.0, paths=("/api/chat",))
    else:
        fake_ollama.chat_script = ["one two three four"]
        fake_ollama.token_delay_s = 30.0
    _post_chat_and_hang_up(fake_ollama, "the request" if when.startswith("comp") else "a piece")
    assert fake_ollama.hung_up.wait(5)
    assert fake_ollama.abandoned == ["/api/chat"]


def test_a_client_that_reads_its_whole_reply_is_not_abandoned(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_script = ["a b c"]
    fake_ollama.token_delay_s = 0.01
    with _client(fake_ollama) as client:
        list(client.chat(model=CHAT, messages=[], stream=True))
    assert fake_ollama.abandoned == [] and not fake_ollama.hung_up.is_set()


def test_stop_joins_every_thread_even_during_a_slow_answer() -> None:
    before = set(threading.enumerate())
    server = FakeOllama().start()
    server.set_fault("slow", delay_s=30)
    caller = threading.Thread(target=lambda: _swallow(server.url))
    caller.start()
    while not server.requests:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    caller.join(5)
    assert time.monotonic() - started < 2.0
    assert set(threading.enumerate()) == before


def _swallow(url: str) -> None:
    try:
        httpx.get(f"{url}/api/tags", timeout=10)
    except httpx.HTTPError:
        pass


def test_socket_guard_refuses_and_records_a_remote_connect(socket_guard: object) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(ConnectionRefusedError):
            sock.connect(("10.1.2.3", 80))
    finally:
        sock.close()
    violations = socket_guard.violations  # type: ignore[attr-defined]
    assert violations == ["connect ('10.1.2.3', 80)"]
    violations.clear()  # this test provoked it on purpose


def test_runs_as_a_script_until_sigterm() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = Path(__file__).parents[1] / "support" / "fake_ollama.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"fake ollama listening on http://127.0.0.1:{port}"
        with ollama.Client(host=f"http://127.0.0.1:{port}", timeout=5) as client:
            assert client.embed(model=EMBED, input="x").embeddings
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
