"""/live-actions through the real HTTP app, on a `postgresql` data source on the owner's
PostgreSQL (a second embedded server, never the service's own): create, read, edit and
delete an action, each refusal (its template checked against its source's kind, an action
that could never run), the dry run of a read with the values given or found in a message,
the execution log and its paging, and an action deleted with its data source. Every change
drops the service's cached live results of the action (or of the edited source). A dry run
of a write counts the rows it would change and changes none (its transaction is rolled
back by the handler, ``ragio.live.handlers``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from cryptography.fernet import Fernet

from ragcore.live.answers import LiveRun
from ragcore.live.cache import Entry
from ragcore.live.log import values_hash
from ragio.live import store
from ragio.live.keys import live_hash_key
from tests.io.live import owner_database
from tests.io.test_http_errors import assert_problem

READ = "SELECT id, status, total FROM orders WHERE id = {order_id}"
BY_EMAIL = "SELECT id, status FROM orders WHERE email = {email} ORDER BY id"
CANCEL = "UPDATE orders SET status = 'cancelled' WHERE id = {order_id}"
SECRET = "hunter2-pw"
NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {
        "addon_encryption_key": Fernet.generate_key().decode(),
        "integrations_allow_unix_sockets": True,  # the owner's PostgreSQL: its socket
        "integrations_allow_private_targets": True,  # the sources that fail: on 127.0.0.1
    }


@pytest.fixture
def shop(owner_postgres: str) -> str:
    """The orders table, as each test begins, in a database of this module's on the
    owner's PostgreSQL; its URL."""
    url = owner_database(owner_postgres, "live_actions_api")
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS orders")
        db.execute(
            "CREATE TABLE orders (id int PRIMARY KEY, email text, status text, total numeric)"
        )
        db.execute(
            "INSERT INTO orders VALUES (4411, 'ada@example.com', 'shipped', 44.90),"
            " (4412, 'ada@example.com', 'packed', 12.00), (4413, 'bo@example.com', 'open', 1)"
        )
    return url


async def add_source(api, database_url: str, name: str = "Shop DB") -> dict:
    body = {"name": name, "source_type": "postgresql", "url": database_url, "table": "orders"}
    response = await api.post("/integrations", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def add_action(api, source_id: int, **fields: Any) -> dict:
    body = {"name": "Order status", "source_id": source_id, "template": READ, **fields}
    response = await api.post("/live-actions", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def status_of(database_url: str, order: int) -> str:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT status FROM orders WHERE id = %s", (order,)).fetchone()[0]


def action_rows(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT count(*) FROM live_actions").fetchone()[0]


def cached(service, action_id: int, source_id: int) -> None:
    """A result in the service's live cache, as if a customer had just asked."""
    service.live.results[(action_id, (("order_id", "1"),))] = Entry((), source_id, NOW)
    service.live.actions = ()


# ------------------------------------------------------------------ the resource


async def test_an_action_is_created_read_listed_changed_and_deleted(api, service, shop):
    source = await add_source(api, shop)
    response = await api.post(
        "/live-actions",
        json={
            "name": "Order status",
            "source_id": source["id"],
            "template": READ,
            "triggers": ["where is my order"],
            "channels": ["chat", "whatsapp"],
            "description": "the customer's orders",
        },
    )
    assert response.status_code == 201, response.text
    created = response.json()
    assert response.headers["location"] == f"/live-actions/{created['id']}"
    assert created | {"created_at": None, "updated_at": None} == {
        "id": created["id"],
        "name": "Order status",
        "source_id": source["id"],
        "source_name": "Shop DB",
        "source_type": "postgresql",
        "template": READ,
        "params": ["order_id"],
        "writes": False,
        "triggers": ["where is my order"],
        "auto_match": True,
        "channels": ["chat", "whatsapp"],
        "description": "the customer's orders",
        "enabled": True,
        "created_at": None,
        "updated_at": None,
        "template_error": "",
    }
    assert (await api.get(response.headers["location"])).json() == created
    assert (await api.get("/live-actions")).json() == {"live_actions": [created]}

    url = f"/live-actions/{created['id']}"
    cached(service, created["id"], source["id"])
    patched = await api.patch(
        url, json={"template": CANCEL, "triggers": ["cancel my order"], "enabled": False}
    )
    assert patched.status_code == 200, patched.text
    shown = patched.json()
    assert shown["writes"] is True and shown["params"] == ["order_id"]
    assert shown["enabled"] is False and shown["name"] == "Order status"
    assert shown["channels"] == ["chat", "whatsapp"]  # kept: not named
    assert service.live.results == {} and service.live.actions is None  # read again

    cached(service, created["id"], source["id"])
    deleted = await api.delete(url)
    assert deleted.status_code == 204
    assert service.live.results == {} and service.live.actions is None
    assert_problem(await api.get(url), 404, "GET /live-actions")
    assert_problem(await api.delete(url), 404)
    assert_problem(await api.patch(url, json={"enabled": True}), 404)
    assert_problem(await api.get("/live-actions/abc"), 404)
    assert (await api.get("/live-actions")).json() == {"live_actions": []}


async def test_a_created_action_drops_what_the_service_held(api, service, shop):
    source = await add_source(api, shop)
    service.live.actions = ()
    await add_action(api, source["id"])
    assert service.live.actions is None  # the new action is read at the next message


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"template": READ + "; DELETE FROM orders"}, "template", "one statement"),
        ({"template": "SELECT * FROM orders WHERE id = {order}"}, "template", "{order}"),
        ({"template": "SELECT * FROM orders WHERE email = '{email}'"}, "template", "quotes"),
        ({"template": {"email": "{email}"}}, "template", "must be text"),
        ({"template": CANCEL}, "triggers", "never auto-matched"),
        ({"auto_match": False}, "triggers", "never run"),
        ({"source_id": 999}, "source_id", "no data source 999"),
        ({"channels": ["sms"]}, "channels", "not a channel"),
        ({"params": ["order_id"]}, "params", "read-only"),
        ({"template": None}, "template", ""),
    ],
)
async def test_a_refused_action_is_422_naming_the_field_and_stores_nothing(
    api, database_url, shop, fields, field, reason
):
    source = await add_source(api, shop)
    body = {"name": "Order status", "source_id": source["id"], "template": READ, **fields}
    problem = assert_problem(await api.post("/live-actions", json=body), 422, reason)
    assert problem["field"] == field, problem
    assert action_rows(database_url) == 0


async def test_a_taken_name_is_409(api, database_url, shop):
    source = await add_source(api, shop)
    first = await add_action(api, source["id"])
    assert_problem(
        await api.post(
            "/live-actions",
            json={"name": "Order status", "source_id": source["id"], "template": READ},
        ),
        409,
        "Order status",
    )
    other = await add_action(api, source["id"], name="By e-mail", template=BY_EMAIL)
    clash = await api.patch(f"/live-actions/{other['id']}", json={"name": "Order status"})
    assert_problem(clash, 409, "Order status")
    assert action_rows(database_url) == 2
    assert (await api.get(f"/live-actions/{first['id']}")).json() == first


async def test_a_patch_is_checked_again_against_the_new_source(api, shop):
    source = await add_source(api, shop)
    action = await add_action(api, source["id"])
    url = f"/live-actions/{action['id']}"
    mongo = await api.post(
        "/integrations",
        json={
            "name": "Docs",
            "source_type": "mongodb",
            "url": f"mongodb://app:{SECRET}@127.0.0.1:1",
            "database": "shop",
            "collection": "orders",
        },
    )
    assert mongo.status_code == 201, mongo.text
    mongo_id = mongo.json()["id"]
    # SQL is no filter document: the source alone cannot change
    problem = assert_problem(await api.patch(url, json={"source_id": mongo_id}), 422)
    assert problem["field"] == "template"
    moved = await api.patch(url, json={"source_id": mongo_id, "template": {"email": "{email}"}})
    assert moved.status_code == 200, moved.text
    assert moved.json()["source_type"] == "mongodb" and moved.json()["source_name"] == "Docs"
    assert moved.json()["params"] == ["email"] and moved.json()["template"] == {"email": "{email}"}
    assert SECRET not in moved.text
    problem = assert_problem(await api.patch(url, json={"triggers": [], "auto_match": False}), 422)
    assert problem["field"] == "triggers"
    assert_problem(await api.patch(url, json={"source_id": 999}), 422, "no data source")
    assert_problem(await api.patch(url, json={"name": None}), 422)
    assert (await api.get(url)).json() == moved.json()


# ------------------------------------------------------------------ the dry run


async def test_a_dry_run_reads_with_the_values_given_and_is_logged(api, service, shop, caplog):
    caplog.set_level("INFO")
    source = await add_source(api, shop)
    action = await add_action(api, source["id"])
    url = f"/live-actions/{action['id']}/dry-run"
    response = await api.post(url, json={"values": {"order_id": "4411"}})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["rows"] == [{"id": 4411, "status": "shipped", "total": "44.90"}]
    assert result["values"] == {"order_id": "4411"}
    assert result["failed"] is False and result["reason"] == "" and result["writes"] is False
    assert result["duration_ms"] >= 0

    # from a message, as a customer would write it; a value given by name wins
    by_message = await api.post(url, json={"message": "where is my order 4412?"})
    assert by_message.json()["rows"][0]["status"] == "packed"
    given_wins = await api.post(
        url, json={"message": "order 4412 please", "values": {"order_id": "4413"}}
    )
    assert given_wins.json()["rows"][0]["status"] == "open"
    # a value that looks like an injection is a value: no row has it
    injected = await api.post(url, json={"values": {"order_id": "4411 OR 1=1"}})
    # not an integer: the server says so, and the reason is the kind of error, never the
    # server's message (invalid input syntax for type integer: "4411 OR 1=1")
    said = "the statement failed: invalid_text_representation (SQLSTATE 22P02)"
    assert (injected.json()["failed"], injected.json()["reason"]) == (True, said)

    runs = (await api.get("/live-actions/runs")).json()["runs"]
    assert [run["outcome"] for run in runs] == ["dry_run"] * 4
    newest, *_, oldest = runs
    key = live_hash_key(service.settings)
    assert oldest["values_hash"] == values_hash((("order_id", "4411"),), key)
    assert oldest | {"id": 0, "at": None} == {
        "id": 0,
        "action_id": action["id"],
        "action_name": "Order status",
        "channel": "chat",
        "values_hash": oldest["values_hash"],
        "row_count": 1,
        "affected": None,
        "duration_ms": oldest["duration_ms"],
        "outcome": "dry_run",
        "reason": "",
        "at": None,
    }
    assert newest["row_count"] is None and newest["reason"] == said
    assert "4411" not in str([run["values_hash"] for run in runs])
    assert said in caplog.text and "OR 1=1" not in caplog.text


async def test_a_dry_run_of_a_write_counts_the_rows_and_changes_none(api, service, shop):
    source = await add_source(api, shop)
    cancel = await add_action(
        api, source["id"], name="Cancel", template=CANCEL, triggers=["cancel my order"]
    )
    cached(service, cancel["id"], source["id"])
    response = await api.post(
        f"/live-actions/{cancel['id']}/dry-run", json={"message": "please cancel order 4412"}
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["writes"] is True and result["affected"] == 1 and result["failed"] is False
    assert result["values"] == {"order_id": "4412"}
    assert status_of(shop, 4412) == "packed"  # rolled back
    [run] = (await api.get("/live-actions/runs")).json()["runs"]
    assert run["outcome"] == "dry_run" and run["affected"] == 1
    # nothing changed: what a customer's question cached is still good
    assert len(service.live.results) == 1


async def test_a_dry_run_names_what_is_missing_and_runs_nothing(api, shop):
    source = await add_source(api, shop)
    action = await add_action(api, source["id"], template=BY_EMAIL)
    url = f"/live-actions/{action['id']}/dry-run"
    problem = assert_problem(await api.post(url, json={"message": "my order?"}), 422, "email")
    assert problem["field"] == "values"
    assert_problem(await api.post(url), 422, "missing email")
    assert_problem(await api.post(url, json={"values": {"name": "x"}}), 422, "unknown value")
    assert_problem(await api.post(url, json={"channel": "sms"}), 422, "not a channel")
    assert_problem(await api.post("/live-actions/999/dry-run", json={}), 404)
    assert (await api.get("/live-actions/runs")).json() == {"runs": [], "next_before": None}
    found = await api.post(url, json={"message": "I am ADA@example.com"})
    assert [row["id"] for row in found.json()["rows"]] == [4411, 4412]


async def test_a_failing_source_is_200_with_its_reason_and_no_secret(api, shop, caplog):
    caplog.set_level("DEBUG")
    down = await api.post(
        "/integrations",
        json={
            "name": "Down",
            "source_type": "postgresql",
            "host": "127.0.0.1",
            "port": 1,  # nothing listens there
            "user": "reader",
            "password": SECRET,
            "database": "shop",
            "table": "orders",
        },
    )
    action = await add_action(api, down.json()["id"])
    response = await api.post(
        f"/live-actions/{action['id']}/dry-run", json={"values": {"order_id": "1"}}
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["failed"] is True and result["rows"] == [] and "refused" in result["reason"]
    [run] = (await api.get("/live-actions/runs")).json()["runs"]
    assert run["outcome"] == "dry_run" and "refused" in run["reason"]
    assert SECRET not in response.text and SECRET not in caplog.text


# ------------------------------------------------------------------ the log


async def test_the_runs_are_newest_first_paged_and_filtered(api, service, shop):
    source = await add_source(api, shop)
    one = await add_action(api, source["id"])
    two = await add_action(api, source["id"], name="By e-mail", template=BY_EMAIL)
    for number in range(5):
        for action in (one, two):
            run = LiveRun(action["id"], action["name"], (), "ran", 1, None, 3)
            await service.database.run(
                store.log_run, run, "telegram", f"h{number}", service.clock.now()
            )
    page = (await api.get("/live-actions/runs", params={"limit": 4})).json()
    assert [(r["action_name"], r["values_hash"]) for r in page["runs"]] == [
        ("By e-mail", "h4"),
        ("Order status", "h4"),
        ("By e-mail", "h3"),
        ("Order status", "h3"),
    ]
    assert page["next_before"] == page["runs"][-1]["id"]
    seen = [run["id"] for run in page["runs"]]
    while page["next_before"] is not None:
        page = (
            await api.get("/live-actions/runs", params={"limit": 4, "before": page["next_before"]})
        ).json()
        seen += [run["id"] for run in page["runs"]]
    assert len(seen) == 10 and seen == sorted(seen, reverse=True)
    only = (await api.get("/live-actions/runs", params={"action_id": two["id"]})).json()
    assert [run["values_hash"] for run in only["runs"]] == ["h4", "h3", "h2", "h1", "h0"]
    assert {run["action_id"] for run in only["runs"]} == {two["id"]}
    assert len((await api.get("/live-actions/runs")).json()["runs"]) == 10  # default 50
    for params in ({"limit": 0}, {"limit": 501}, {"before": "x"}, {"actionid": 1}):
        assert_problem(await api.get("/live-actions/runs", params=params), 422)


# ------------------------------------------------------------------ the data source


async def test_deleting_the_source_deletes_its_actions_and_keeps_their_runs(api, service, shop):
    source = await add_source(api, shop)
    action = await add_action(api, source["id"])
    other_source = await add_source(api, shop, name="Other")
    kept = await add_action(api, other_source["id"], name="Kept")
    await api.post(f"/live-actions/{action['id']}/dry-run", json={"values": {"order_id": "4411"}})

    cached(service, action["id"], source["id"])
    renamed = await api.patch(f"/integrations/{source['id']}", json={"name": "Shop"})
    assert renamed.status_code == 200
    assert service.live.results == {} and service.live.actions is None  # an edited source
    assert (await api.get(f"/live-actions/{action['id']}")).json()["source_name"] == "Shop"

    cached(service, action["id"], source["id"])
    assert (await api.delete(f"/integrations/{source['id']}")).status_code == 204
    assert service.live.results == {} and service.live.actions is None
    assert (await api.get("/live-actions")).json()["live_actions"] == [
        (await api.get(f"/live-actions/{kept['id']}")).json()
    ]
    assert_problem(await api.get(f"/live-actions/{action['id']}"), 404)
    [run] = (await api.get("/live-actions/runs")).json()["runs"]
    assert run["action_id"] is None and run["action_name"] == "Order status"


async def test_an_action_whose_saved_template_no_longer_passes_can_be_switched_off(
    api, database_url, shop
):
    source = await add_source(api, shop)
    created = await add_action(api, source["id"])
    with psycopg.connect(database_url, autocommit=True) as db:  # as if the rules grew stricter
        db.execute(
            "UPDATE live_actions SET template = to_jsonb(%s::text) WHERE id = %s",
            ("SELECT 1; SELECT 2", created["id"]),
        )
    url = f"/live-actions/{created['id']}"
    shown = (await api.get(url)).json()
    assert shown["template_error"] != ""
    off = await api.patch(url, json={"enabled": False})
    assert off.status_code == 200, off.text
    assert off.json()["enabled"] is False
    on = await api.patch(url, json={"enabled": True})
    assert on.status_code == 422 and on.json()["field"] == "template"
