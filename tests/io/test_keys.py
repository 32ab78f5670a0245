"""API keys (issue 37): made with /keys, each held to its scopes on every route, shown
once, kept as a hash, revoked at once."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from ragcore.api.keys import ROUTE_SCOPES, SCOPES
from ragio.service import Service

OWNER_KEY = "owner-secret-key-0123456789"
OWNER = {"X-API-Key": OWNER_KEY}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"service_api_key": OWNER_KEY}


async def make_key(api: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    made = await api.post("/keys", json=fields, headers=OWNER)
    assert made.status_code == 201, made.text
    return made.json()


def example_path(path: str) -> str:
    """A route's path with every variable part filled in (an id nothing has)."""
    return (
        path.replace("{id}", "987654")
        .replace("{turn}", "1")
        .replace("{role}", "support")
        .replace("{model}", "ragchat")
    )


async def test_every_route_answers_each_scope_as_its_table_says(
    api: httpx.AsyncClient, service: Service
) -> None:
    """The whole table: every route of the OpenAPI document, asked with a key of each
    scope alone, is 403 exactly where the route's security does not list that scope (and
    then names the scope it needs); elsewhere the key gets past its check (whatever the
    route then says of the empty request)."""
    keys = {scope: await make_key(api, name=scope, scopes=[scope]) for scope in SCOPES}
    document = (await api.get("/openapi.json", headers=OWNER)).json()
    table: dict[tuple[str, str, str], bool] = {}
    for path, operations in document["paths"].items():
        for method, described in operations.items():
            if described.get("security") == []:
                continue  # an open route: no key is asked for
            opened = described["security"][0]["ApiKey"]
            assert "admin" in opened
            for scope, key in keys.items():
                # streamed: an events route let through answers for as long as it is read
                async with api.stream(
                    method.upper(),
                    example_path(path),
                    headers={"X-API-Key": key["key"]},
                    json={} if method in ("post", "patch", "put") else None,
                ) as answer:
                    status = answer.status_code
                    if status in (401, 403):
                        await answer.aread()
                table[(method.upper(), path, scope)] = status != 403
                assert status != 401, (method, path, scope, answer.text)
                if scope in opened:
                    assert status != 403, (method, path, scope, answer.text)
                else:
                    assert status == 403, (method, path, scope)
                    detail = answer.json()
                    needed = " or ".join(s for s in opened if s != "admin") or "admin"
                    message = detail.get("detail") or detail["error"]["message"]
                    assert f"needs the {needed} scope" in message
    # the document and the table that decides agree, route by route
    for (method, path), scopes in ROUTE_SCOPES.items():
        assert path in document["paths"], path
        assert method.lower() in document["paths"][path], (method, path)
        for scope in scopes:
            assert table[(method, path, scope)], (method, path, scope)
    allowed = {scope: sum(table[k] for k in table if k[2] == scope) for scope in SCOPES}
    assert allowed["admin"] == len(table) // len(SCOPES)
    assert 0 < allowed["chat"] < allowed["ingest"] < allowed["read"] < allowed["admin"]


async def test_a_key_is_shown_once_and_kept_only_as_a_hash(
    api: httpx.AsyncClient, service: Service
) -> None:
    made = await make_key(api, name="website backend", scopes=["chat"], requests_per_minute=60)
    key = made["key"]
    assert key.startswith("rck_") and len(key) == 47
    assert made["shown"] == key[:10]
    listed = (await api.get("/keys", headers=OWNER)).json()["keys"]
    assert [k["name"] for k in listed] == ["website backend"]
    assert key not in str(listed) and "key" not in listed[0]
    one = await api.get(f"/keys/{made['id']}", headers=OWNER)
    assert key not in one.text

    def stored(conn: Any) -> list[tuple[Any, ...]]:
        return conn.execute("SELECT * FROM api_keys").fetchall()

    rows = await service.database.run(stored)
    assert key not in str(rows)
    assert hashlib.sha256(key.encode()).hexdigest() in str(rows)

    # the key works, as X-API-Key and as a bearer token
    asked = await api.get("/v1/models", headers={"Authorization": f"Bearer {key}"})
    assert asked.status_code == 200
    used = (await api.get(f"/keys/{made['id']}", headers=OWNER)).json()
    assert used["last_used_at"] is not None


async def test_keys_are_refused_clearly(api: httpx.AsyncClient) -> None:
    made = await make_key(api, name="reports", scopes=["read"])
    again = await api.post("/keys", json={"name": "reports", "scopes": ["read"]}, headers=OWNER)
    assert again.status_code == 409 and again.json()["field"] == "name"
    for body, field in (
        ({"scopes": ["read"]}, "name"),
        ({"name": "x"}, "scopes"),
        ({"name": "x", "scopes": ["root"]}, "scopes"),
        ({"name": "x", "scopes": []}, "scopes"),
        ({"name": "x", "scopes": ["chat", "chat"]}, "scopes"),
        ({"name": "x", "scopes": ["chat"], "requests_per_minute": -1}, "requests_per_minute"),
        ({"name": "x", "scopes": ["chat"], "expires_in_days": 0}, "expires_in_days"),
        ({"name": "x", "scopes": ["chat"], "key": "mine"}, "key"),
        ({"name": "x", "scopes": ["chat"], "expires_at": "2020-01-01T00:00:00Z"}, "expires_at"),
    ):
        refused = await api.post("/keys", json=body, headers=OWNER)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["field"] == field
    # a read key cannot make itself an admin key
    escalate = await api.post(
        "/keys", json={"name": "mine", "scopes": ["admin"]}, headers={"X-API-Key": made["key"]}
    )
    assert escalate.status_code == 403
    assert "needs the admin scope" in escalate.json()["detail"]
    # a key of the right form that the service never made
    unknown = await api.get("/documents", headers={"X-API-Key": "rck_" + "A" * 43})
    assert unknown.status_code == 401


async def test_a_chat_key_sees_and_continues_only_its_own_conversations(
    api: httpx.AsyncClient,
) -> None:
    """Offline answers (no provider): a chat key's conversations are its own; the owner's
    and another key's are as unknown to it as ones never begun, and it cannot read the
    owner's documents."""
    await api.post(
        "/documents",
        json={"name": "hours.md", "text": "# Hours\n\nThe shop opens at 9 am on weekdays."},
        headers=OWNER,
    )
    site = await make_key(api, name="website", scopes=["chat"])
    shop = await make_key(api, name="shop app", scopes=["chat"])
    as_site, as_shop = {"X-API-Key": site["key"]}, {"X-API-Key": shop["key"]}
    question = {"question": "When does the shop open?"}
    mine = (await api.post("/chat", json=question, headers=as_site)).json()["conversation_id"]
    theirs = (await api.post("/chat", json=question, headers=as_shop)).json()["conversation_id"]
    owners = (await api.post("/chat", json=question, headers=OWNER)).json()["conversation_id"]

    listed = (await api.get("/conversations", headers=as_site)).json()
    assert [c["id"] for c in listed["conversations"]] == [mine] and listed["total"] == 1
    everyone = (await api.get("/conversations", headers=OWNER)).json()
    assert {c["id"] for c in everyone["conversations"]} == {mine, theirs, owners}
    assert (await api.get(f"/conversations/{mine}", headers=as_site)).status_code == 200
    for other in (theirs, owners):
        assert (await api.get(f"/conversations/{other}", headers=as_site)).status_code == 404
        followup = await api.post(
            "/chat", json={**question, "conversation_id": other}, headers=as_site
        )
        assert followup.status_code == 404
        rated = await api.post(
            f"/conversations/{other}/turns/1/feedback", json={"rating": "up"}, headers=as_site
        )
        assert rated.status_code == 404
    again = await api.post("/chat", json={**question, "conversation_id": mine}, headers=as_site)
    assert again.status_code == 200 and again.json()["conversation_id"] == mine
    rated = await api.post(
        f"/conversations/{mine}/turns/1/feedback", json={"rating": "up"}, headers=as_site
    )
    assert rated.status_code == 204
    documents = await api.get("/documents", headers=as_site)
    assert documents.status_code == 403
    assert "needs the read or ingest scope" in documents.json()["detail"]
