"""Provider replies that break their API's promise, through HTTP with the real SDKs.

An HTTP 200 whose body is an HTML page, JSON cut off, JSON without the reply (``choices``,
``candidates``, ``content``; ``data``, ``embeddings``), an empty list, fields of the wrong
type, no text at all, bytes that are not UTF-8, a charset that is wrong or none, a body
that ends before its Content-Length, or one larger than MAX_PROVIDER_REPLY_BYTES (1 MB
here; see ``tests.io.fakes.asgi.GARBAGE``) is a failure of that provider: the chain moves
on to the next (rule 6), on /chat, /chat/stream and /v1/chat/completions whole and
streamed; with nothing left the client gets the 503 problem naming each provider and what
was wrong; nothing is charged for a reply that was not one.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ragcore.chat.grounding import CAVEATS, CHECK_INSTRUCTIONS
from tests.io.conftest import on_openai
from tests.io.fakes.anthropic_server import FakeAnthropic
from tests.io.fakes.asgi import ASCII_LABEL, GARBAGE, FakeServer, Recorded
from tests.io.fakes.gemini_server import FakeGemini
from tests.io.fakes.openai_server import FakeOpenAI

FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."
QUESTION = {"question": "When does the shop open?"}
COMPLETION = {"model": "ragchat", "messages": [{"role": "user", "content": QUESTION["question"]}]}
KEYS = {"openai": "sk-openai-secret", "genai": "gemini-secret", "anthropic": "sk-ant-secret"}
CAP = 2**20  # MAX_PROVIDER_REPLY_BYTES: its least, so that a reply past it is quick to send
#: each provider, and the one it falls back to: every provider is a primary and a fallback
CHAINS = [("openai", "anthropic"), ("genai", "openai"), ("anthropic", "genai")]

#: what each provider's reply was said to be, (whole, streamed), by the kind of garbage
REASONS = {
    ("openai", "html"): (
        "a body that is not JSON",
        "a body that is not server-sent events (text/html)",
    ),
    ("openai", "not json"): ("a body that is not JSON", "a body that is not JSON"),
    ("openai", "no reply"): ("JSON without choices", "events without choices"),
    ("openai", "empty list"): ("an empty choices list", "an empty stream"),
    ("openai", "wrong types"): (
        "a message content that is not a string",
        "events whose text is not a string",
    ),
    ("openai", "no text"): ("no text (finish reason length)", "no text (finish reason length)"),
    ("genai", "html"): ("a body that is not JSON", "a body that is not JSON"),
    ("genai", "not json"): ("a body that is not JSON", "a body that is not JSON"),
    ("genai", "no reply"): ("JSON without candidates", "events without candidates"),
    ("genai", "empty list"): ("an empty candidates list", "an empty stream"),
    ("genai", "wrong types"): (
        "JSON of the wrong shape at candidates.0.content.parts.0.text",
        "JSON of the wrong shape at candidates.0.content.parts.0.text",
    ),
    ("genai", "no text"): (  # a thinking model that spent its whole allowance thinking
        "no text (finish reason MAX_TOKENS)",
        "no text (finish reason MAX_TOKENS)",
    ),
    ("anthropic", "html"): (
        "a body that is not JSON",
        "a body that is not server-sent events (text/html)",
    ),
    ("anthropic", "not json"): ("a body that is not JSON", "a body that is not JSON"),
    ("anthropic", "no reply"): ("JSON without content", "events without their delta"),
    ("anthropic", "empty list"): ("no text (stop reason max_tokens)", "an empty stream"),
    ("anthropic", "wrong types"): (
        "text blocks whose text is not a string",
        "events whose text is not a string",
    ),
    ("anthropic", "no text"): (
        "no text (stop reason max_tokens)",
        "no text (stop reason max_tokens)",
    ),
}
#: what is wrong on the wire reads the same from every provider, whole or streamed
WIRE_REASONS = {
    "not utf-8": "a body that is not UTF-8",
    "wrong charset": "a body in a charset other than UTF-8 (utf-16)",
    "bogus charset": "a body in an unknown charset",
    "cut off": "a body cut off before its end",
    "too large": "a reply larger than 1 MB",
}
for _kind, _reason in WIRE_REASONS.items():
    for _provider in KEYS:
        REASONS[_provider, _kind] = (_reason, _reason)


@pytest.fixture
async def fakes(serve_fake, monkeypatch) -> dict[str, Any]:
    """The three providers on 127.0.0.1, each answering with its name (when not garbled)."""
    served: dict[str, Any] = {
        "openai": await serve_fake(FakeOpenAI(KEYS["openai"], reply="GPT: at 9 am [1].")),
        "genai": await serve_fake(FakeGemini(KEYS["genai"], reply="Gemini: at 9 am [1].")),
        "anthropic": await serve_fake(
            FakeAnthropic(KEYS["anthropic"], reply="Claude: at 9 am [1].")
        ),
    }
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", served["genai"].base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", served["anthropic"].base_url)
    return served


@pytest.fixture
def chain() -> tuple[str, ...]:
    """LLM_PROVIDER, then LLM_FALLBACK_PROVIDERS; parametrize ``chain`` to change them."""
    return ("openai", "anthropic")


@pytest.fixture
def settings_overrides(fakes: dict[str, Any], chain: tuple[str, ...]) -> dict[str, Any]:
    return {
        "llm_provider": chain[0],
        "llm_fallback_providers": ",".join(chain[1:]),
        "embedding_provider": "local",  # only the answers are garbled
        "usage_ledger": "true",
        "max_provider_reply_bytes": CAP,
        "openai_api_key": KEYS["openai"],
        "openai_base_url": fakes["openai"].base_url,
        "genai_api_key": KEYS["genai"],
        "anthropic_api_key": KEYS["anthropic"],
    }


async def completion_stream(api: httpx.AsyncClient) -> tuple[httpx.Response, str]:
    """POST /v1/chat/completions with ``stream: true``: the response and the text streamed."""
    text = []
    body = {**COMPLETION, "stream": True}
    async with api.stream("POST", "/v1/chat/completions", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            return response, ""
        async for line in response.aiter_lines():
            if line.startswith("data: {"):
                chunk = json.loads(line.removeprefix("data: "))
                assert "error" not in chunk, chunk
                text += [choice["delta"].get("content") or "" for choice in chunk["choices"]]
    return response, "".join(text)


async def stream(api: httpx.AsyncClient) -> tuple[httpx.Response, list[tuple[str, Any]]]:
    """POST /chat/stream: the response and its (event, data) pairs."""
    received: list[tuple[str, Any]] = []
    async with api.stream("POST", "/chat/stream", json=QUESTION) as response:
        if response.status_code != 200:
            await response.aread()
            return response, received
        kind = "message"
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                received.append((kind, json.loads(line.removeprefix("data: "))))
    return response, received


def bad_reply(provider: str, reason: str) -> dict[str, Any]:
    return {"provider": provider, "failure": "bad_reply", "status": 200, "reason": reason}


async def charged(api: httpx.AsyncClient) -> tuple[int, dict[str, int]]:
    """Today's tokens (settled and still held) and the calls settled by each provider."""
    usage = (await api.get("/usage")).json()
    calls = {row["provider"]: row["calls"] for row in usage["this_month_by_provider"]}
    return usage["today"]["tokens"], calls


@pytest.mark.parametrize("kind", GARBAGE)
@pytest.mark.parametrize("chain", CHAINS, ids=[f"{p}-then-{f}" for p, f in CHAINS])
async def test_a_bad_reply_falls_back_and_with_nothing_left_is_a_503_naming_what_was_wrong(
    api, fakes, chain, kind
):
    primary, fallback = chain
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes[primary].garbage = kind

    answered = await api.post("/chat", json=QUESTION)
    assert answered.status_code == 200, answered.text
    assert answered.json()["provider"] == fallback
    assert answered.json()["answer"] == fakes[fallback].reply
    response, received = await stream(api)
    assert response.status_code == 200
    assert received[-1][0] == "done" and received[-1][1]["provider"] == fallback
    assert "".join(data["text"] for event, data in received if event == "token") == (
        fakes[fallback].reply
    )
    completion = await api.post("/v1/chat/completions", json=COMPLETION)
    assert completion.status_code == 200, completion.text
    assert completion.json()["choices"][0]["message"]["content"] == fakes[fallback].reply
    response, text = await completion_stream(api)
    assert (response.status_code, text) == (200, fakes[fallback].reply)
    assert len(fakes[primary].requests) == 4  # asked each time, and refused each time
    tokens, calls = await charged(api)

    fakes[fallback].garbage = kind  # nothing left to answer
    failed = await api.post("/chat", json=QUESTION)
    assert failed.status_code == 503
    assert failed.headers["content-type"] == "application/problem+json"
    problem = failed.json()
    assert problem["title"] == "No answering provider could answer"
    whole = {name: REASONS[name, kind][0] for name in chain}
    assert problem["providers"] == [bad_reply(name, whole[name]) for name in chain]
    assert problem["detail"] == (
        f"no answering provider could answer: {primary} answered HTTP 200 with "
        f"{whole[primary]}; {fallback} answered HTTP 200 with {whole[fallback]}"
    )
    response, received = await stream(api)
    assert response.status_code == 503  # before the first event: an ordinary problem
    assert response.headers["content-type"] == "application/problem+json"
    streamed = {name: REASONS[name, kind][1] for name in chain}
    assert response.json()["providers"] == [bad_reply(name, streamed[name]) for name in chain]
    completion = await api.post("/v1/chat/completions", json=COMPLETION)
    assert completion.status_code == 503
    assert completion.json()["error"]["message"] == problem["detail"]
    completed, _ = await completion_stream(api)
    assert completed.status_code == 503  # before the first chunk: an ordinary error
    assert completed.json()["error"]["message"] == response.json()["detail"]
    shown = failed.text + response.text + completion.text + completed.text
    for secret in (*KEYS.values(), "Traceback", "<html", "DOCTYPE", "this is not json"):
        assert secret not in shown

    # Only the fallback's four answers were charged; the bad replies left nothing behind,
    # not even a reservation (today's tokens count those still held).
    assert calls == {fallback: 4}
    assert await charged(api) == (tokens, calls)


@pytest.mark.parametrize("chain", CHAINS, ids=[f"{p}-then-{f}" for p, f in CHAINS])
async def test_a_gzipped_reply_is_read_and_capped_as_it_is_decompressed(api, fakes, chain):
    primary, fallback = chain
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes[primary].gzip = True

    answered = await api.post("/chat", json=QUESTION)
    assert (answered.json()["provider"], answered.json()["answer"]) == (
        primary,
        fakes[primary].reply,
    )
    response, received = await stream(api)
    assert received[-1][0] == "done" and received[-1][1]["provider"] == primary
    assert "".join(data["text"] for event, data in received if event == "token") == (
        fakes[primary].reply
    )
    assert {r.headers["accept-encoding"] for r in fakes[primary].requests} == {"gzip"}

    fakes[primary].garbage = "too large"  # a few KB on the wire, 1.5 MB decompressed
    answered = await api.post("/chat", json=QUESTION)
    assert answered.json()["provider"] == fallback
    response, received = await stream(api)
    assert received[-1][0] == "done" and received[-1][1]["provider"] == fallback
    fakes[fallback].garbage = "too large"
    failed = await api.post("/chat", json=QUESTION)
    assert failed.json()["providers"][0] == bad_reply(primary, "a reply larger than 1 MB")


@pytest.mark.parametrize("chain", [("openai", "anthropic")])
async def test_a_body_json_takes_for_utf32_is_not_json(api, fakes):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes["openai"].garbage = fakes["anthropic"].garbage = "nuls first"

    failed = await api.post("/chat", json=QUESTION)

    assert failed.status_code == 503, failed.text
    assert failed.json()["providers"] == [
        bad_reply("openai", "a body that is not JSON"),
        bad_reply("anthropic", "a body that is not JSON"),
    ]


@pytest.mark.parametrize("chain", [(name,) for name in KEYS], ids=list(KEYS))
async def test_a_reply_labelled_us_ascii_is_read_as_utf8(api, fakes, chain):
    """US-ASCII is UTF-8's subset: a server that labels its JSON so is answered."""
    [name] = chain
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes[name].garbage = ASCII_LABEL

    answered = await api.post("/chat", json=QUESTION)

    assert answered.status_code == 200, answered.text
    assert answered.json()["provider"] == name


@pytest.mark.parametrize("kind", ["not utf-8", "bogus charset"])
@pytest.mark.parametrize("chain", [(name,) for name in KEYS], ids=list(KEYS))
async def test_an_error_whose_body_does_not_decode_keeps_its_status(api, fakes, chain, kind):
    [name] = chain
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes[name].garbage = kind
    fakes[name].fail_next(401)  # a wrong key: not retried

    failed = await api.post("/chat", json=QUESTION)

    assert failed.status_code == 503
    assert failed.json()["providers"] == [{"provider": name, "failure": "bad_key", "status": 401}]


@pytest.mark.parametrize("chain", [("openai",)])
async def test_with_no_fallback_an_empty_reply_is_a_503_and_nothing_is_charged(api, fakes):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes["openai"].garbage = "no text"

    failed = await api.post("/chat", json=QUESTION)
    assert failed.status_code == 503
    assert failed.json()["detail"] == (
        "no answering provider could answer: openai answered HTTP 200 with no text (finish "
        "reason length), and LLM_FALLBACK_PROVIDERS names no other provider to try"
    )
    response, received = await stream(api)
    assert response.status_code == 503 and received == []
    assert await charged(api) == (0, {})


@pytest.mark.parametrize("chain", [("openai", "extractive")])
async def test_the_offline_answerer_as_the_last_fallback_answers_past_a_bad_reply(api, fakes):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes["openai"].garbage = "html"

    answered = (await api.post("/chat", json=QUESTION)).json()
    assert answered["provider"] == "extractive" and "9 am" in answered["answer"]
    assert (await charged(api))[0] == 0  # the offline answer costs 0 tokens


# ---------------------------------------------------------------- after the first words


@pytest.mark.parametrize(
    ("break_with", "failure"),
    [
        ("error", {"provider": "openai", "failure": "unavailable", "status": None}),
        ("not json", bad_reply("openai", "a body that is not JSON")),
    ],
)
async def test_a_stream_that_breaks_off_after_its_first_words_ends_with_a_503_error_event(
    api, fakes, break_with, failure
):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes["openai"].break_stream_after = 2
    fakes["openai"].break_with = break_with

    response, received = await stream(api)

    assert response.status_code == 200  # the first words were out
    assert [event for event, _ in received] == ["token", "token", "error"]
    problem = received[-1][1]
    assert (problem["status"], problem["title"]) == (503, "The answer broke off")
    assert problem["providers"] == [failure]
    assert problem["detail"].startswith("the answer broke off after its first words: openai")
    assert fakes["anthropic"].requests == []  # the client already saw openai's words
    assert await charged(api) == (0, {})


async def test_an_error_event_before_the_first_words_falls_back(api, fakes):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes["openai"].break_stream_after = 0  # OpenRouter's error event, then nothing

    response, received = await stream(api)

    assert received[-1][0] == "done" and received[-1][1]["provider"] == "anthropic"


# ---------------------------------------------------------------- the judge and the profile


def judging(request: Recorded) -> bool:
    return request.body["messages"][0]["content"] == CHECK_INSTRUCTIONS


@pytest.mark.parametrize("chain", [("openai",)])
@pytest.mark.parametrize("kind", ["not json", "no reply", "no text"])
async def test_a_judge_with_a_bad_reply_leaves_the_caveat_and_costs_nothing(api, fakes, kind):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes["openai"].garbage, fakes["openai"].garbage_for = kind, judging

    response = await api.post("/chat", json={**QUESTION, "role": "finance"})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["grounded"] is False and body["answer"].endswith(CAVEATS["en"])
    assert body["check_usage"] is None
    answer = body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    assert await charged(api) == (answer, {"openai": 1})  # the answer only


@pytest.mark.parametrize("chain", [("openai",)])
async def test_learning_the_profile_from_a_bad_reply_summarises_offline_at_no_cost(api, fakes):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    fakes["openai"].garbage = "no reply"

    response = await api.post("/profile/learn")

    assert response.status_code == 200, response.text
    assert response.json()["learned_by"] == "extractive"
    assert await charged(api) == (0, {})


# ---------------------------------------------------------------- embeddings

EMBEDDING_REASONS = {
    ("openai", "html"): "a body that is not JSON",
    ("openai", "not json"): "a body that is not JSON",
    ("openai", "no reply"): "JSON without embedding data",
    ("openai", "empty list"): "JSON without embedding data",
    ("openai", "wrong types"): "vectors that are not lists of numbers",
    ("openai", "no text"): "empty vectors",
    ("genai", "html"): "a body that is not JSON",
    ("genai", "not json"): "a body that is not JSON",
    ("genai", "no reply"): "JSON without embeddings",
    ("genai", "empty list"): "an empty embeddings list",
    ("genai", "wrong types"): "JSON of the wrong shape at embeddings.0.values",
    ("genai", "no text"): "empty vectors",
    **{
        (name, kind): reason
        for name in ("openai", "genai")
        for kind, reason in WIRE_REASONS.items()
    },
}


class TestEmbeddings:
    """No fallback for embeddings (by design): a bad reply is a 503 naming the provider."""

    @pytest.fixture(params=["openai", "genai"])
    async def embedder(self, request, serve_fake, monkeypatch) -> tuple[str, FakeServer]:
        if request.param == "openai":
            return "openai", await serve_fake(FakeOpenAI(KEYS["openai"]))
        fake = await serve_fake(FakeGemini(KEYS["genai"]))
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.base_url)
        return "genai", fake

    @pytest.fixture
    def settings_overrides(self, embedder: tuple[str, FakeServer]) -> dict[str, Any]:
        name, fake = embedder
        if name == "openai":
            return on_openai(
                fake, llm_provider="extractive", usage_ledger="true", max_provider_reply_bytes=CAP
            )
        return {
            "embedding_provider": "genai",
            "genai_api_key": KEYS["genai"],
            "embedding_dimensions": 64,
            "llm_provider": "extractive",
            "usage_ledger": "true",
            "max_provider_reply_bytes": CAP,
        }

    @pytest.mark.parametrize("kind", GARBAGE)
    async def test_a_bad_embeddings_reply_is_a_503_naming_the_provider(self, api, embedder, kind):
        name, fake = embedder
        fake.garbage = kind
        reason = EMBEDDING_REASONS[name, kind]
        detail = f"embedding provider {name} answered HTTP 200 with {reason}"

        added = await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        asked = await api.post("/chat", json=QUESTION)

        for response in (added, asked):
            assert response.status_code == 503
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["title"] == "The embedding provider could not be used"
            assert response.json()["detail"] == detail
        assert (await api.get("/documents")).json()["documents"] == []  # nothing half-stored
        assert await charged(api) == (0, {})
