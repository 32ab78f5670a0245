"""The chat widget's HTTP side against the real app (docs/widget.md): sites managed with
the key, a visitor's session from an allowed origin only, questions streamed and
counted against the quotas, the visitor's conversation and feedback, verified identity,
and tokens refused when forged, expired, revoked or of another site."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import httpx
import psycopg
import pytest

from ragcore.widget.tokens import user_hash
from tests.io.test_http_errors import assert_problem
from tests.io.test_metrics import scrape, value

SHOP = "https://shop.example.com"
ELSEWHERE = "https://evil.example.net"
RETURNS = "# Returns\n\nItems can be returned within 30 days of delivery for a full refund."


async def make_site(api: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    body = {"name": "shop", "allowed_origins": [SHOP], **fields}
    created = await api.post("/widget/sites", json=body)
    assert created.status_code == 201, created.text
    return created.json()


async def session(
    api: httpx.AsyncClient, site: dict[str, Any], origin: str = SHOP, **body: Any
) -> httpx.Response:
    return await api.post(
        "/widget/sessions",
        json={"site": site["public_id"], **body},
        headers={"Origin": origin},
    )


def events(response: httpx.Response) -> list[tuple[str, Any]]:
    found = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        found.append((lines.get("event", ""), json.loads(lines.get("data", "null"))))
    return found


async def ask(
    api: httpx.AsyncClient, token: str, question: str, origin: str = SHOP, **headers: str
) -> httpx.Response:
    return await api.post(
        "/widget/chat/stream",
        json={"question": question},
        headers={"Authorization": f"Bearer {token}", "Origin": origin, **headers},
    )


async def test_a_visitor_asks_on_an_allowed_origin_and_sees_the_answer_stream(api):
    await api.post("/documents", json={"name": "returns.md", "text": RETURNS})
    site = await make_site(api)
    assert site["public_id"].startswith("site_") and site["identity_secret"]
    assert "identity_secret" not in (await api.get(f"/widget/sites/{site['id']}")).json()

    started = await session(api, site)
    assert started.status_code == 201, started.text
    assert started.headers["access-control-allow-origin"] == SHOP
    token = started.json()["token"]
    assert started.json()["verified"] is False

    answered = await ask(api, token, "How long do I have to return an item?")
    assert answered.status_code == 200, answered.text
    assert answered.headers["access-control-allow-origin"] == SHOP
    kinds = [kind for kind, _ in events(answered)]
    assert kinds[-1] == "done" and "token" in kinds
    done = events(answered)[-1][1]
    assert "30 days" in done["answer"] and done["turn"] == 1
    assert done["citations"][0]["document_name"] == "returns.md"
    # the owner's to know, not the visitor's: who answered, the tokens
    assert not {"provider", "model", "usage", "role"} & set(done)

    again = await ask(api, token, "And do I get all my money back?")
    assert events(again)[-1][1]["turn"] == 2
    shown = (await api.get("/widget/conversation", headers=_bearer(token))).json()
    assert [t["turn"] for t in shown["turns"]] == [1, 2]
    listed = (await api.get("/conversations", params={"channel": "web"})).json()
    assert [c["id"] for c in listed["conversations"]] == [shown["conversation_id"]]

    thumbs = await api.post(
        "/widget/feedback", json={"turn": 1, "rating": "down"}, headers=_bearer(token)
    )
    assert thumbs.status_code == 204, thumbs.text
    owner = (await api.get(f"/conversations/{shown['conversation_id']}")).json()
    assert owner["turns"][0]["feedback"] == "down"


def _bearer(token: str, origin: str = SHOP) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Origin": origin}


async def test_a_visitors_rating_may_say_why_and_the_owner_reads_it(api):
    await api.post("/documents", json={"name": "returns.md", "text": RETURNS})
    site = await make_site(api)
    token = (await session(api, site)).json()["token"]
    await ask(api, token, "How long do I have to return an item?")
    before = await scrape(api)

    def rate(**body: Any) -> Any:
        return api.post("/widget/feedback", json={"turn": 1, **body}, headers=_bearer(token))

    refused = await rate(rating=None, comment="never mind")
    assert_problem(refused, 422, "goes with a rating")
    assert refused.json()["field"] == "comment"
    assert refused.headers["access-control-allow-origin"] == SHOP  # the widget reads it
    assert_problem(await rate(rating="down", comment="x" * 1001), 422, "the limit is 1000")
    said = await rate(rating="down", comment=" I bought it 40 days ago. ")
    assert said.status_code == 204, said.text

    shown = (await api.get("/widget/conversation", headers=_bearer(token))).json()
    owner = (await api.get(f"/conversations/{shown['conversation_id']}")).json()
    [turn] = owner["turns"]
    assert (turn["feedback"], turn["feedback_comment"]) == ("down", "I bought it 40 days ago.")
    after = await scrape(api)
    counted = {"name": "ragchat_feedback_total", "channel": "web", "rating": "down"}
    assert value(after, **counted) - value(before, **counted) == 1


async def test_a_site_answers_as_a_customer_facing_role_on_the_web(api):
    site = await make_site(api)
    token = (await session(api, site)).json()["token"]

    async def answered_as(question: str) -> str:
        await ask(api, token, question)
        shown = (await api.get("/widget/conversation", headers=_bearer(token))).json()
        owner = (await api.get(f"/conversations/{shown['conversation_id']}")).json()
        return str(owner["turns"][-1]["role"])

    assert await answered_as("Hello?") == "support"  # none chosen: the web's default
    refused = await api.patch(f"/widget/sites/{site['id']}", json={"role": "finance"})
    assert_problem(refused, 409, "does not answer customers on the web")
    assert_problem(await api.patch(f"/widget/sites/{site['id']}", json={"role": "x"}), 404)
    assert_problem(await api.patch(f"/widget/sites/{site['id']}", json={"role": "X Y"}), 422)
    chosen = await api.patch(f"/widget/sites/{site['id']}", json={"role": "sales"})
    assert chosen.json()["role"] == "sales"
    assert await answered_as("Hello again?") == "sales"


async def test_an_origin_not_allowed_gets_no_session_and_no_cors(api):
    site = await make_site(api)
    refused = await session(api, site, origin=ELSEWHERE)
    assert_problem(refused, 403, "not allowed")
    assert "access-control-allow-origin" not in refused.headers
    preflight = await api.options(
        "/widget/sessions",
        headers={"Origin": ELSEWHERE, "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in preflight.headers
    allowed = await api.options(
        "/widget/sessions", headers={"Origin": SHOP, "Access-Control-Request-Method": "POST"}
    )
    assert allowed.headers["access-control-allow-origin"] == SHOP
    empty = await make_site(api, name="nowhere", allowed_origins=[])
    assert_problem(await session(api, empty), 403)


async def test_tokens_forged_of_another_site_expired_or_revoked_are_refused(api, fake_clock):
    site = await make_site(api)
    other = await make_site(api, name="other", allowed_origins=[SHOP])
    token = (await session(api, site)).json()["token"]
    payload, signature = token.split(".")
    forged = payload + "." + ("A" if signature[0] != "A" else "B") + signature[1:]
    assert_problem(await ask(api, forged, "Hi?"), 401, "not valid")
    # a token of site A is refused on site B's pages (B's origin is not A's), and one
    # rewritten to name site B fails its signature
    other_token = (await session(api, other)).json()["token"]
    assert (await ask(api, other_token, "Hello there?")).status_code == 200
    b_only = await make_site(api, name="b-only", allowed_origins=["https://b.example.com"])
    assert_problem(await ask(api, token, "Hi?", origin="https://b.example.com"), 403)
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    renamed = (
        base64.urlsafe_b64encode(json.dumps({**claims, "s": b_only["public_id"]}).encode())
        .rstrip(b"=")
        .decode()
    )
    assert_problem(await ask(api, f"{renamed}.{signature}", "Hi?"), 401, "not valid")
    assert_problem(await ask(api, "x.y", "Hi?"), 401)
    assert_problem(await api.post("/widget/chat/stream", json={"question": "Hi?"}), 401)

    fake_clock.advance(timedelta(hours=1, seconds=1))
    expired = await ask(api, token, "Hi?")
    assert_problem(expired, 401, "expired")
    assert expired.headers["access-control-allow-origin"] == SHOP  # the widget reads it
    renewed = await session(api, site, renew=token)
    assert renewed.json()["visitor"] == (await _visitor_of(api, token, site))
    fresh = renewed.json()["token"]
    assert (await ask(api, fresh, "Hello?")).status_code == 200
    revoked = await api.post(f"/widget/sites/{site['id']}/revoke-sessions")
    assert revoked.status_code == 204
    fake_clock.advance(timedelta(milliseconds=5))
    assert_problem(await ask(api, fresh, "Hi?"), 401, "revoked")
    after = await session(api, site, renew=fresh)
    assert after.json()["visitor"] != renewed.json()["visitor"]  # a new visitor begins


async def _visitor_of(api, token, site) -> str:
    payload = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["v"]


async def test_a_disabled_site_stops_at_once(api):
    site = await make_site(api)
    token = (await session(api, site)).json()["token"]
    await api.patch(f"/widget/sites/{site['id']}", json={"enabled": False})
    off = await ask(api, token, "Hi?")
    assert_problem(off, 403, "switched off")
    assert off.headers["access-control-allow-origin"] == SHOP
    assert_problem(await session(api, site), 403)


async def test_a_verified_customer_and_a_wrong_hash(api):
    site = await make_site(api)
    secret = site["identity_secret"]
    good = await session(api, site, user_id="cust_1042", user_hash=user_hash(secret, "cust_1042"))
    assert good.status_code == 201 and good.json()["verified"] is True
    wrong = await session(api, site, user_id="cust_1042", user_hash=user_hash(secret, "cust_1"))
    body = assert_problem(wrong, 403)
    assert body["detail"] == "the visitor's identity could not be verified"
    rotated = await api.post(f"/widget/sites/{site['id']}/identity-secret")
    assert rotated.status_code == 201
    stale = await session(api, site, user_id="cust_1042", user_hash=user_hash(secret, "cust_1042"))
    assert_problem(stale, 403)


class TestQuotas:
    """The test client is on loopback, a trusted proxy by default (TRUSTED_PROXIES): its
    X-Forwarded-For names the address a question comes from."""

    async def test_a_visitor_gets_exactly_their_questions_then_a_friendly_429(self, api):
        site = await make_site(api, visitor_questions_per_day=2)
        token = (await session(api, site)).json()["token"]
        for _ in range(2):
            assert (await ask(api, token, "Hello?")).status_code == 200
        refused = await ask(api, token, "Hello?")
        body = assert_problem(refused, 429, "come back tomorrow")
        assert 0 < int(refused.headers["retry-after"]) <= 86400
        assert refused.headers["access-control-allow-origin"] == SHOP
        other = (await session(api, site)).json()["token"]  # another visitor still may
        assert (await ask(api, other, "Hello?")).status_code == 200
        assert body["status"] == 429
        metrics = (await api.get("/metrics")).text
        assert 'ragchat_widget_questions_total{result="visitor_day"} 1.0' in metrics

    async def test_an_address_gets_its_hourly_questions_whatever_visitor_it_claims(self, api):
        site = await make_site(api, ip_questions_per_hour=3)
        forwarded = {"X-Forwarded-For": "203.0.113.7"}
        for _ in range(3):
            token = (await session(api, site)).json()["token"]
            assert (await ask(api, token, "Hello?", **forwarded)).status_code == 200
        token = (await session(api, site)).json()["token"]
        assert_problem(await ask(api, token, "Hello?", **forwarded), 429, "last hour")
        other = {"X-Forwarded-For": "203.0.113.8"}
        assert (await ask(api, token, "Hello?", **other)).status_code == 200


async def test_payloads_over_the_limits_are_refused(api):
    site = await make_site(api)
    token = (await session(api, site)).json()["token"]
    assert_problem(await ask(api, token, "x" * 4001), 422, "4000")
    assert_problem(await ask(api, token, "   "), 422)
    huge = await api.post(
        "/widget/chat/stream",
        content=b'{"question": "' + b"a" * 40_000 + b'"}',
        headers={**_bearer(token), "Content-Type": "application/json"},
    )
    assert huge.status_code == 413
    assert_problem(await ask(api, "a" * 3000, "Hi?"), 401)
    long_user = await session(api, site, user_id="u" * 201, user_hash="00")
    assert_problem(long_user, 422)
    unknown = await api.post(
        "/widget/sessions", json={"site": site["public_id"], "visitor": "me"},
        headers={"Origin": SHOP},
    )  # fmt: skip
    assert_problem(unknown, 422, "visitor")  # the visitor is never the client's to name


async def test_the_identity_secret_is_in_no_visitor_response_page_or_log(api, caplog):
    await api.post("/documents", json={"name": "returns.md", "text": RETURNS})
    site = await make_site(api)
    secret = site["identity_secret"]
    hashed = user_hash(secret, "cust_7")
    seen = [
        await api.get("/widget.js"),
        await session(api, site, user_id="cust_7", user_hash=hashed),
        await session(api, site, user_id="cust_7", user_hash="0" * 64),
        await api.get(f"/widget/sites/{site['id']}"),
        await api.get("/widget/sites"),
        await api.patch(f"/widget/sites/{site['id']}", json={"greeting": "Hi!"}),
    ]
    token = seen[1].json()["token"]
    seen += [
        await ask(api, token, "How long do I have to return an item?"),
        await api.get("/widget/conversation", headers=_bearer(token)),
        await api.get("/openapi.json"),
    ]
    for response in seen:
        assert secret not in response.text, response.request.url
    assert secret not in caplog.text and hashed not in caplog.text


class TestVerifiedCustomers:
    @pytest.fixture
    def settings_overrides(self):
        from cryptography.fernet import Fernet

        return {"addon_encryption_key": Fernet.generate_key().decode()}

    async def test_a_verified_customer_gets_their_own_live_data_and_a_visitor_none(self, api):
        crm = "customer,plan\ncust_7,gold plan\ncust_8,silver plan\n"
        source = await api.post(
            "/integrations", json={"name": "crm", "source_type": "csv", "content": crm}
        )
        assert source.status_code == 201, source.text
        action = await api.post(
            "/live-actions",
            json={
                "name": "plan",
                "source_id": source.json()["id"],
                "template": "customer = {caller}",
                "triggers": ["my plan"],
            },
        )
        assert action.status_code == 201, action.text
        site = await make_site(api)
        hashed = user_hash(site["identity_secret"], "cust_7")
        known = (await session(api, site, user_id="cust_7", user_hash=hashed)).json()["token"]
        done = events(await ask(api, known, "What is my plan?"))[-1][1]
        assert "gold" in done["answer"] and "silver" not in done["answer"]
        assert done["citations"][0]["document_name"] == "live data: plan"

        anonymous = (await session(api, site)).json()["token"]
        done = events(await ask(api, anonymous, "What is my plan?"))[-1][1]
        assert "gold" not in done["answer"] and "silver" not in done["answer"]


class OnAFakeProvider:
    """The service answering on a fake OpenAI server, embedding locally."""

    @pytest.fixture
    async def fake_openai(self, serve_fake: Any) -> Any:
        from tests.io.fakes.openai_server import FakeOpenAI

        return await serve_fake(FakeOpenAI())

    @pytest.fixture
    async def settings_overrides(self, fake_openai: Any) -> dict[str, Any]:
        return {
            "openai_api_key": fake_openai.api_key,
            "openai_base_url": fake_openai.base_url,
            "embedding_provider": "local",
        }


class TestAProviderFailing(OnAFakeProvider):
    async def test_the_visitor_reads_a_plain_apology_the_owner_the_providers(
        self, api, fake_openai, caplog
    ):
        await api.post("/documents", json={"name": "returns.md", "text": RETURNS})
        site = await make_site(api)
        token = (await session(api, site)).json()["token"]
        fake_openai.fail_next(500, times=10)
        failed = await ask(api, token, "How long do I have to return an item?")
        body = assert_problem(failed, 503, "not available right now")
        assert "providers" not in body and "openai" not in failed.text
        assert failed.headers["access-control-allow-origin"] == SHOP
        assert "openai" in caplog.text  # the owner's log says which failed


async def test_a_visitor_sees_a_persons_messages_in_their_own_conversation_only(api, database_url):
    from tests.io.test_conversation_events import add_turn, move_mode, streaming

    site = await make_site(api)
    mine, theirs, newcomer = [(await session(api, site)).json()["token"] for _ in range(3)]
    for token in (mine, theirs):
        assert (await ask(api, token, "Hello?")).status_code == 200

    async def conversation_of(token: str) -> int:
        shown = await api.get("/widget/conversation", headers=_bearer(token))
        return int(shown.json()["conversation_id"])

    my_conversation, their_conversation = [await conversation_of(t) for t in (mine, theirs)]
    with psycopg.connect(database_url, autocommit=True) as sql:
        async with streaming(api, "/widget/events", headers=_bearer(mine)) as stream:
            assert stream.response.headers["access-control-allow-origin"] == SHOP
            add_turn(sql, their_conversation, "person", "For the other visitor")
            move_mode(sql, their_conversation, "human")
            moved = move_mode(sql, my_conversation, "human")
            assert await stream.next() == (moved, "mode", {"mode": "human"})
            add_turn(sql, my_conversation, "customer", "Are you there?")  # their own: not sent
            _, anna = add_turn(sql, my_conversation, "person", "Hello, Anna here.")
            message = {"turn": 3, "author": "person", "answer": "Hello, Anna here."}
            assert await stream.next() == (anna, "message", message)
        # a visitor listening before their first question: the conversation it begins
        async with streaming(api, "/widget/events", headers=_bearer(newcomer)) as stream:
            assert (await ask(api, newcomer, "Hello?")).status_code == 200
            _, wrote = add_turn(sql, await conversation_of(newcomer), "person", "Welcome!")
            assert (await stream.next())[0] == wrote
        # resumed after its last event: what came meanwhile
        _, later = add_turn(sql, my_conversation, "person", "Still there?")
        resumed = {**_bearer(mine), "Last-Event-ID": str(moved)}
        async with streaming(api, "/widget/events", headers=resumed) as stream:
            assert [(await stream.next())[0] for _ in range(2)] == [anna, later]
    assert_problem(await api.get("/widget/events"), 401)
    assert_problem(await api.get("/widget/events", headers=_bearer(mine, ELSEWHERE)), 403)


class TestAPersonTakesOver(OnAFakeProvider):
    async def test_the_visitor_asks_for_a_person_who_answers_live(self, api, fake_openai):
        from tests.io.test_conversation_events import streaming

        def model_calls() -> int:
            return sum(r.path.endswith("/chat/completions") for r in fake_openai.requests)

        await api.post("/documents", json={"name": "returns.md", "text": RETURNS})
        site = await make_site(api)
        token = (await session(api, site)).json()["token"]
        handed = events(await ask(api, token, "Can I talk to a person?"))[-1][1]
        assert (handed["mode"], handed["held"]) == ("human", False)
        assert "will reply here" in handed["answer"]
        conversation = (await api.get("/widget/conversation", headers=_bearer(token))).json()
        async with streaming(api, "/widget/events", headers=_bearer(token)) as stream:
            before = model_calls()
            held = events(await ask(api, token, "My parcel has not arrived."))
            assert [kind for kind, _ in held] == ["done"]  # no words: nobody wrote any
            assert held[-1][1]["held"] is True and held[-1][1]["answer"] == ""
            assert model_calls() == before  # the AI stays silent: no provider call
            text = "Hello, this is Anna: let me look into your parcel."
            wrote = await api.post(
                f"/conversations/{conversation['conversation_id']}/messages", json={"text": text}
            )
            assert wrote.status_code == 201, wrote.text
            _, kind, message = await stream.next()
            assert (kind, message) == (
                "message",
                {"turn": wrote.json()["turn"], "author": "person", "answer": text},
            )
        again = (await api.get("/widget/conversation", headers=_bearer(token))).json()
        assert [(t["turn"], t["author"]) for t in again["turns"]] == [
            (1, "ai"),
            (2, "customer"),
            (3, "person"),
        ]
        assert again["turns"][2]["answer"] == text and again["turns"][2]["question"] == ""
