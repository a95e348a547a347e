"""The Ollama adapter, with the real `ollama` client against the fake server on 127.0.0.1."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from askvault.adapters.ollama import (
    OllamaEmbedder,
    OllamaGenerator,
    OllamaStatus,
    check_host_allowed,
    embed_prefixes,
    model_present,
    probe_ollama,
    split_for_embedding,
)
from askvault.adapters.ollama_embed import HttpEmbedder, ModelEmbedder
from askvault.errors import ConfigError, ModelMissing, OllamaUnavailable, RemoteHostRefused
from support.fake_ollama import FakeOllama

EMBED = "nomic-embed-text"
CHAT = "llama3.2"
DOC = "search_document: "
QUERY = "search_query: "


Maker = Callable[..., ModelEmbedder]


@pytest.fixture(params=["client", "http"])
def make_embedder(request: pytest.FixtureRequest) -> Maker:
    """Both embedders, each test run with each: the official client's (indexing, answers)
    and the standard library's (a search's query, issue 22), which must behave alike."""
    return OllamaEmbedder if request.param == "client" else HttpEmbedder


@pytest.fixture
def embedder(fake_ollama: FakeOllama, make_embedder: Maker) -> Iterator[ModelEmbedder]:
    with make_embedder(fake_ollama.url, EMBED, timeout_s=2.0, batch_size=2) as made:
        yield made


@pytest.fixture
def generator(fake_ollama: FakeOllama) -> Iterator[OllamaGenerator]:
    with OllamaGenerator(fake_ollama.url, timeout_s=2.0) as made:
        yield made


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("", "http://127.0.0.1:11434"),
        ("127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("localhost", "http://localhost:11434"),
        ("LOCALHOST:9000", "http://localhost:9000"),
        ("http://[::1]:11434", "http://[::1]:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:11500", "http://127.0.0.1:11500"),
        ("http://127.0.0.1", "http://127.0.0.1:80"),
        ("https://localhost/ollama/", "https://localhost:443/ollama"),
        (":11435", "http://127.0.0.1:11435"),
        ("127.8.9.10", "http://127.8.9.10:11434"),
        ("[::ffff:127.0.0.1]", "http://[::ffff:127.0.0.1]:11434"),
    ],
)
def test_check_host_allowed_normalises_loopback_hosts(given: str, expected: str) -> None:
    assert check_host_allowed(given, allow_remote=False) == expected


@pytest.mark.parametrize(
    "host",
    ["10.1.2.3", "http://example.com:11434", "example.com", "192.168.1.5:11434", "[2001:db8::1]"],
)
def test_check_host_allowed_refuses_remote_hosts_with_a_hint(host: str) -> None:
    with pytest.raises(RemoteHostRefused) as refused:
        check_host_allowed(host, allow_remote=False)
    assert "allow_remote_ollama = true" in refused.value.hint


def test_check_host_allowed_accepts_remote_when_allowed() -> None:
    assert check_host_allowed("example.com", allow_remote=True) == "http://example.com:11434"


@pytest.mark.parametrize("host", ["ftp://localhost", "localhost:notaport"])
def test_check_host_allowed_rejects_malformed_hosts(host: str) -> None:
    with pytest.raises(ConfigError):
        check_host_allowed(host, allow_remote=False)


@pytest.mark.parametrize("host", ["http://10.1.2.3:11434", "http://example.com:11434"])
def test_remote_host_is_refused_before_any_connection(host: str) -> None:
    # The autouse socket guard fails this test if a connect or DNS lookup is attempted.
    with pytest.raises(RemoteHostRefused):
        OllamaEmbedder(host, EMBED, timeout_s=1.0)
    with pytest.raises(RemoteHostRefused):
        HttpEmbedder(host, EMBED, timeout_s=1.0)
    with pytest.raises(RemoteHostRefused):
        OllamaGenerator(host, timeout_s=1.0)
    status = probe_ollama(host, timeout_s=1.0, allow_remote=False)
    assert not status.reachable and status.error and "loopback" in status.error
    assert status.hint and "allow_remote_ollama" in status.hint


def test_embed_prefixes_match_model_names_without_tags() -> None:
    assert embed_prefixes("nomic-embed-text:latest") == (QUERY, DOC)
    assert embed_prefixes("embeddinggemma:300m")[1] == "title: none | text: "
    assert embed_prefixes("mxbai-embed-large")[0].startswith("Represent this sentence")
    assert embed_prefixes("all-minilm") == ("", "")


def test_embed_documents_is_deterministic_and_batched(
    fake_ollama: FakeOllama, embedder: ModelEmbedder
) -> None:
    texts = [f"note number {i} about gardens" for i in range(5)]
    first = embedder.embed_documents(texts)
    again = embedder.embed_documents(texts)
    assert first == again
    assert first[3] == fake_ollama.vector(DOC + texts[3], EMBED)
    assert fake_ollama.embed_calls == 6  # 3 batches of at most 2, twice
    bodies = fake_ollama.requests_to("/api/embed")
    assert [len(b["input"]) for b in bodies[:3]] == [2, 2, 1]
    assert all(b["truncate"] is False for b in bodies)


def test_embed_documents_of_nothing_makes_no_call(
    fake_ollama: FakeOllama, embedder: ModelEmbedder
) -> None:
    assert embedder.embed_documents([]) == []
    assert fake_ollama.requests == []


def test_query_and_document_prefixes_are_sent(
    fake_ollama: FakeOllama,
    embedder: ModelEmbedder,
) -> None:
    embedder.embed_documents(["garden tools"])
    vector = embedder.embed_query("which tools")
    assert fake_ollama.embedded_inputs == [DOC + "garden tools", QUERY + "which tools"]
    assert vector == fake_ollama.vector(QUERY + "which tools", EMBED)


def test_model_without_prefixes_gets_raw_text(
    make_embedder: Maker, fake_ollama: FakeOllama
) -> None:
    with make_embedder(fake_ollama.url, "all-minilm", timeout_s=2.0) as plain:
        plain.embed_query("raw question")
    assert fake_ollama.embedded_inputs == ["raw question"]


def test_over_long_input_is_split_and_pooled_never_truncated(
    make_embedder: Maker, fake_ollama: FakeOllama
) -> None:
    fake_ollama.context_lengths[EMBED] = 20  # the fake refuses inputs over 80 characters
    long_text = " ".join(f"word{i}" for i in range(60))  # ~400 characters
    with make_embedder(fake_ollama.url, EMBED, timeout_s=2.0, max_input_tokens=20) as small:
        [vector] = small.embed_documents([long_text])
    sent = fake_ollama.embedded_inputs
    assert len(sent) > 1
    assert all(s.startswith(DOC) and len(s) <= 60 for s in sent)
    assert "".join(s.removeprefix(DOC) for s in sent) == long_text
    assert math.isclose(sum(x * x for x in vector), 1.0)
    assert vector != fake_ollama.vector(DOC + long_text, EMBED)


def test_input_budget_defaults_to_the_models_context_length(
    make_embedder: Maker, fake_ollama: FakeOllama
) -> None:
    fake_ollama.context_lengths[EMBED] = 30
    with make_embedder(fake_ollama.url, EMBED, timeout_s=2.0) as default:
        assert default.max_input_tokens() == 30
        default.embed_documents(["x" * 500])  # would be a 400 from the fake if sent whole
    assert len(fake_ollama.embedded_inputs) > 1


def test_input_budget_is_capped_at_ollamas_default_window(
    make_embedder: Maker, fake_ollama: FakeOllama
) -> None:
    with make_embedder(fake_ollama.url, CHAT, timeout_s=2.0) as big:
        assert big.max_input_tokens() == 2048


def test_split_for_embedding_cuts_at_whitespace_and_keeps_every_character() -> None:
    text = "aaaa bbbb cccc dddd"
    pieces = split_for_embedding(text, 10)
    assert pieces == ["aaaa bbbb ", "cccc dddd"]
    assert split_for_embedding("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert split_for_embedding("short", 10) == ["short"]


def test_fingerprint_has_the_digest_and_the_length_of_a_real_vector_and_is_cached(
    make_embedder: Maker,
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.dimensions[EMBED] = 32
    with make_embedder(fake_ollama.url, f"{EMBED}:latest", timeout_s=2.0) as tagged:
        first = tagged.fingerprint()
        assert tagged.fingerprint() is first
        assert fake_ollama.embed_calls == 1  # one probe, then cached
        assert tagged.reported_dimension() == 32
    assert first.digest == fake_ollama.digest(EMBED)
    assert first.dimension == 32
    assert first.model == f"{EMBED}:latest"


def test_a_model_whose_vectors_disagree_with_its_reported_length_is_taken_at_its_vectors(
    make_embedder: Maker, fake_ollama: FakeOllama, caplog: pytest.LogCaptureFixture
) -> None:
    # /api/show says 768, the vectors have 64: every one would be refused as the wrong size.
    fake_ollama.reported_dimensions[EMBED] = 768
    with make_embedder(fake_ollama.url, EMBED, timeout_s=2.0) as embedder:
        assert embedder.fingerprint().dimension == 64
        assert embedder.reported_dimension() == 768
    assert "reports 768 dimensions for nomic-embed-text but its vectors have 64" in caplog.text


def test_missing_model_is_model_missing(make_embedder: Maker, fake_ollama: FakeOllama) -> None:
    with make_embedder(fake_ollama.url, "mxbai-embed-large", timeout_s=2.0) as absent:
        with pytest.raises(ModelMissing) as by_fingerprint:
            absent.fingerprint()
        with pytest.raises(ModelMissing):
            absent.embed_documents(["x"])
    assert fake_ollama.url in by_fingerprint.value.message
    assert by_fingerprint.value.hint == "run `ollama pull mxbai-embed-large`"


def test_down_is_unavailable_fast_and_recovers(
    fake_ollama: FakeOllama,
    embedder: ModelEmbedder,
) -> None:
    embedder.embed_documents(["warm the pool"])
    fake_ollama.set_fault("down")
    started = time.monotonic()
    with pytest.raises(OllamaUnavailable) as down:
        embedder.embed_documents(["x"])
    assert time.monotonic() - started < 1.0
    assert fake_ollama.url in down.value.message
    assert "ollama serve" in down.value.hint and "askvault doctor" in down.value.hint
    fake_ollama.recover()
    assert embedder.embed_documents(["x"]) == [fake_ollama.vector(DOC + "x", EMBED)]


def test_slow_beyond_timeout_is_unavailable(make_embedder: Maker, fake_ollama: FakeOllama) -> None:
    fake_ollama.set_fault("slow", delay_s=5.0)
    with make_embedder(fake_ollama.url, EMBED, timeout_s=0.3, max_input_tokens=100) as hasty:
        started = time.monotonic()
        with pytest.raises(OllamaUnavailable, match="sent nothing for 0.3 s"):
            hasty.embed_query("x")
    assert time.monotonic() - started < 2.0


def test_server_error_is_unavailable(fake_ollama: FakeOllama, embedder: ModelEmbedder) -> None:
    fake_ollama.set_fault("500", count=1)
    with pytest.raises(OllamaUnavailable, match="status 500"):
        embedder.embed_documents(["x"])
    assert embedder.embed_documents(["x"])


def test_response_cut_short_is_unavailable(
    fake_ollama: FakeOllama,
    embedder: ModelEmbedder,
) -> None:
    embedder.max_input_tokens()
    fake_ollama.set_fault("die_midstream", count=1)
    with pytest.raises(OllamaUnavailable):
        embedder.embed_documents(["x"])


def test_stream_yields_the_reply_and_sends_num_ctx(
    fake_ollama: FakeOllama, generator: OllamaGenerator
) -> None:
    fake_ollama.chat_script = ["Embeds show notes inline [[Embeds]]."]
    pieces = list(generator.stream([{"role": "user", "content": "q"}], model=CHAT, num_ctx=4096))
    assert len(pieces) > 1
    assert "".join(pieces) == "Embeds show notes inline [[Embeds]]."
    [body] = fake_ollama.requests_to("/api/chat")
    assert body["options"]["num_ctx"] == 4096 and body["stream"] is True


def test_stream_keeps_configured_options(fake_ollama: FakeOllama) -> None:
    with OllamaGenerator(fake_ollama.url, timeout_s=2.0, options={"temperature": 0.1}) as warm:
        list(warm.stream([], model=CHAT, num_ctx=2048))
    [body] = fake_ollama.requests_to("/api/chat")
    assert body["options"] == {"temperature": 0.1, "num_ctx": 2048}


def test_stream_that_dies_midway_raises_after_partial_text(
    fake_ollama: FakeOllama, generator: OllamaGenerator
) -> None:
    fake_ollama.chat_script = ["one two three four five six"]
    fake_ollama.set_fault("die_midstream")
    seen: list[str] = []
    with pytest.raises(OllamaUnavailable):
        for piece in generator.stream([], model=CHAT, num_ctx=2048):
            seen.append(piece)
    assert seen and "".join(seen) != "one two three four five six"


def test_stream_missing_model_is_model_missing(generator: OllamaGenerator) -> None:
    with pytest.raises(ModelMissing, match="qwen9"):
        list(generator.stream([], model="qwen9", num_ctx=2048))


def test_stream_when_down_is_unavailable(
    fake_ollama: FakeOllama,
    generator: OllamaGenerator,
) -> None:
    fake_ollama.set_fault("down")
    with pytest.raises(OllamaUnavailable, match="not reachable"):
        list(generator.stream([], model=CHAT, num_ctx=2048))


def test_stream_slower_than_timeout_between_pieces_is_unavailable(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_script = ["a b c d"]
    fake_ollama.token_delay_s = 1.0
    with OllamaGenerator(fake_ollama.url, timeout_s=0.2) as hasty:
        with pytest.raises(OllamaUnavailable, match="sent nothing for 0.2 s"):
            list(hasty.stream([], model=CHAT, num_ctx=2048))


def test_a_slow_first_token_is_waited_for_up_to_the_silence_limit(fake_ollama: FakeOllama) -> None:
    # A CPU reads a long prompt before it says anything: that wait is not a dead server.
    fake_ollama.chat_script = ["a b c"]
    fake_ollama.set_fault("slow", delay_s=1.0, paths=("/api/chat",), count=1)
    with OllamaGenerator(fake_ollama.url, timeout_s=0.2, silence_s=5.0) as patient:
        assert "".join(patient.stream([], model=CHAT, num_ctx=2048)) == "a b c"
        assert patient.usage.prompt_tokens == 10 and patient.usage.reply_tokens == 3


def test_a_reply_slower_in_total_than_the_silence_limit_is_not_cut_off(
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.chat_script = ["a b c d e f"]
    fake_ollama.token_delay_s = 0.15  # ~0.9 s in all, never 0.5 s of silence
    with OllamaGenerator(fake_ollama.url, timeout_s=0.2, silence_s=0.5) as patient:
        assert "".join(patient.stream([], model=CHAT, num_ctx=2048)) == "a b c d e f"


def test_silence_longer_than_the_limit_is_unavailable(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_script = ["a b c"]
    fake_ollama.set_fault("slow", delay_s=2.0, paths=("/api/chat",), count=1)
    with OllamaGenerator(fake_ollama.url, timeout_s=5.0, silence_s=0.3) as hasty:
        with pytest.raises(OllamaUnavailable, match="sent nothing for 0.3 s"):
            list(hasty.stream([], model=CHAT, num_ctx=2048))


def test_stream_abandoned_early_closes_cleanly(
    fake_ollama: FakeOllama,
    generator: OllamaGenerator,
) -> None:
    fake_ollama.chat_script = ["a b c d e f", "second reply"]
    stream = generator.stream([], model=CHAT, num_ctx=2048)
    assert next(stream) == "a "
    stream.close()  # type: ignore[attr-defined]
    assert "".join(generator.stream([], model=CHAT, num_ctx=2048)) == "second reply"


def _stream_on_a_thread(
    generator: OllamaGenerator, stream: Iterator[str]
) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            list(stream)
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            errors.append(exc)

    thread = threading.Thread(target=consume, name="reply-consumer")
    thread.start()
    return thread, errors


def test_abort_closes_a_reply_the_model_has_not_started_and_ollama_sees_its_client_go(
    fake_ollama: FakeOllama,
) -> None:
    # The model still reading the prompt: no piece arrives for a minute, so no check
    # between pieces could stop it; abort() must close the connection itself.
    fake_ollama.set_fault("slow", delay_s=60.0, paths=("/api/chat",))
    with OllamaGenerator(fake_ollama.url, timeout_s=2.0, silence_s=60.0) as patient:
        thread, errors = _stream_on_a_thread(patient, patient.stream([], model=CHAT, num_ctx=2048))
        while not fake_ollama.requests_to("/api/chat"):
            time.sleep(0.01)
        patient.abort()
        assert fake_ollama.hung_up.wait(10), "Ollama was never told its client left"
        thread.join(10)
        assert not thread.is_alive()
    assert fake_ollama.abandoned == ["/api/chat"]
    assert len(errors) == 1 and isinstance(errors[0], OllamaUnavailable)
    assert "stopped (cancelled)" in errors[0].message


def test_abort_before_a_stream_starts_sends_no_request_and_the_next_stream_is_whole(
    fake_ollama: FakeOllama, generator: OllamaGenerator
) -> None:
    fake_ollama.chat_script = ["first", "a b c"]
    stream = generator.stream([], model=CHAT, num_ctx=2048)
    generator.abort()
    with pytest.raises(OllamaUnavailable, match="stopped"):
        list(stream)
    assert fake_ollama.requests_to("/api/chat") == []
    assert "".join(generator.stream([], model=CHAT, num_ctx=2048)) == "first"


def test_probe_reports_version_and_models(fake_ollama: FakeOllama) -> None:
    status = probe_ollama(fake_ollama.url, timeout_s=2.0, allow_remote=False)
    assert status.reachable and status.error is None
    assert status.version == fake_ollama.version
    assert "nomic-embed-text:latest" in status.models


def test_probe_of_a_down_server_is_unreachable_with_a_hint(fake_ollama: FakeOllama) -> None:
    fake_ollama.set_fault("down")
    status = probe_ollama(fake_ollama.url, timeout_s=2.0, allow_remote=False)
    assert not status.reachable and status.models == ()
    assert status.error and fake_ollama.url in status.error
    assert status.hint and "ollama serve" in status.hint


def test_model_present_handles_latest_tags() -> None:
    status = OllamaStatus("u", True, "1", ("llama3.2:latest", "qwen3:8b"), None)
    assert model_present(status, "llama3.2")
    assert model_present(status, "llama3.2:latest")
    assert model_present(status, "qwen3:8b")
    assert not model_present(status, "qwen3")
    assert not model_present(status, "llama3.2:1b")


def test_the_clients_share_one_tls_context_which_still_verifies_hosts() -> None:
    """Made once per process (reading the certificates cost 10-40 ms a client), as httpx
    would make it: certificates required, host names checked."""
    import ssl

    from askvault.adapters.ollama import _tls_context

    context = _tls_context()
    assert _tls_context() is context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0, "no certificate loaded"
