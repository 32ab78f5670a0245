"""The OpenAI provider through the real ``openai`` SDK, against a fake server on 127.0.0.1."""

from __future__ import annotations

import email.utils
import logging
import socket
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import httpx
import openai
import pytest
import trio

from ragcore.usage import TokenUsage
from ragio.providers.batching import EmbeddingDimensionsMismatch
from ragio.providers.openai import MAX_BATCH, MAX_RETRIES, OpenAIAnswerer, OpenAIEmbedder
from tests.conftest import make_settings
from tests.io.conftest import HASTY, REQUEST, embed, generate, on_openai, stream
from tests.io.fakes.openai_server import FakeOpenAI, bag_of_words

P = TypeVar("P", OpenAIAnswerer, OpenAIEmbedder)
DIMENSIONS = 64
CHAT = "/v1/chat/completions"
EMBEDDINGS = "/v1/embeddings"


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI(api_key="sk-test-key", reply="Refunds take 5 days [1]."))


@pytest.fixture
def make(fake: FakeOpenAI, closing) -> Callable[..., Any]:
    """``make(OpenAIAnswerer, **settings)``: a provider on the fake, its connections closed
    after the test. Settings default to the fake's key and URL and 64 dimensions."""

    def build(kind: type[P], max_retries: int = MAX_RETRIES, **overrides: Any) -> P:
        defaults = {
            "openai_api_key": fake.api_key,
            "openai_base_url": fake.base_url,
            "embedding_dimensions": DIMENSIONS,
        }
        return closing(kind(make_settings(**{**defaults, **overrides}), max_retries=max_retries))

    return build


async def test_generate_returns_the_servers_text_and_model_and_sends_the_prompt(fake, make):
    fake.model = "gpt-4o-mini-2024-07-18"  # the real API names the snapshot that answered

    reply = await make(OpenAIAnswerer).generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    assert reply.provider == "openai"
    assert reply.model == "gpt-4o-mini-2024-07-18"
    [sent] = fake.requests_to(CHAT)
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    assert sent.body["model"] == "gpt-4o-mini"
    assert sent.body["messages"] == [
        {"role": "system", "content": REQUEST.prompt.system},
        {"role": "user", "content": REQUEST.prompt.user},
    ]
    assert sent.body["max_tokens"] == 200
    assert sent.body["temperature"] == 0.2


async def test_embed_returns_one_vector_per_text_in_order_at_the_configured_size(fake, make):
    texts = ["refunds within 30 days", "shipping to the EU", "opening hours"]

    vectors = await make(OpenAIEmbedder).embed(texts, "document")

    assert len(vectors) == len(texts)
    for text, vector in zip(texts, vectors, strict=True):
        assert vector == pytest.approx(bag_of_words(text, DIMENSIONS))
    [sent] = fake.requests_to(EMBEDDINGS)
    assert sent.body["input"] == texts
    assert sent.body["dimensions"] == DIMENSIONS
    assert sent.body["model"] == "text-embedding-3-large"


async def test_embed_splits_more_texts_than_one_request_takes_into_batches(fake, make):
    texts = [f"passage number {n}" for n in range(MAX_BATCH + 1)]

    vectors = await make(OpenAIEmbedder).embed(texts, "document")

    assert sorted(len(r.body["input"]) for r in fake.requests_to(EMBEDDINGS)) == [1, MAX_BATCH]
    assert len(vectors) == len(texts)
    assert vectors[0] == pytest.approx(bag_of_words(texts[0], DIMENSIONS))
    assert vectors[-1] == pytest.approx(bag_of_words(texts[-1], DIMENSIONS))


async def test_embed_refuses_vectors_of_another_size_naming_the_setting(fake, make):
    fake.honour_dimensions = False  # like compatible servers that ignore `dimensions`

    with pytest.raises(EmbeddingDimensionsMismatch) as refused:
        await make(OpenAIEmbedder).embed(["refunds"], "query")

    assert "EMBEDDING_DIMENSIONS is 64" in str(refused.value)
    assert "EMBEDDING_DIMENSIONS=1536" in str(refused.value)


async def test_stream_yields_the_text_deltas_in_order_then_the_reported_usage(fake, make):
    items = [item async for item in make(OpenAIAnswerer).stream(REQUEST)]

    assert items[:-1] == ["Refunds ", "take ", "5 ", "days ", "[1]."]
    assert items[-1] == TokenUsage(prompt_tokens=16, completion_tokens=5)  # the fake's counts
    assert items[-1] == (await make(OpenAIAnswerer).generate(REQUEST)).usage
    sent = fake.requests_to(CHAT)[0]
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["max_tokens"] == 200


async def test_a_server_that_sends_usage_unasked_is_read_too(fake, make):
    fake.stream_usage = "always"  # as llama.cpp's server and OpenRouter do

    items = [item async for item in make(OpenAIAnswerer).stream(REQUEST)]

    assert items[-1] == TokenUsage(prompt_tokens=16, completion_tokens=5)


async def test_a_server_that_reports_no_usage_streams_only_text(fake, make):
    fake.stream_usage = "never"  # as Ollama before 0.5.2 and vLLM before 0.5: option ignored

    items = [item async for item in make(OpenAIAnswerer).stream(REQUEST)]

    assert items == ["Refunds ", "take ", "5 ", "days ", "[1]."]


@pytest.mark.parametrize("status", [400, 422], ids=["azure", "mistral"])
async def test_a_server_refusing_stream_options_is_asked_again_without_them(fake, make, status):
    fake.rejects_stream_options = status
    answerer = make(OpenAIAnswerer)

    first = [item async for item in answerer.stream(REQUEST)]
    second = [item async for item in answerer.stream(REQUEST)]

    assert first == second == ["Refunds ", "take ", "5 ", "days ", "[1]."]
    refused, asked, asked_again = fake.requests_to(CHAT)
    assert refused.body["stream_options"] == {"include_usage": True}
    assert "stream_options" not in asked.body
    assert "stream_options" not in asked_again.body  # remembered: no second refusal


async def test_another_bad_request_while_streaming_is_raised_not_retried(fake, make):
    fake.fail_next(400)

    with pytest.raises(openai.BadRequestError):
        async for _ in make(OpenAIAnswerer).stream(REQUEST):
            pass

    [sent] = fake.requests_to(CHAT)
    assert sent.body["stream_options"] == {"include_usage": True}


async def test_a_rate_limit_is_retried_after_the_wait_the_server_asks_for(fake, make):
    # Longer than the SDK's own first backoff (at most 0.5 s), so only Retry-After explains it.
    fake.fail_next(429, retry_after="0.6")

    reply = await make(OpenAIAnswerer).generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    limited, retried = fake.requests_to(CHAT)
    assert retried.at - limited.at >= 0.6


async def test_server_errors_are_retried_until_one_succeeds(fake, make):
    fake.fail_next(500, retry_after="0.01", times=2)

    vectors = await make(OpenAIEmbedder, max_retries=2).embed(["hi"], "query")

    assert len(vectors) == 1
    assert len(fake.requests_to(EMBEDDINGS)) == 3


async def test_a_wrong_key_raises_authentication_error_without_retrying(fake, make):
    answerer = make(OpenAIAnswerer, openai_api_key="sk-wrong-key")

    with pytest.raises(openai.AuthenticationError) as refused:
        await answerer.generate(REQUEST)

    assert refused.value.status_code == 401
    assert refused.value.code == "invalid_api_key"
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("kind", "call"),
    [(OpenAIAnswerer, generate), (OpenAIEmbedder, embed), (OpenAIAnswerer, stream)],
    ids=["generate", "embed", "stream"],
)
async def test_a_server_that_hangs_past_the_timeout_raises_a_timeout_error(fake, make, kind, call):
    fake.delay = 30

    with trio.fail_after(10), pytest.raises(openai.APITimeoutError):
        await call(make(kind, **HASTY))


# ---------------------------------------------------------------- the whole service


@pytest.fixture
async def settings_overrides(fake: FakeOpenAI) -> dict[str, Any]:
    """The service on the fake: OPENAI_API_KEY alone selects openai for answers and embeddings."""
    return on_openai(fake, DIMENSIONS)


REFUNDS = """# Returns and refunds

Customers can return any item within 30 days of delivery for a full refund.
Refunds are paid to the original payment method within 5 business days.
"""


async def test_the_service_answers_through_openai_with_citations(
    fake: FakeOpenAI, api: httpx.AsyncClient
):
    fake.reply = "You can return an item within 30 days of delivery [1]."
    added = await api.post("/documents", json={"name": "refunds.md", "text": REFUNDS})
    assert added.status_code == 201, added.text

    response = await api.post("/chat", json={"question": "How long do I have to return an item?"})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == "You can return an item within 30 days of delivery [1]."
    assert body["provider"] == "openai"
    [citation] = body["citations"]
    assert citation["document_id"] == added.json()["id"]
    assert citation["document_name"] == "refunds.md"
    [chat] = fake.requests_to(CHAT)
    assert "within 30 days of delivery" in chat.body["messages"][1]["content"]

    health = (await api.get("/health")).json()
    assert health["mode"] == "online"
    assert health["providers"]["llm"] == {"name": "openai", "model": "gpt-4o-mini"}
    assert health["providers"]["embedding"] == {
        "name": "openai",
        "model": "text-embedding-3-large",
        "dimensions": DIMENSIONS,
    }


async def test_vectors_of_the_wrong_size_are_a_502_naming_the_setting(
    fake: FakeOpenAI, api: httpx.AsyncClient, database_url: str
):
    fake.honour_dimensions = False  # like a compatible server that ignores `dimensions`
    response = await api.post("/documents", json={"name": "a.md", "text": "Refunds take 5 days."})
    assert response.status_code == 502
    assert response.headers["content-type"] == "application/problem+json"
    assert "EMBEDDING_DIMENSIONS=1536" in response.json()["detail"]
    documents = await api.get("/documents")
    assert documents.json()["documents"] == []


async def test_json_sent_as_another_content_type_is_still_read(fake, make):
    fake.json_type = "text/plain; charset=utf-8"  # as some compatible servers send it

    [vector] = await make(OpenAIEmbedder).embed(["refunds"], "query")
    reply = await make(OpenAIAnswerer).generate(REQUEST)

    assert vector == pytest.approx(bag_of_words("refunds", DIMENSIONS))
    assert reply.text == "Refunds take 5 days [1]."


# ---------------------------------------------------------------- as the SDK sends and reads
# The provider posts its requests itself (ragio.providers.openai_http), as the SDK would:
# what the SDK did for it before is pinned here.


async def test_requests_carry_the_sdks_headers_and_ask_for_base64_vectors(fake, make):
    await make(OpenAIAnswerer).generate(REQUEST)
    await make(OpenAIEmbedder).embed(["refunds"], "query")

    chat, embeddings = fake.requests
    for sent in (chat, embeddings):
        assert sent.headers["authorization"] == "Bearer sk-test-key"
        assert sent.headers["content-type"] == "application/json"
        assert sent.headers["accept"] == "application/json"
        assert sent.headers["user-agent"] == f"AsyncOpenAI/Python {openai.__version__}"
    assert chat.path == CHAT and embeddings.path == EMBEDDINGS
    assert embeddings.body["encoding_format"] == "base64"


async def test_an_injected_client_brings_its_key_url_headers_and_retries(fake, closing):
    client = openai.AsyncOpenAI(
        api_key=fake.api_key,
        base_url=fake.base_url,
        max_retries=0,
        default_headers={"X-Title": "ragchat"},  # as OpenRouter asks apps to name themselves
    )
    settings = make_settings(openai_api_key="sk-not-this-one", embedding_dimensions=DIMENSIONS)
    answerer = closing(OpenAIAnswerer(settings, client=client))

    reply = await answerer.generate(REQUEST)
    fake.fail_next(500)
    with pytest.raises(openai.InternalServerError):
        await answerer.generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    first, failed = fake.requests_to(CHAT)  # max_retries=0: the 500 is not tried again
    assert first.headers["x-title"] == "ragchat"
    assert first.headers["authorization"] == f"Bearer {fake.api_key}"


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
async def test_the_statuses_the_sdk_retries_are_retried(fake, make, status):
    fake.fail_next(status, retry_after="0.01", times=2)

    reply = await make(OpenAIAnswerer).generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    assert len(fake.requests_to(CHAT)) == 3


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (422, openai.UnprocessableEntityError),
    ],
)
async def test_other_statuses_raise_the_sdks_error_at_once(fake, make, status, error):
    fake.fail_next(status, retry_after="0.01")

    with pytest.raises(error) as raised:
        await make(OpenAIEmbedder).embed(["refunds"], "query")

    assert raised.value.status_code == status
    assert len(fake.requests_to(EMBEDDINGS)) == 1


async def test_x_should_retry_overrides_the_status(fake, make):
    fake.fail_next(500, headers={"x-should-retry": "false"})
    with pytest.raises(openai.InternalServerError):
        await make(OpenAIAnswerer).generate(REQUEST)
    assert len(fake.requests_to(CHAT)) == 1

    fake.fail_next(400, retry_after="0.01", headers={"x-should-retry": "true"})
    reply = await make(OpenAIAnswerer).generate(REQUEST)
    assert reply.text == "Refunds take 5 days [1]."
    assert len(fake.requests_to(CHAT)) == 3


async def test_retry_after_as_a_date_and_in_milliseconds_is_waited(fake, make):
    # Both longer than the SDK's own first backoff (at most 0.5 s): only the header explains it.
    fake.fail_next(429, retry_after=email.utils.formatdate(time.time() + 3, usegmt=True))
    fake.fail_next(503, headers={"retry-after-ms": "700"})

    reply = await make(OpenAIAnswerer).generate(REQUEST)

    assert reply.text == "Refunds take 5 days [1]."
    limited, unavailable, answered = fake.requests_to(CHAT)
    assert unavailable.at - limited.at >= 1.0  # whole seconds: 2 to 3 s after it was written
    assert answered.at - unavailable.at >= 0.7


async def test_a_retry_after_beyond_the_sdks_bound_is_not_waited_for(fake, make):
    fake.fail_next(429, retry_after="3600")

    with trio.fail_after(5), pytest.raises(openai.RateLimitError):
        await make(OpenAIAnswerer).generate(REQUEST)

    assert len(fake.requests_to(CHAT)) == 1


async def test_a_server_that_cannot_be_reached_is_tried_again_after_a_backoff(make):
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"
    answerer = make(OpenAIAnswerer, openai_base_url=url)

    started = trio.current_time()
    with pytest.raises(openai.APIConnectionError):
        await answerer.generate(REQUEST)

    # two retries, after 0.5 s and 1 s less up to a quarter each: the SDK's backoff
    assert trio.current_time() - started >= 0.75 * (0.5 + 1.0)


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
async def test_a_stream_is_read_whatever_its_line_ends_comments_and_pieces(fake, make, line_end):
    fake.line_end, fake.keep_alive, fake.piecemeal = line_end, True, True

    items = [item async for item in make(OpenAIAnswerer).stream(REQUEST)]

    assert items == [
        "Refunds ",
        "take ",
        "5 ",
        "days ",
        "[1].",
        TokenUsage(prompt_tokens=16, completion_tokens=5),
    ]


async def test_an_error_event_mid_stream_is_raised_as_the_sdks_api_error(fake, make):
    fake.break_stream_after = 2  # OpenRouter's {"error": {...}} after the first words

    received = []
    with pytest.raises(openai.APIError) as raised:
        async for item in make(OpenAIAnswerer).stream(REQUEST):
            received.append(item)

    assert received == ["Refunds ", "take "]
    assert raised.value.message == "Upstream provider error"
    assert raised.value.body == {"code": 502, "message": "Upstream provider error"}
    assert not isinstance(raised.value, openai.APIStatusError)


# ---------------------------------------------------------------- connections
# The calls go over kept-alive connections of ragio.providers.http11 (httpx2 where a proxy
# is configured): a connection the server closed is replaced at once, not waited for.

EMBEDDING = {"object": "embedding", "index": 0, "embedding": [0.5] * DIMENSIONS}
REPLY_BODY = b'{"object":"list","data":[' + str(EMBEDDING).replace("'", '"').encode() + b"]}"
REPLY_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"


async def _read_request(stream: trio.SocketStream, pending: bytearray) -> bool:
    """One request (head and Content-Length body) off ``stream``; False at its end."""
    while b"\r\n\r\n" not in pending:
        data = await stream.receive_some(65536)
        if not data:
            return False
        pending += data
    head, _, rest = bytes(pending).partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(rest) < length:
        rest += await stream.receive_some(65536)
    pending[:] = rest[length:]
    return True


@pytest.mark.parametrize("closes", ["while idle", "on the next request"])
async def test_a_connection_the_server_closed_is_replaced_at_once(make, nursery, caplog, closes):
    """A server (a proxy's, a load balancer's) closing a kept-alive connection: while it
    is idle, or as the next request arrives on it without answering it."""
    connections: list[int] = []

    async def serve(stream: trio.SocketStream) -> None:
        connections.append(0)
        pending = bytearray()
        while await _read_request(stream, pending):
            connections[-1] += 1
            if closes == "on the next request" and connections[-1] == 2:
                break  # read, never answered
            await stream.send_all(REPLY_HEAD % len(REPLY_BODY) + REPLY_BODY)
            if closes == "while idle":
                break
        await stream.aclose()

    caplog.set_level(logging.INFO, logger="ragio.providers.openai_http")
    [listener] = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
    port = listener.socket.getsockname()[1]
    embedder = make(OpenAIEmbedder, openai_base_url=f"http://127.0.0.1:{port}/v1")

    first = await embedder.embed(["refunds"], "query")
    await trio.sleep(0.1)  # the server's close arrives
    second = await embedder.embed(["refunds"], "query")

    assert first == second == [[0.5] * DIMENSIONS]
    assert len(connections) == 2  # the second call on a new connection
    # at once: not after the SDK's backoff, which would log its retry
    assert not [r for r in caplog.records if "Retrying" in r.getMessage()]


async def test_a_proxy_from_the_environment_carries_the_calls(fake, make, monkeypatch):
    """HTTP_PROXY (or HTTPS_PROXY, ALL_PROXY) is honoured, as by the SDK's own client."""
    monkeypatch.setenv("HTTP_PROXY", fake.base_url.removesuffix("/v1"))
    embedder = make(OpenAIEmbedder, openai_base_url="http://api.openai.invalid/v1")

    [vector] = await embedder.embed(["refunds"], "query")

    assert vector == pytest.approx(bag_of_words("refunds", DIMENSIONS))
    [request] = fake.requests_to(EMBEDDINGS)
    assert request.headers["host"] == "api.openai.invalid"


async def test_a_streamed_answer_gives_its_connection_back_for_the_next_call(make, nursery):
    """The rest of a chunked stream after ``[DONE]`` (its last chunk, arriving a moment
    later) is read, so the next call goes over the same connection."""
    connections: list[int] = []
    event = b'data: {"choices":[{"index":0,"delta":{"content":"Hello [1]."}}]}\n\n'

    def chunk(data: bytes) -> bytes:
        return b"%x\r\n%s\r\n" % (len(data), data)

    async def serve(stream: trio.SocketStream) -> None:
        connections.append(0)
        pending = bytearray()
        while await _read_request(stream, pending):
            connections[-1] += 1
            if connections[-1] == 1:
                head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                head += b"Transfer-Encoding: chunked\r\n\r\n"
                await stream.send_all(head + chunk(event) + chunk(b"data: [DONE]\n\n"))
                await trio.sleep(0.02)
                await stream.send_all(b"0\r\n\r\n")
            else:
                await stream.send_all(REPLY_HEAD % len(REPLY_BODY) + REPLY_BODY)
        await stream.aclose()

    [listener] = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
    url = f"http://127.0.0.1:{listener.socket.getsockname()[1]}/v1"
    answerer = make(OpenAIAnswerer, openai_base_url=url)
    embedder = make(OpenAIEmbedder, openai_base_url=url)
    embedder.api.lean = answerer.api.lean  # one pool, as one client's

    said = [piece async for piece in answerer.stream(REQUEST)]
    vectors = await embedder.embed(["refunds"], "query")

    assert said == ["Hello [1]."] and vectors == [[0.5] * DIMENSIONS]
    assert connections == [2]


async def test_over_tls_the_calls_share_a_verified_connection(
    make, nursery, authority, monkeypatch
):
    """HTTPS, as every real provider: the certificate verified against the trusted
    authorities (SSL_CERT_FILE here, as httpx2 reads it), one connection for both calls;
    a certificate for another name is a connection error, never a call."""
    from tests.io.fakes.action_receivers import serve_https

    monkeypatch.setenv("SSL_CERT_FILE", str(authority.bundle))
    fake = FakeOpenAI(api_key="sk-test-key", reply="Refunds take 5 days [1].")
    async with serve_https(fake, nursery, authority, "127.0.0.1") as port:
        url = f"https://127.0.0.1:{port}/v1"
        answerer = make(OpenAIAnswerer, openai_base_url=url)
        lean = answerer.api.lean
        assert lean is not None
        reply = await answerer.generate(REQUEST)
        [kept] = lean.idle
        again = await answerer.generate(REQUEST)
        assert reply.text == again.text == "Refunds take 5 days [1]."
        assert lean.idle == [kept]  # the same connection, kept alive again

    async with serve_https(fake, nursery, authority, "provider.example") as port:
        wrong = make(OpenAIAnswerer, max_retries=0, openai_base_url=f"https://127.0.0.1:{port}/v1")
        with pytest.raises(openai.APIConnectionError):
            await wrong.generate(REQUEST)
    assert len(fake.requests_to(CHAT)) == 2
