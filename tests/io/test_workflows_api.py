"""/automation-workflows through the real HTTP API: create, list with filters, read,
edit, delete, and every way a request is refused (nothing is written then), including
every target a workflow call must not reach. Names are looked up through the tests'
resolver (tests/io/actions.py), never real DNS."""

from __future__ import annotations

import attrs
import httpx
import psycopg
import pytest

from tests.io.actions import use_resolver
from tests.io.conftest import serve_service
from tests.io.test_http_errors import assert_problem

ORDERS = {
    "name": "Order follow-up",
    "webhook_url": "https://hooks.example.com/catch/1?token=s3cret",
    "channels": ["telegram", "whatsapp"],
}
TICKETS = {
    "name": "Discord tickets",
    "webhook_url": "http://n8n.example.test:5678/webhook/tickets",
    "channels": ["discord"],
    "is_active": False,
}


@pytest.fixture(autouse=True)
def resolver(monkeypatch):
    return use_resolver(monkeypatch)


def workflow_count(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT count(*) FROM automation_workflows").fetchone()[0]


async def create(api, body):
    response = await api.post("/automation-workflows", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def test_a_created_workflow_is_201_with_its_location_and_reads_back(api):
    response = await api.post("/automation-workflows", json=ORDERS)
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["id"] >= 1
    assert response.headers["location"] == f"/automation-workflows/{created['id']}"
    assert {k: created[k] for k in ORDERS} == ORDERS
    assert created["is_active"] is True  # active unless told
    assert created["created_at"] and created["created_at"] == created["updated_at"]
    again = await api.get(response.headers["location"])
    assert again.status_code == 200 and again.json() == created


async def test_the_listing_filters_by_channel_and_by_active_status(api):
    orders = await create(api, ORDERS)
    tickets = await create(api, TICKETS)

    async def ids(query: str = "") -> list[int]:
        response = await api.get(f"/automation-workflows{query}")
        assert response.status_code == 200, response.text
        return [w["id"] for w in response.json()["workflows"]]

    assert await ids() == [orders["id"], tickets["id"]]  # oldest first
    assert await ids("?channel=telegram") == [orders["id"]]
    assert await ids("?channel=discord") == [tickets["id"]]
    assert await ids("?is_active=true") == [orders["id"]]
    assert await ids("?is_active=false") == [tickets["id"]]
    assert await ids("?channel=discord&is_active=true") == []
    assert await ids("?channel=WhatsApp&is_active=TRUE") == [orders["id"]]


@pytest.mark.parametrize(
    "query, detail",
    [
        ("?channel=voice", "voice channel is not wired"),
        ("?channel=fax", "unknown channel 'fax'"),
        ("?channel=", "unknown channel"),
        ("?is_active=yes", "true or false"),
        ("?active=true", "unknown query parameter(s) active"),
        ("?channel=telegram&channel=discord", "give channel once"),
    ],
)
async def test_bad_filters_are_422(api, query, detail):
    assert_problem(await api.get(f"/automation-workflows{query}"), 422, detail)


async def test_patch_changes_the_fields_given_and_keeps_the_others(api):
    created = await create(api, ORDERS)
    url = f"/automation-workflows/{created['id']}"
    response = await api.patch(url, json={"is_active": False, "channels": ["discord"]})
    assert response.status_code == 200, response.text
    edited = response.json()
    assert edited["is_active"] is False and edited["channels"] == ["discord"]
    assert edited["name"] == ORDERS["name"] and edited["webhook_url"] == ORDERS["webhook_url"]
    assert edited["updated_at"] > created["updated_at"]
    assert (await api.get(url)).json() == edited
    renamed = (await api.patch(url, json={"name": "Orders", "is_active": True})).json()
    assert renamed["name"] == "Orders" and renamed["is_active"] is True


async def test_a_patch_that_changes_nothing_is_fine_and_keeps_updated_at(api):
    created = await create(api, ORDERS)
    url = f"/automation-workflows/{created['id']}"
    for body in ({}, {"name": ORDERS["name"], "channels": ["telegram", "whatsapp"]}):
        response = await api.patch(url, json=body)
        assert response.status_code == 200, response.text
        assert response.json() == created


async def test_delete_is_204_and_the_workflow_is_gone(api, database_url):
    created = await create(api, ORDERS)
    url = f"/automation-workflows/{created['id']}"
    response = await api.delete(url)
    assert response.status_code == 204 and response.content == b""
    assert_problem(await api.get(url), 404, "no workflow")
    assert_problem(await api.delete(url), 404, "no workflow")
    assert workflow_count(database_url) == 0


@pytest.mark.parametrize("method", ["get", "patch", "delete"])
@pytest.mark.parametrize("raw_id", ["999", "abc", "0", "-1", "1.5", "99999999999999999999"])
async def test_an_unknown_or_impossible_id_is_404(api, method, raw_id):
    await create(api, ORDERS)  # id 1 exists; none of these is it
    kwargs = {"json": {"name": "x"}} if method == "patch" else {}
    response = await getattr(api, method)(f"/automation-workflows/{raw_id}", **kwargs)
    body = assert_problem(response, 404, "no workflow")
    assert "GET /automation-workflows" in body["detail"]


@pytest.mark.parametrize(
    "change, field, detail",
    [
        ({"name": ""}, "name", "blank"),
        ({"name": None}, "name", "text"),
        ({"webhook_url": "ftp://files.example.com/in"}, "webhook_url", "http:// or https://"),
        ({"webhook_url": "https://"}, "webhook_url", "no host"),
        ({"webhook_url": "https://me:pw@hooks.example.com/x"}, "webhook_url", "user:password"),
        ({"channels": ["voice"]}, "channels", "voice channel is not wired"),
        ({"channels": ["sms"]}, "channels", "unknown channel"),
        ({"channels": []}, "channels", "never fires"),
        ({"channels": "telegram"}, "channels", "list"),
        ({"is_active": "yes"}, "is_active", "JSON boolean"),
        ({"secret": "x"}, "secret", "unknown field(s) secret"),
        ({"id": 7}, "id", "read-only field(s) id"),
    ],
)
async def test_bad_fields_are_422_naming_the_field_and_write_nothing(
    api, database_url, change, field, detail
):
    body = assert_problem(
        await api.post("/automation-workflows", json={**ORDERS, **change}), 422, detail
    )
    assert body["field"] == field
    assert workflow_count(database_url) == 0
    created = await create(api, ORDERS)
    url = f"/automation-workflows/{created['id']}"
    body = assert_problem(await api.patch(url, json=change), 422, detail)
    assert body["field"] == field
    assert (await api.get(url)).json() == created  # the refused PATCH changed nothing


async def test_missing_required_fields_are_422_naming_them(api, database_url):
    body = assert_problem(
        await api.post("/automation-workflows", json={"name": "x"}), 422, "required"
    )
    assert body["field"] == "webhook_url, channels"
    assert workflow_count(database_url) == 0


@pytest.mark.parametrize("method", ["post", "patch"])
async def test_bodies_that_are_not_a_json_object_are_400_or_415(api, method):
    url = "/automation-workflows" if method == "post" else "/automation-workflows/1"
    if method == "patch":
        await create(api, ORDERS)
    send = getattr(api, method)
    assert_problem(await send(url), 400, "JSON object")
    assert_problem(await send(url, json=["telegram"]), 400, "JSON object")
    assert_problem(
        await send(url, content=b'{"name": ', headers={"content-type": "application/json"}),
        400,
        "not valid JSON",
    )
    assert_problem(
        await send(url, content=b"name=x", headers={"content-type": "text/plain"}),
        415,
        "application/json",
    )


async def test_other_methods_are_405_with_allow(api):
    response = await api.put("/automation-workflows/1", json=ORDERS)
    assert_problem(response, 405)
    assert "PATCH" in response.headers["allow"]
    assert_problem(await api.delete("/automation-workflows"), 405)


async def test_the_routes_need_the_api_key_when_one_is_set(service, nursery):
    keyed = attrs.evolve(service, settings=attrs.evolve(service.settings, service_api_key="k"))
    base_url, stop = await serve_service(keyed, nursery)
    async with httpx.AsyncClient(base_url=base_url) as client:
        assert_problem(await client.get("/automation-workflows"), 401, "X-API-Key")
        assert_problem(await client.post("/automation-workflows", json=ORDERS), 401)
        ok = await client.get("/automation-workflows", headers={"X-API-Key": "k"})
        assert ok.status_code == 200 and ok.json() == {"workflows": []}
    stop.set()


# ---------------------------------------------------------------- targets a call must not reach

LOCAL_HINT = "set WORKFLOW_ALLOW_PRIVATE_TARGETS=true to call a workflow engine on this host or LAN"
NEVER = "workflow calls never go there"
SELF = "http://127.0.0.1:{port}/chat"  # the service's own address: {port} is where it is served
METADATA = f"a cloud metadata address; {NEVER}"
PRIVATE = f"a private address; {LOCAL_HINT}"
LOOPBACK = f"a loopback address; {LOCAL_HINT}"
NOT_PUBLIC = [
    ("http://169.254.169.254/latest/meta-data/", f"169.254.169.254 is {METADATA}"),
    ("http://[fd00:ec2::254]/latest/meta-data/", f"fd00:ec2::254 is {METADATA}"),
    ("http://10.0.0.5:5678/webhook/x", f"10.0.0.5 is {PRIVATE}"),
    ("http://192.168.1.10/hook", f"192.168.1.10 is {PRIVATE}"),
    ("http://127.1:5678/webhook/x", f"127.1: 127.0.0.1 is {LOOPBACK}"),
    ("http://2130706433:5678/", f"2130706433: 127.0.0.1 is {LOOPBACK}"),
    ("http://0x7f000001:5678/", f"0x7f000001: 127.0.0.1 is {LOOPBACK}"),
    ("http://[::ffff:127.0.0.1]:5678/", f"::ffff:127.0.0.1 (127.0.0.1) is {LOOPBACK}"),
    ("http://0.0.0.0:5678/", f"0.0.0.0 is an unspecified address; {NEVER}"),
    ("http://localhost:5678/webhook/x", f"localhost: 127.0.0.1 is {LOOPBACK}"),
    ("http://internal.example.test/hook", f"internal.example.test: 10.0.0.5 is {PRIVATE}"),
    (SELF, "is this service itself (APP_BIND and APP_PORT); workflow calls never call back"),
]
# refused with WORKFLOW_ALLOW_PRIVATE_TARGETS on too
NEVER_REACHED = [
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata address"),
    ("http://[fd00:ec2::254]/", "cloud metadata address"),
    ("http://metadata.google.internal/computeMetadata/v1/", "cloud metadata name"),
    ("http://metadata.example.test/", "metadata.example.test: 169.254.169.254 is a cloud metadata"),
    ("http://169.254.10.10/", "link-local address"),
    ("http://[fe80::1%25eth0]:5678/", "link-local address"),
    ("http://0.0.0.0:5678/", "unspecified address"),
    ("http://[::]:5678/", "unspecified address"),
    ("http://224.0.0.1/", "multicast address"),
    (SELF, "is this service itself"),
]
LOCAL_ENGINES = [
    "http://localhost:5678/webhook/orders",
    "http://127.1:5678/webhook/orders",
    "http://[::1]:5678/webhook/orders",
    "http://192.168.1.10:5678/webhook/orders",
    "http://internal.example.test:5678/webhook/orders",
]


def served_as_self(api, service, monkeypatch, **settings) -> str:
    """Point APP_PORT at the port the app is really served on (APP_BIND is 127.0.0.1), and
    apply ``settings``; the service's own URL."""
    port = api.base_url.port
    changed = attrs.evolve(service.settings, app_port=port, **settings)
    monkeypatch.setattr(service, "settings", changed)
    return SELF.format(port=port)


async def assert_refused_at_post_and_patch(api, database_url, url, detail):
    body = assert_problem(
        await api.post("/automation-workflows", json={**ORDERS, "webhook_url": url}), 422, detail
    )
    assert body["field"] == "webhook_url"
    assert workflow_count(database_url) == 0
    created = await create(api, ORDERS)
    path = f"/automation-workflows/{created['id']}"
    body = assert_problem(await api.patch(path, json={"webhook_url": url}), 422, detail)
    assert body["field"] == "webhook_url"
    assert (await api.get(path)).json() == created  # the refused PATCH changed nothing
    await api.delete(path)


@pytest.mark.parametrize("url, detail", NOT_PUBLIC)
async def test_a_target_that_is_not_public_is_422_at_post_and_patch_and_nothing_is_stored(
    api, service, database_url, monkeypatch, url, detail
):
    own = served_as_self(api, service, monkeypatch)
    await assert_refused_at_post_and_patch(api, database_url, url.replace(SELF, own), detail)


@pytest.mark.parametrize("url, detail", NEVER_REACHED)
async def test_with_private_targets_allowed_metadata_link_local_and_the_service_stay_refused(
    api, service, database_url, monkeypatch, url, detail
):
    own = served_as_self(api, service, monkeypatch, workflow_allow_private_targets=True)
    await assert_refused_at_post_and_patch(api, database_url, url.replace(SELF, own), detail)


@pytest.mark.parametrize("url", LOCAL_ENGINES)
async def test_with_private_targets_allowed_a_local_engine_is_saved(api, service, monkeypatch, url):
    served_as_self(api, service, monkeypatch, workflow_allow_private_targets=True)
    created = await create(api, {**ORDERS, "webhook_url": url})
    assert created["webhook_url"] == url
    edited = await api.patch(f"/automation-workflows/{created['id']}", json={"webhook_url": url})
    assert edited.status_code == 200, edited.text


async def test_a_name_that_does_not_resolve_now_is_saved_and_checked_at_each_call(api, resolver):
    created = await create(api, ORDERS)  # hooks.example.com: no DNS in the tests
    assert created["webhook_url"] == ORDERS["webhook_url"]
    assert resolver.lookups == ["hooks.example.com"]
