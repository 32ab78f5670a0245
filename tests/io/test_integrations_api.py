"""/integrations through the real HTTP app, with the csv kind (its records are the rows of
the CSV text stored, encrypted, in the source's content field): create, read, edit and
delete a data source with its credentials encrypted at rest and never shown; test it;
sync it (in the background, the bound, a second sync refused while one holds the source,
a stale one taken over) and read a user's records; the encryption key's rotation and
`ragchat rekey`, a wrong key and none; `ragchat sync`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx
import psycopg
import pytest
import trio
from cryptography.fernet import Fernet
from psycopg.conninfo import conninfo_to_dict

from ragcore.jobs import FIRST_BACKOFF
from ragio.integrations import connectors, store, sync
from ragio.integrations.credentials import Keys
from ragio.jobs import worker
from ragio.startup import open_service
from tests.conftest import make_settings
from tests.io.conftest import serve_service
from tests.io.fakes.rest_server import FakeRestApi
from tests.io.processes import run_cli
from tests.io.test_http_errors import assert_problem

KEY_A = Fernet.generate_key().decode()
KEY_B = Fernet.generate_key().decode()
SECRET_ROW = "zq-secret-marker"  # text that appears only inside the CSV
CUSTOMERS = (
    "email;name;plan;note\n"
    "Ada@Example.com;Ada;pro;" + SECRET_ROW + "\n"
    "bo@example.com;Bo;free;\n"
    ";Nobody;free;no e-mail\n"
    "ada@example.com;Ada;team;second account\n"
)
CSV_SOURCE = {"name": "Customers", "source_type": "csv", "content": CUSTOMERS}
# a cell beyond the csv module's field limit (131,072 characters): not a readable CSV
BROKEN = {"name": "Broken", "source_type": "csv", "content": 'a\n"' + "x" * 140_000 + '"\n'}


@pytest.fixture
def settings_overrides():
    # the database sources here are on 127.0.0.1
    return {"addon_encryption_key": KEY_A, "integrations_allow_private_targets": True}


def raw_rows(database_url: str) -> list[tuple]:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT * FROM integrations").fetchall()


def counts(database_url: str) -> tuple[int, int]:
    with psycopg.connect(database_url) as conn:
        sources = conn.execute("SELECT count(*) FROM integrations").fetchone()[0]
        records = conn.execute("SELECT count(*) FROM integration_records").fetchone()[0]
    return sources, records


async def create(api, body=CSV_SOURCE):
    response = await api.post("/integrations", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def synced(api, source_id: int, expect: str = "succeeded") -> dict:
    """Start a sync and wait for its end; the source as it ended."""
    started = await api.post(f"/integrations/{source_id}/sync")
    assert started.status_code == 202, started.text
    assert started.json()["sync"]["status"] == "syncing"
    with trio.fail_after(30):
        while True:
            shown = (await api.get(f"/integrations/{source_id}")).json()
            if shown["sync"]["status"] != "syncing":
                break
            await trio.sleep(0.05)
    assert shown["sync"]["status"] == expect, shown
    return shown


async def records(api, source_id: int, user: str, **params) -> dict:
    response = await api.get(f"/integrations/{source_id}/records", params={"user": user, **params})
    assert response.status_code == 200, response.text
    return response.json()


@asynccontextmanager
async def serving(
    database_url: str, tmp_path: Path, nursery, **settings
) -> AsyncIterator[httpx.AsyncClient]:
    """The app on the same database with other settings (another key, another bound)."""
    made = make_settings(database_url=database_url, data_dir=tmp_path / "data", **settings)
    async with open_service(made) as svc:
        base_url, stop = await serve_service(svc, nursery)
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            yield client
        stop.set()


# ------------------------------------------------------------------ the resource


async def test_a_created_source_is_201_masked_and_its_credentials_unreadable_at_rest(
    api, database_url
):
    response = await api.post("/integrations", json={**CSV_SOURCE, "sync_interval_minutes": 60})
    assert response.status_code == 201, response.text
    created = response.json()
    assert response.headers["location"] == f"/integrations/{created['id']}"
    assert created["name"] == "Customers" and created["source_type"] == "csv"
    assert created["credentials"] == {"content": "********"}
    assert created["user_field"] == "email"  # the kind's default
    assert created["sync_interval_minutes"] == 60
    assert created["sync"]["status"] == "never"
    assert SECRET_ROW not in response.text
    [row] = raw_rows(database_url)
    assert SECRET_ROW not in repr(row) and "Ada" not in repr(row)
    assert (await api.get(response.headers["location"])).json() == created
    listed = (await api.get("/integrations")).json()
    assert listed == {"integrations": [created]}


async def test_a_database_sources_plain_fields_show_and_its_secrets_do_not(
    api, database_url, caplog
):
    caplog.set_level("DEBUG")
    body = {
        "name": "Shop DB",
        "source_type": "postgresql",
        "host": "127.0.0.1",
        "port": 1,  # nothing listens there: its test and sync fail with the reason
        "user": "reader",
        "password": "hunter2-pw",
        "database": "shop",
        "table": "customers",
    }
    created = await create(api, body)
    assert created["credentials"] == {
        "database": "shop",
        "host": "127.0.0.1",
        "password": "********",
        "port": "1",
        "table": "customers",
        "user": "reader",
    }
    assert "hunter2-pw" not in repr(raw_rows(database_url))
    tested = await api.post(f"/integrations/{created['id']}/test")
    assert tested.status_code == 200
    assert tested.json()["ok"] is False
    assert "refused" in tested.json()["message"]
    assert "hunter2-pw" not in tested.text
    synced_source = await synced(api, created["id"], expect="failed")
    assert "refused" in synced_source["sync"]["error"]
    assert "hunter2-pw" not in caplog.text  # nor logged


async def test_the_kinds_describe_every_source_type_with_its_fields(api):
    response = await api.get("/integrations/kinds")
    assert response.status_code == 200, response.text
    kinds = {kind["source_type"]: kind for kind in response.json()["kinds"]}
    schema = (await api.get("/openapi.json")).json()["paths"]["/integrations"]["post"]
    body = schema["requestBody"]["content"]["application/json"]["schema"]
    assert list(kinds) == body["properties"]["source_type"]["enum"]
    for kind in kinds.values():
        names = [field["name"] for field in kind["fields"]]
        assert kind["description"] and kind["user_field"] and kind["required"]
        assert all(name in names for option in kind["required"] for name in option), kind
    mysql = {field["name"]: field for field in kinds["mysql"]["fields"]}
    assert mysql["port"] == {
        "name": "port",
        "meaning": "the server's port",
        "secret": False,
        "default": "3306",
        "integer": True,
        "max_chars": 4096,
    }
    assert mysql["password"]["secret"] and mysql["url"]["secret"]
    assert not mysql["host"]["secret"] and mysql["host"]["default"] is None
    assert kinds["mysql"]["required"] == [["url", "table"], ["host", "user", "database", "table"]]
    assert kinds["hubspot"]["user_field"] == "properties.email"
    assert kinds["csv"]["required"] == [["content"]]


async def test_a_form_built_from_its_kind_creates_a_source_with_its_secrets_masked(api):
    kinds = (await api.get("/integrations/kinds")).json()["kinds"]
    [csv] = [kind for kind in kinds if kind["source_type"] == "csv"]
    body = {"name": "From the form", "source_type": "csv"}
    body |= {name: "email\nann@example.com\n" for name in csv["required"][0]}
    created = await create(api, body)
    secret = {field["name"] for field in csv["fields"] if field["secret"]}
    assert created["credentials"] == dict.fromkeys(secret, "********")
    assert created["user_field"] == csv["user_field"]
    refused = assert_problem(await api.post("/integrations", json={**body, "content": None}), 422)
    assert refused["field"] == "content"


async def test_kinds_is_a_route_of_its_own_never_a_sources_id(api):
    await create(api)
    for method in ("PATCH", "DELETE", "POST"):
        refused = await api.request(method, "/integrations/kinds", json={})
        assert refused.status_code == 405, (method, refused.text)
        assert refused.headers["allow"] == "GET, HEAD, OPTIONS"
    assert (await api.get("/integrations/kinds")).json()["kinds"]


async def test_bad_bodies_are_422_naming_the_field_and_store_nothing(api, database_url):
    cases = [
        ({"name": "x", "source_type": "ftp"}, "source_type"),
        ({"name": "x", "source_type": "csv"}, "content"),
        ({"source_type": "csv", "content": "a\n1\n"}, "name"),
        ({**CSV_SOURCE, "password": "p"}, "password"),  # not a field of csv
        ({**CSV_SOURCE, "sync_interval_minutes": 0}, "sync_interval_minutes"),
        ({**CSV_SOURCE, "name": ""}, "name"),
        ({**CSV_SOURCE, "id": 4}, "id"),
    ]
    for body, field in cases:
        response = await api.post("/integrations", json=body)
        problem = assert_problem(response, 422)
        assert field in problem["field"] or field in problem["detail"], (body, problem)
    assert counts(database_url) == (0, 0)


async def test_settings_the_connector_cannot_use_are_422_at_save_and_store_nothing(
    api, database_url
):
    """A REST source's auth_header without its header name (``Bearer tok``) used to be
    stored and then fail every test, sync and live query: it is refused as it is saved,
    the field named, the token never echoed; a PATCH is judged on its merged result."""
    rest = {
        "name": "CRM",
        "source_type": "rest_api",
        "base_url": "https://crm.example.com",
        "records_path": "/customers",
    }
    cases = [
        ({**rest, "auth_header": "Bearer tok-5e1d9a"}, "auth_header"),
        ({**rest, "base_url": "ftp://crm.example.com"}, "base_url"),
        ({"name": "S", "source_type": "stripe", "secret_key": "sk_x", "resource": "x"}, "resource"),
    ]
    for body, field in cases:
        problem = assert_problem(await api.post("/integrations", json=body), 422)
        assert problem["field"] == field and problem["detail"].startswith(f"{field}: "), problem
        assert "tok-5e1d9a" not in str(problem)
    assert counts(database_url) == (0, 0)
    created = await api.post("/integrations", json={**rest, "auth_header": "X-Key: k1"})
    assert created.status_code == 201, created.text
    url = created.headers["location"]
    problem = assert_problem(await api.patch(url, json={"auth_header": "tok-5e1d9a"}), 422)
    assert problem["field"] == "auth_header" and "tok-5e1d9a" not in str(problem)
    shown = (await api.get(url)).json()
    assert shown["updated_at"] == created.json()["updated_at"]  # nothing stored


PRIVATE_HINT = (
    "set INTEGRATIONS_ALLOW_PRIVATE_TARGETS=true to reach a data source on this host or LAN"
)
LOOPBACK = f"is a loopback address; {PRIVATE_HINT}"


async def test_hosts_a_source_may_not_reach_are_422_naming_the_field(api, service, database_url):
    service.settings = attrs.evolve(service.settings, integrations_allow_private_targets=False)
    mysql = {"name": "Shop", "source_type": "mysql", "user": "r", "database": "d", "table": "t"}
    cases = [
        ({**mysql, "host": "127.0.0.1"}, "host", f"127.0.0.1 {LOOPBACK}"),
        ({**mysql, "host": "0x7f000001"}, "host", "is a loopback address"),
        ({**mysql, "host": "192.168.1.20"}, "host", "is a private address"),
        (
            {"name": "Shop", "source_type": "mysql", "url": "mysql://r:hunter2-pw@[::1]:3306/d",
             "table": "t"},
            "url",
            "is a loopback address",
        ),
        (
            {"name": "Docs", "source_type": "mongodb", "url": "mongodb://10.1.2.3,db.example",
             "database": "d", "collection": "c"},
            "url",
            "10.1.2.3 is a private address",
        ),
        (
            {"name": "API", "source_type": "rest_api", "base_url": "https://localhost:8443/v1",
             "records_path": "/customers"},
            "base_url",
            "is a loopback address",
        ),
        (
            {"name": "CRM", "source_type": "hubspot", "access_token": "pat-x",
             "api_base": "https://169.254.169.254"},
            "api_base",
            "is a cloud metadata address; data sources never go there",
        ),
    ]  # fmt: skip
    for body, field, reason in cases:
        problem = assert_problem(await api.post("/integrations", json=body), 422, reason)
        assert problem["field"] == field and problem["detail"].startswith(f"{field}: "), problem
        assert "hunter2-pw" not in problem["detail"]
    assert counts(database_url) == (0, 0)
    # a name is resolved and judged at every use, not when saved
    created = await create(api, {**mysql, "host": "db.example.com"})
    url = f"/integrations/{created['id']}"
    assert_problem(await api.patch(url, json={"host": "10.0.0.7"}), 422, "is a private address")
    assert (await api.get(url)).json()["credentials"]["host"] == "db.example.com"
    # the owner's database on their LAN: allowed by the setting
    service.settings = attrs.evolve(service.settings, integrations_allow_private_targets=True)
    patched = await api.patch(url, json={"host": "10.0.0.7"})
    assert patched.status_code == 200, patched.text
    # link-local and metadata stay refused
    problem = assert_problem(await api.patch(url, json={"host": "169.254.169.254"}), 422)
    assert problem["field"] == "host" and "never go there" in problem["detail"]


async def test_a_stored_source_on_a_refused_address_is_not_connected_to(api, service):
    body = {"name": "LAN DB", "source_type": "postgresql", "host": "127.0.0.1", "port": 1,
            "user": "r", "password": "hunter2-pw", "database": "d", "table": "t"}  # fmt: skip
    created = await create(api, body)
    service.settings = attrs.evolve(service.settings, integrations_allow_private_targets=False)
    tested = (await api.post(f"/integrations/{created['id']}/test")).json()
    assert tested == {
        "ok": False,
        "message": f"host: 127.0.0.1 is a loopback address; {PRIVATE_HINT}",
    }
    ended = await synced(api, created["id"], expect="failed")
    assert ended["sync"]["error"] == tested["message"]


async def test_the_services_own_database_is_never_a_data_source(api, service, database_url):
    own = conninfo_to_dict(database_url)["host"]  # the embedded server's socket directory
    body = {"name": "Own", "source_type": "postgresql", "host": own, "user": "postgres",
            "database": "ragchat", "table": "integrations"}  # fmt: skip
    ours = "is where the service's own database listens; a data source never reads"
    for allowed in (False, True):  # whether Unix sockets are allowed or not
        service.settings = attrs.evolve(service.settings, integrations_allow_unix_sockets=allowed)
        problem = assert_problem(await api.post("/integrations", json=body), 422, ours)
        assert problem["field"] == "host"
        assert problem["detail"] == f"host: {own} {ours} the service's own database"
    by_url = {**body, "url": f"postgresql://postgres@/ragchat?host={own}"}
    del by_url["host"], by_url["user"], by_url["database"]
    problem = assert_problem(await api.post("/integrations", json=by_url), 422, ours)
    assert problem["field"] == "url"
    data_dir = Path(service.settings.data_dir) / "postgres"
    problem = assert_problem(
        await api.post("/integrations", json={**body, "host": str(data_dir)}), 422, "DATA_DIR"
    )
    assert counts(database_url) == (0, 0)
    # a source saved before this check (or by another version) is refused at every use
    token = Keys.of(service.settings).encrypt(
        {k: v for k, v in body.items() if k not in ("name", "source_type")}
    )
    stored = await service.database.run(
        store.create_source, "Old", "postgresql", token, ["database", "host", "table", "user"],
        "email", None,
    )  # fmt: skip
    tested = (await api.post(f"/integrations/{stored.id}/test")).json()
    assert tested["ok"] is False and ours in tested["message"], tested


async def test_an_answer_over_the_cap_is_refused_and_not_read_whole(api, service, serve_fake):
    """A REST source answering a body larger than INTEGRATIONS_MAX_RESPONSE_MB (1 MB,
    streamed with no Content-Length; the cap here 0.01 MB): the test, the sync and a live
    query each fail saying so."""
    service.settings = attrs.evolve(
        service.settings, integrations_allow_http_loopback=True, integrations_max_response_mb=0.01
    )
    fake = await serve_fake(FakeRestApi("Authorization", "Bearer t-1", 3))
    fake.streamed = 2**20
    body = {
        "name": "Huge",
        "source_type": "rest_api",
        "base_url": fake.base_url,
        "records_path": "/v1/customers",
        "auth_header": "Authorization: Bearer t-1",
    }
    created = await create(api, body)
    said = (
        "REST API: the source answered more than 0.01 MB; nothing more was read "
        "(INTEGRATIONS_MAX_RESPONSE_MB)"
    )
    tested = (await api.post(f"/integrations/{created['id']}/test")).json()
    assert tested == {"ok": False, "message": said}
    ended = await synced(api, created["id"], expect="failed")
    assert ended["sync"]["error"] == said
    action = {"name": "Order", "source_id": created["id"], "template": "/v1/customers/{order_id}"}
    made = await api.post("/live-actions", json=action)
    assert made.status_code == 201, made.text
    run = await api.post(
        f"/live-actions/{made.json()['id']}/dry-run", json={"values": {"order_id": "7"}}
    )
    assert (run.json()["failed"], run.json()["reason"]) == (True, said)
    assert len(fake.requests) == 3


async def test_a_taken_name_is_409(api, database_url):
    await create(api)
    assert_problem(await api.post("/integrations", json=CSV_SOURCE), 409, "Customers")
    assert counts(database_url)[0] == 1


async def test_patch_changes_fields_and_replaces_credentials(api):
    created = await create(api)
    url = f"/integrations/{created['id']}"
    patched = await api.patch(url, json={"name": "Clients", "user_field": "name"})
    assert patched.status_code == 200, patched.text
    assert patched.json()["name"] == "Clients" and patched.json()["user_field"] == "name"
    await synced(api, created["id"])
    assert (await records(api, created["id"], "Bo"))["records"][0]["record"]["plan"] == "free"
    replaced = await api.patch(url, json={"content": "name,plan\nCy,pro\n"})
    assert replaced.json()["credentials"] == {"content": "********"}
    await synced(api, created["id"])
    assert [r["record"] for r in (await records(api, created["id"], "Cy"))["records"]] == [
        {"name": "Cy", "plan": "pro"}
    ]
    assert_problem(await api.patch(url, json={"source_type": "stripe"}), 422)
    assert_problem(await api.patch(url, json={"content": None}), 422, "content")
    assert_problem(await api.patch(url, json={"host": "x"}), 422)
    assert_problem(await api.patch("/integrations/999", json={"name": "x"}), 404)


async def test_delete_removes_the_source_and_its_records(api, database_url):
    created = await create(api)
    await synced(api, created["id"])
    assert counts(database_url) == (1, 3)
    response = await api.delete(f"/integrations/{created['id']}")
    assert response.status_code == 204
    assert counts(database_url) == (0, 0)
    assert_problem(await api.get(f"/integrations/{created['id']}"), 404, "GET /integrations")
    assert_problem(await api.delete(f"/integrations/{created['id']}"), 404)
    assert_problem(await api.get("/integrations/abc"), 404)


async def test_a_csv_file_uploaded_as_multipart_is_a_source(api, database_url):
    upload = {"file": ("customers.csv", CUSTOMERS.encode(), "text/csv")}
    for form, field in (
        ({"name": "x", "source_type": "stripe"}, "source_type"),
        ({"name": "x", "colour": "red"}, "colour"),
        ({"name": "x", "sync_interval_minutes": "often"}, "sync_interval_minutes"),
        ({}, "name"),
    ):
        refused = await api.post("/integrations", data=form, files=upload)
        assert assert_problem(refused, 422)["field"] == field
    no_file = await api.post("/integrations", data={"name": "x"}, files={"other": ("a", b"b")})
    assert_problem(no_file, 422)
    assert counts(database_url) == (0, 0)
    response = await api.post(
        "/integrations",
        data={"name": "Uploaded", "user_field": "email", "sync_interval_minutes": ""},
        files=upload,
    )
    assert response.status_code == 201, response.text
    assert response.json()["source_type"] == "csv"
    assert response.json()["sync_interval_minutes"] is None
    tested = (await api.post(f"/integrations/{response.json()['id']}/test")).json()
    assert tested == {
        "ok": True,
        "message": "CSV file: 4 rows, 4 columns (email, name, plan, note)",
    }


# ------------------------------------------------------------------ test and sync


async def test_the_test_says_what_answered_or_why_not(api):
    good = await create(api)
    tested = await api.post(f"/integrations/{good['id']}/test")
    assert tested.status_code == 200
    assert tested.json() == {
        "ok": True,
        "message": "CSV file: 4 rows, 4 columns (email, name, plan, note)",
    }
    empty = await create(api, {"name": "Empty", "source_type": "csv", "content": "email\n"})
    tested = await api.post(f"/integrations/{empty['id']}/test")
    assert tested.status_code == 200
    assert tested.json() == {
        "ok": False,
        "message": "the CSV content has no rows under its header row",
    }


async def test_a_sync_stores_each_users_records_and_skips_those_without_one(api, caplog):
    caplog.set_level("DEBUG")
    created = await create(api)
    ended = await synced(api, created["id"])
    state = ended["sync"]
    assert (state["records_seen"], state["records_stored"], state["records_skipped"]) == (4, 3, 1)
    assert state["records_removed"] == 0 and state["error"] == ""
    assert state["started_at"] <= state["finished_at"]
    ada = await records(api, created["id"], "ADA@example.com ")  # the same user key
    assert ada["user"] == "ada@example.com"
    assert [r["record"]["plan"] for r in ada["records"]] == ["pro", "team"]
    assert ada["next_after"] is None
    first = await records(api, created["id"], "ada@example.com", limit=1)
    assert len(first["records"]) == 1 and first["next_after"] == first["records"][0]["id"]
    rest = await records(api, created["id"], "ada@example.com", after=first["next_after"])
    assert [r["record"]["plan"] for r in rest["records"]] == ["team"]
    assert (await records(api, created["id"], "nobody@example.com"))["records"] == []
    assert SECRET_ROW in str(ada) and SECRET_ROW not in caplog.text
    assert_problem(await api.get(f"/integrations/{created['id']}/records"), 422, "user")
    missing = await api.get("/integrations/77/records", params={"user": "a@x.io"})
    assert_problem(missing, 404)


async def test_a_resync_removes_the_records_gone_from_the_source(api, database_url):
    created = await create(api)
    await synced(api, created["id"])
    changed = CUSTOMERS.replace("bo@example.com;Bo;free;\n", "")
    await api.patch(f"/integrations/{created['id']}", json={"content": changed})
    ended = await synced(api, created["id"])
    assert ended["sync"]["records_removed"] == 1
    assert (await records(api, created["id"], "bo@example.com"))["records"] == []
    assert len((await records(api, created["id"], "ada@example.com"))["records"]) == 2
    assert counts(database_url) == (1, 2)


async def test_an_unreadable_csv_fails_the_sync_with_its_reason(api):
    created = await create(api, BROKEN)
    ended = await synced(api, created["id"], expect="failed")
    assert ended["sync"]["error"].startswith("the CSV content is not a readable CSV file")


async def test_a_sync_stops_at_the_bound_and_removes_nothing(database_url, tmp_path, nursery):
    # one service at a time: a sync is a job, and any running service's worker may take it
    async with serving(database_url, tmp_path, nursery, addon_encryption_key=KEY_A) as unbounded:
        created = await create(unbounded)
        await synced(unbounded, created["id"])
        assert counts(database_url) == (1, 3)
        many = "email,n\n" + "".join(f"u{i}@example.com,{i}\n" for i in range(1200))
        await unbounded.patch(f"/integrations/{created['id']}", json={"content": many})
    bounded = {"addon_encryption_key": KEY_A, "integrations_sync_max_records": 700}
    async with serving(database_url, tmp_path, nursery, **bounded) as small:
        ended = await synced(small, created["id"], expect="partial")
        state = ended["sync"]
        assert state["records_seen"] == 700 and state["records_stored"] == 700
        assert "INTEGRATIONS_SYNC_MAX_RECORDS (700)" in state["error"]
        assert state["records_removed"] == 0
        assert counts(database_url) == (1, 703)  # the old three kept: the read was not complete
        assert (await records(small, created["id"], "u699@example.com"))["records"]
        assert not (await records(small, created["id"], "u700@example.com"))["records"]


@asynccontextmanager
async def syncing_a_slow_api(
    database_url: str, tmp_path: Path, nursery: trio.Nursery, serve_fake: Any, records: int
) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """The service syncing a slow paginated API (``records`` of them, 500 a page, a second
    a page), the sync just asked for: the client and the source's URL."""
    fake = await serve_fake(FakeRestApi("Authorization", "Bearer t-1", records, page_size=500))
    fake.delay = 1.0
    loopback = {
        "addon_encryption_key": KEY_A,
        "integrations_allow_http_loopback": True,  # the fake: http on 127.0.0.1
        "integrations_allow_private_targets": True,
    }
    async with serving(database_url, tmp_path, nursery, **loopback) as api:
        body = {
            "name": "Slow API",
            "source_type": "rest_api",
            "base_url": fake.base_url,
            "records_path": "/v1/customers",
            "auth_header": "Authorization: Bearer t-1",
        }
        created = await create(api, body)
        url = f"/integrations/{created['id']}"
        assert (await api.post(f"{url}/sync")).status_code == 202
        yield api, url


async def test_a_running_syncs_progress_shows_and_a_second_sync_is_409(
    database_url, tmp_path, nursery, serve_fake
):
    """A sync of a slow paginated API (a second per page): its progress is on the source
    while it runs, and a second sync is refused until it ends."""
    async with syncing_a_slow_api(database_url, tmp_path, nursery, serve_fake, 1200) as (
        api,
        url,
    ):
        with trio.fail_after(30):
            while (shown := (await api.get(url)).json())["sync"]["records_seen"] == 0:
                await trio.sleep(0.05)
        assert shown["sync"]["status"] == "syncing"
        assert (shown["sync"]["records_seen"], shown["sync"]["records_stored"]) == (500, 500)
        assert_problem(await api.post(f"{url}/sync"), 409, "'Slow API' is already syncing")
        with trio.fail_after(30):
            while (shown := (await api.get(url)).json())["sync"]["status"] == "syncing":
                await trio.sleep(0.05)
        assert shown["sync"]["status"] == "succeeded"
        assert shown["sync"]["records_seen"] == 1200


async def test_a_sync_cut_off_by_a_stop_says_so(api, database_url, tmp_path, serve_fake):
    """The service stops (as ``ragchat serve`` does on SIGTERM: the server's graceful
    shutdown, then the service closed) while a sync of a slow API runs: past the
    background tasks' grace the sync ends as failed, saying it was stopped, instead of
    holding the source until it goes stale."""
    fake = await serve_fake(FakeRestApi("Authorization", "Bearer t-1", 1500, page_size=500))
    fake.delay = 3.0
    made = make_settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        addon_encryption_key=KEY_A,
        integrations_allow_http_loopback=True,
        integrations_allow_private_targets=True,
    )
    body = {
        "name": "Cut off",
        "source_type": "rest_api",
        "base_url": fake.base_url,
        "records_path": "/v1/customers",
        "auth_header": "Authorization: Bearer t-1",
    }
    async with open_service(made) as svc, trio.open_nursery() as server:
        base_url, stop = await serve_service(svc, server)
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as stopping:
            created = await create(stopping, body)
            url = f"/integrations/{created['id']}"
            assert (await stopping.post(f"{url}/sync")).status_code == 202
            with trio.fail_after(30):
                while (await stopping.get(url)).json()["sync"]["records_seen"] == 0:
                    await trio.sleep(0.05)
        stop.set()  # serve() returns when its graceful shutdown is done
    state = (await api.get(url)).json()["sync"]
    assert state["status"] == "failed"
    assert state["error"] == "the sync was stopped (the service shut down); sync again"
    assert state["records_seen"] == 500


async def test_a_source_that_sends_no_page_in_time_fails_the_sync(api, monkeypatch):
    class Silent:
        async def test(self):
            return "fine"

        async def pages(self):
            await trio.sleep_forever()
            yield []

    monkeypatch.setitem(connectors.FACTORIES, "csv", lambda credentials, reach: Silent())
    monkeypatch.setattr(sync, "page_wait", lambda timeout: 0.3)
    created = await create(api)
    ended = await synced(api, created["id"], expect="failed")
    assert ended["sync"]["error"] == "the source sent no page within 0.3 seconds"


async def test_a_second_sync_of_a_held_source_is_409_until_the_holder_goes_stale(
    api, service, fake_clock
):
    created = await create(api)
    source = await service.database.run(store.get_source, created["id"])
    # a sync running elsewhere (another replica, `ragchat sync`) holds the source
    now = fake_clock.now()
    held = await service.database.run(store.claim, source.id, now, now - timedelta(minutes=10))
    assert held is not None and held.sync.status == "syncing"
    refused = await api.post(f"/integrations/{created['id']}/sync")
    assert_problem(refused, 409, "'Customers' is already syncing")
    assert (await api.get(f"/integrations/{created['id']}")).json()["sync"]["status"] == "syncing"
    fake_clock.advance(timedelta(minutes=9))
    assert_problem(await api.post(f"/integrations/{created['id']}/sync"), 409)
    fake_clock.advance(timedelta(minutes=2))  # no progress for 11 minutes: cut off
    ended = await synced(api, created["id"])
    assert ended["sync"]["records_stored"] == 3
    # the old holder, should it wake, writes nothing more
    page = await service.database.run(
        store.store_page, source.id, held.run, [], store.Progress(), fake_clock.now()
    )
    assert page is None


# ------------------------------------------------------------------ keys


async def test_without_a_key_a_source_is_refused_naming_keygen(database_url, tmp_path, nursery):
    async with serving(database_url, tmp_path, nursery) as keyless:
        response = await keyless.post("/integrations", json=CSV_SOURCE)
    problem = assert_problem(response, 503, "`ragchat keygen`")
    assert SECRET_ROW not in repr(problem)
    assert counts(database_url) == (0, 0)


async def test_a_wrong_key_is_a_clear_error_and_nothing_is_used(
    api, database_url, tmp_path, nursery
):
    created = await create(api)
    async with serving(database_url, tmp_path, nursery, addon_encryption_key=KEY_B) as wrong:
        shown = (await wrong.get(f"/integrations/{created['id']}")).json()
        assert shown["credentials"] == {"content": "********"}  # which fields are set
        for action in ("test", "sync"):
            response = await wrong.post(f"/integrations/{created['id']}/{action}")
            problem = assert_problem(response, 503, "'Customers'")
            assert "ADDON_ENCRYPTION_KEY" in problem["detail"]
            assert "ADDON_ENCRYPTION_KEY_PREVIOUS" in problem["detail"]
        after = (await wrong.get(f"/integrations/{created['id']}")).json()
        assert after["sync"]["status"] == "never"  # the sync never claimed it
        renamed = await wrong.patch(f"/integrations/{created['id']}", json={"name": "Renamed"})
        assert renamed.status_code == 200  # the credentials are left as they are
        assert_problem(
            await wrong.patch(f"/integrations/{created['id']}", json={"content": "a\n1\n"}), 503
        )
    assert counts(database_url) == (1, 0)
    assert (await api.post(f"/integrations/{created['id']}/test")).json()["ok"] is True


async def test_the_key_rotates_with_rekey(api, database_url, tmp_path, nursery):
    created = await create(api)
    url = f"/integrations/{created['id']}/test"
    rotating = {"addon_encryption_key": KEY_B, "addon_encryption_key_previous": KEY_A}
    async with serving(database_url, tmp_path, nursery, **rotating) as both:
        assert (await both.post(url)).json()["ok"] is True  # read with the previous key
    rekeyed = await trio.to_thread.run_sync(
        lambda: run_cli("rekey", cwd=tmp_path, database_url=database_url, **rotating)
    )
    assert rekeyed.returncode == 0, rekeyed.stderr
    assert "re-encrypted the credentials of 1 data source" in rekeyed.stdout
    async with serving(database_url, tmp_path, nursery, addon_encryption_key=KEY_B) as only_b:
        assert (await only_b.post(url)).json()["ok"] is True  # key A dropped
    assert (await api.post(url)).status_code == 503  # and A alone opens it no more


# ------------------------------------------------------------------ ragchat sync


async def test_ragchat_sync_runs_in_the_foreground_and_fails_loudly(api, database_url, tmp_path):
    good = await create(api)
    await create(api, BROKEN)

    def cli(*args):
        return run_cli(
            "sync", *args, cwd=tmp_path, database_url=database_url, addon_encryption_key=KEY_A
        )

    one = await trio.to_thread.run_sync(cli, str(good["id"]))
    assert one.returncode == 0, one.stderr
    assert f"{good['id']} Customers: succeeded, 4 seen, 3 stored, 1 without a user" in one.stdout
    every = await trio.to_thread.run_sync(cli)
    assert every.returncode == 1
    assert "Customers: succeeded" in every.stdout and "Broken: failed" in every.stdout
    assert "Broken: the CSV content" in every.stderr
    assert SECRET_ROW not in every.stdout + every.stderr
    missing = await trio.to_thread.run_sync(cli, "999")
    assert missing.returncode == 2 and "no data source 999" in missing.stderr


async def test_ragchat_sync_skips_a_source_already_syncing_and_exits_0(api, database_url, tmp_path):
    """In a CronJob, a sync of the source already running (the scheduler's, the console's)
    is not a failure: one line says so, exit code 0, the running sync left alone."""
    created = await create(api)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE integrations SET sync_status = 'syncing', sync_started_at = now(), "
            "sync_heartbeat_at = now() WHERE id = %s",
            (created["id"],),
        )
    busy = await trio.to_thread.run_sync(
        lambda: run_cli(
            "sync",
            str(created["id"]),
            cwd=tmp_path,
            database_url=database_url,
            addon_encryption_key=KEY_A,
        )
    )
    assert busy.returncode == 0, busy.stderr
    assert busy.stdout.strip() == (
        f"{created['id']} Customers: skipped, a sync of this source is already running"
    )
    shown = (await api.get(f"/integrations/{created['id']}")).json()
    assert shown["sync"]["status"] == "syncing"


# ------------------------------------------------------------------ syncs as jobs


async def test_a_source_with_an_interval_is_synced_when_it_falls_due(api, fake_clock, monkeypatch):
    monkeypatch.setattr(worker, "SCHEDULE_SECONDS", 0.1)  # the schedules looked at often
    created = await create(api, {**CSV_SOURCE, "sync_interval_minutes": 5})
    await trio.sleep(0.5)  # several looks: not due yet
    assert (await api.get(f"/integrations/{created['id']}")).json()["sync"]["status"] == "never"

    fake_clock.advance(timedelta(minutes=5, seconds=1))
    with trio.fail_after(30):
        while (shown := (await api.get(f"/integrations/{created['id']}")).json())["sync"][
            "status"
        ] in ("never", "syncing"):
            await trio.sleep(0.05)
    assert shown["sync"]["status"] == "succeeded" and shown["sync"]["records_stored"] == 3
    await trio.sleep(0.5)  # synced: not due again for five minutes
    [job] = (await api.get("/jobs", params={"kind": "sync"})).json()["jobs"]
    assert (job["status"], job["attempts"], job["result"]["status"]) == ("done", 1, "succeeded")

    fake_clock.advance(timedelta(minutes=5, seconds=1))
    with trio.fail_after(30):
        while len((await api.get("/jobs", params={"kind": "sync"})).json()["jobs"]) < 2:
            await trio.sleep(0.05)


async def test_a_failed_sync_is_retried_after_its_backoff(api, fake_clock):
    created = await create(api, BROKEN)
    await synced(api, created["id"], expect="failed")
    with trio.fail_after(30):  # the job records its attempt a moment after the source
        while (job := (await api.get("/jobs", params={"kind": "sync"})).json()["jobs"][0])[
            "status"
        ] == "running":
            await trio.sleep(0.05)
    assert (job["status"], job["attempts"]) == ("queued", 1)
    assert "not a readable CSV file" in job["problem"]["detail"]
    assert_problem(await api.post(f"/integrations/{created['id']}/sync"), 409, "waiting to run")

    await api.patch(f"/integrations/{created['id']}", json={"content": CUSTOMERS})  # mended
    fake_clock.advance(FIRST_BACKOFF)
    with trio.fail_after(30):
        while (job := (await api.get(f"/jobs/{job['id']}")).json())["status"] != "done":
            await trio.sleep(0.05)
    assert job["attempts"] == 2
    shown = (await api.get(f"/integrations/{created['id']}")).json()
    assert shown["sync"]["status"] == "succeeded"
