"""Live actions run on real sources: a customer's message matched to an action, its
values bound (the driver's parameters, BSON values, URL-encoded parts, a vendor search's
value), the query run by the service's handler of ``RunLiveQuery``
(``ragio.live.handlers``) on a MariaDB of the module's own, a PostgreSQL of the owner's, the
MongoDB-wire server nx-27017 and fakes of the HTTP vendors speaking their documented
wire formats; a dry-run write rolled back, and a source that never answers cut off at
``LIVE_QUERY_TIMEOUT_SECONDS``. Not yet wired into answers (issue 14 goes on)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
import psycopg
import pytest
import trio
from cryptography.fernet import Fernet

from ragcore.live.matching import LiveAction
from ragcore.live.pipeline import (
    LiveData,
    LiveFailed,
    LiveFailure,
    LiveRows,
    RunLiveQuery,
    match_and_execute_action,
)
from ragcore.live.templates import check_template
from ragio.integrations import sources
from ragio.live.handlers import run_live_query
from ragio.runner import run
from tests.io.fakes.google_sheets_server import FakeGoogleSheets, key_file, key_pair
from tests.io.fakes.hubspot_server import FakeHubSpot
from tests.io.fakes.rest_server import FakeRestApi
from tests.io.fakes.salesforce_server import FakeSalesforce
from tests.io.fakes.shopify_server import FakeShopify
from tests.io.fakes.stripe_server import FakeStripe
from tests.io.live import PASSWORD, owner_database, status_of
from tests.io.mariadb import MariaDB
from tests.io.test_integration_databases import mongo  # noqa: F401 (the nx-27017 fixture)

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
ORDER = "SELECT id, email, status FROM orders WHERE id = {order_id}"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {
        "addon_encryption_key": Fernet.generate_key().decode(),
        "integrations_allow_http_loopback": True,  # the fakes serve http on 127.0.0.1
        "integrations_allow_private_targets": True,  # every source is on this host
        "integrations_allow_unix_sockets": True,  # the owner's PostgreSQL: its socket
    }


async def mysql_source(service, shop: MariaDB, password: str = PASSWORD) -> int:
    body = {
        "name": f"shop {password}",
        "source_type": "mysql",
        "host": "127.0.0.1",
        "port": shop.port,
        "user": "shop",
        "password": password,
        "database": "shop",
        "table": "orders",
    }
    return (await sources.create(service, body)).id


def action(source_id: int, template: str, kind: str = "mysql", **more: Any) -> LiveAction:
    return LiveAction(1, "Order status", source_id, kind, check_template(kind, template), **more)


async def ask(service, live: LiveAction, message: str) -> Any:
    pipeline = match_and_execute_action([live], message, None, "api", NOW, {})
    return await run(pipeline, service)


async def test_an_order_is_read_live_with_its_number_bound(service, shop) -> None:
    source = await mysql_source(service, shop)
    found = await ask(service, action(source, ORDER), "where is my order 4411?")
    assert isinstance(found, LiveData)
    assert [dict(row) for row in found.rows] == [
        {"id": 4411, "email": "ada@example.com", "status": "shipped"}
    ]


async def test_injection_in_a_value_stays_a_value(service, shop) -> None:
    source = await mysql_source(service, shop)
    by_email = action(source, "SELECT id, status FROM orders WHERE email = {email}")
    for message in (
        "my email is x' OR '1'='1@example.com",
        "my email is {email}@example.com",
        "my email is " + "a" * 5000 + "@example.com",
    ):
        found = await ask(service, by_email, message)
        assert not isinstance(found, LiveData) or found.rows == (), message
    assert status_of(shop, 4411) == "shipped"


async def test_a_write_template_updates_its_row_once(service, shop) -> None:
    source = await mysql_source(service, shop)
    cancel = action(
        source,
        "UPDATE orders SET status = 'cancelled' WHERE id = {order_id}",
        triggers=("cancel my order",),
    )
    done = await ask(service, cancel, "please cancel my order 4412")
    assert isinstance(done, LiveData) and done.affected == 1
    assert status_of(shop, 4412) == "cancelled"
    assert status_of(shop, 4411) == "shipped"


async def test_a_failing_source_is_a_failure_not_an_error(service, shop) -> None:
    source = await mysql_source(service, shop, password="wrong-password")
    failed = await ask(service, action(source, ORDER), "where is my order 4411?")
    assert isinstance(failed, LiveFailed)
    assert "Access denied" in failed.reason and "wrong-password" not in failed.reason


@pytest.fixture
def pg_shop(owner_postgres: str) -> str:
    """An order on the owner's PostgreSQL, in a database of this module's; its URL."""
    url = owner_database(owner_postgres, "live_queries")
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS orders")
        db.execute("CREATE TABLE orders (id int PRIMARY KEY, status text)")
        db.execute("INSERT INTO orders VALUES (4411, 'shipped')")
    return url


async def test_a_failed_statement_says_its_kind_never_the_customers_value(
    service, shop, pg_shop, caplog
) -> None:
    """The server's message quotes the value a customer wrote; the reason kept and logged
    is the error's kind (MySQL's error name, the SQLSTATE's condition name)."""
    caplog.set_level("INFO")
    sneaky = "4411 OR 1=1"
    mysql = await mysql_source(service, shop)
    cancel = "UPDATE orders SET status = 'cancelled' WHERE id = {order_id}"
    failed = await live(service, mysql, "mysql", cancel, order_id=sneaky)
    assert isinstance(failed, LiveFailure)
    assert failed.reason == "the statement failed: MySQL error 1292 (ER_TRUNCATED_WRONG_VALUE)"
    body = {"name": "pg", "source_type": "postgresql", "url": pg_shop, "table": "orders"}
    postgres = (await sources.create(service, body)).id
    read = "SELECT status FROM orders WHERE id = {order_id}"
    failed = await live(service, postgres, "postgresql", read, order_id=sneaky)
    assert isinstance(failed, LiveFailure)
    assert failed.reason == "the statement failed: invalid_text_representation (SQLSTATE 22P02)"
    assert "the statement failed" in caplog.text and sneaky not in caplog.text
    assert status_of(shop, 4411) == "shipped"


async def test_postgresql_reads_in_a_read_only_transaction(service, pg_shop) -> None:
    body = {
        "name": "pg shop",
        "source_type": "postgresql",
        "url": pg_shop,
        "table": "orders",
    }
    source = (await sources.create(service, body)).id
    read = action(source, "SELECT status FROM orders WHERE id = {order_id}", "postgresql")
    found = await ask(service, read, "status of order 4411")
    assert isinstance(found, LiveData) and [dict(r) for r in found.rows] == [{"status": "shipped"}]
    # a write through a template marked as a read cannot run: the read is read-only
    sneaky = action(
        source,
        "SELECT status FROM orders, LATERAL (SELECT pg_advisory_lock(1)) AS l "
        "WHERE id = {order_id} FOR UPDATE",
        "postgresql",
    )
    refused = await ask(service, sneaky, "status of order 4411")
    assert isinstance(refused, LiveFailed)
    assert refused.reason == "the statement failed: read_only_sql_transaction (SQLSTATE 25006)"


async def live(service, source: int, kind: str, template: Any, **values: str) -> Any:
    """The handler run on one effect: values as the pipeline binds them."""
    effect = RunLiveQuery(1, source, kind, check_template(kind, template), tuple(values.items()))
    return await run_live_query(effect, service)


async def test_a_dry_run_write_is_rolled_back_with_its_count(service, shop) -> None:
    source = await mysql_source(service, shop)
    template = check_template("mysql", "DELETE FROM orders WHERE id = {order_id}")
    effect = RunLiveQuery(1, source, "mysql", template, (("order_id", "4411"),), dry_run=True)
    done = await run_live_query(effect, service)
    assert isinstance(done, LiveRows) and done.affected == 1 and done.duration_ms >= 0
    assert status_of(shop, 4411) == "shipped"  # the row is still there, unchanged


async def test_mongodb_finds_with_its_values_bound_as_bson(service, mongo) -> None:  # noqa: F811
    body = {
        "name": "crm",
        "source_type": "mongodb",
        "url": mongo,
        "database": "crm",
        "collection": "customers",
    }
    source = (await sources.create(service, body)).id
    by_email = action(source, '{"email": "{email}"}', "mongodb")
    found = await ask(service, by_email, "hi, I am c3@example.com")
    assert isinstance(found, LiveData) and len(found.rows) == 1
    row = dict(found.rows[0])
    assert row["n"] == 3 and isinstance(row["_id"], str) and len(row["_id"]) == 24
    assert row["joined"].startswith("2024-05-06T07:08:09")
    # text that looks like a query operator stays one string value: it matches nothing
    for value in ('{"$ne": null}', "$ne", '{"$gt": ""}'):
        nothing = await live(service, source, "mongodb", '{"email": "{email}"}', email=value)
        assert nothing == LiveRows((), duration_ms=nothing.duration_ms), value
    # the queries shared one client, kept for the next; deleting the source closes it
    kept = service.source_connections.statistics()
    assert (kept.idle, kept.reused) == (1, 3)
    assert await sources.delete(service, source)
    assert service.source_connections.statistics().idle == 0


async def test_rest_api_gets_the_encoded_path_on_its_own_origin(service, serve_fake) -> None:
    fake = await serve_fake(FakeRestApi("X-Api-Key", "rest-key-0123456789", items=3))
    odd = "A/7?b=1#c"
    fake.items.append({"id": odd, "email": "odd@example.org", "name": "Odd"})
    body = {
        "name": "rest",
        "source_type": "rest_api",
        "base_url": fake.base_url,
        "auth_header": "X-Api-Key: rest-key-0123456789",
        "records_path": "/v1/customers",
    }
    source = (await sources.create(service, body)).id
    one = await live(service, source, "rest_api", "/v1/customers/{order_id}", order_id=odd)
    assert isinstance(one, LiveRows) and [dict(r) for r in one.rows] == [fake.items[-1]]
    assert fake.requests[-1].raw_path == b"/v1/customers/A%2F7%3Fb%3D1%23c"
    # a value cannot climb the path: it is one encoded segment, not found
    climb = await live(service, source, "rest_api", "/v1/customers/{order_id}", order_id="..")
    # the status alone: the API's message quotes the value ("No customer with id ..")
    assert isinstance(climb, LiveFailure) and climb.reason == "REST API: HTTP 404: Not Found"
    assert fake.requests[-1].raw_path == b"/v1/customers/%2E%2E"
    listed = await live(
        service, source, "rest_api", "/v1/customers?email={email}", email="user1@example.org"
    )
    assert isinstance(listed, LiveRows) and [r["id"] for r in listed.rows] == [1]
    assert fake.requests[-1].headers["x-api-key"] == "rest-key-0123456789"


async def test_hubspot_live_search_is_its_crm_search(service, serve_fake) -> None:
    token = "pat-na1-11111111-2222-3333-4444-555555555555"  # noqa: S105 (the fake's)
    fake = await serve_fake(FakeHubSpot(token, contacts=5))
    body = {"name": "crm", "source_type": "hubspot", "access_token": token}
    source = (await sources.create(service, body | {"api_base": fake.base_url})).id
    by_email = action(source, "email = {email}", "hubspot")
    found = await ask(service, by_email, "my email is Contact3@example.org")
    assert isinstance(found, LiveData) and [r["id"] for r in found.rows] == ["1003"]
    [sent] = fake.requests
    assert sent.method == "POST" and sent.path == "/crm/v3/objects/contacts/search"
    assert sent.body["filterGroups"] == [
        {"filters": [{"propertyName": "email", "operator": "EQ", "value": "contact3@example.org"}]}
    ]
    assert token not in str(found)


async def test_stripe_live_search_quotes_the_value(service, serve_fake) -> None:
    key = "sk_test_51Hfake0123456789abcdefKEY1234"
    fake = await serve_fake(FakeStripe(key, customers=4))
    fake.customers[2]["email"] = "o'brien@example.org"
    body = {"name": "pay", "source_type": "stripe", "secret_key": key, "api_base": fake.base_url}
    source = (await sources.create(service, body)).id
    found = await live(service, source, "stripe", "email = {email}", email="o'brien@example.org")
    assert isinstance(found, LiveRows) and [r["id"] for r in found.rows] == ["cus_00000000000002"]
    assert fake.requests[-1].path == "/v1/customers/search"
    assert fake.requests[-1].query["query"] == ["email:'o\\'brien@example.org'"]
    # a value that tries to add a clause is one quoted value: it matches nothing
    sneaky = "x' OR email:'customer1@example.org"
    none = await live(service, source, "stripe", "email = {email}", email=sneaky)
    assert isinstance(none, LiveRows) and none.rows == ()


async def test_salesforce_live_search_is_soql_with_an_escaped_literal(service, serve_fake) -> None:
    fake = await serve_fake(FakeSalesforce("3MVGfakeKey", "F4K3SECRET0123", contacts=3))
    fake.objects["Contact"][1]["Email"] = "o'hara\\x@example.org"
    body = {
        "name": "sf",
        "source_type": "salesforce",
        "login_url": fake.base_url,
        "client_id": "3MVGfakeKey",
        "client_secret": "F4K3SECRET0123",
    }
    source = (await sources.create(service, body)).id
    found = await live(
        service, source, "salesforce", "Email = {email}", email="o'hara\\x@example.org"
    )
    assert isinstance(found, LiveRows) and [r["Name"] for r in found.rows] == ["Contact 1"]
    [query] = fake.requests[-1].query["q"]
    assert query.endswith("WHERE Email = 'o\\'hara\\\\x@example.org' LIMIT 50")
    sneaky = "x' OR Name != '"
    none = await live(service, source, "salesforce", "Email = {email}", email=sneaky)
    assert isinstance(none, LiveRows) and none.rows == ()


async def test_shopify_live_search_is_a_query_variable(service, serve_fake) -> None:
    token = "shpat_0123456789abcdef0123456789abcdef"  # noqa: S105 (the fake's)
    fake = await serve_fake(FakeShopify(token, customers=3))
    body = {
        "name": "shop",
        "source_type": "shopify",
        "shop_domain": fake.base_url,
        "access_token": token,
    }
    source = (await sources.create(service, body)).id
    found = await live(service, source, "shopify", "email = {email}", email="buyer2@example.org")
    assert isinstance(found, LiveRows) and [r["firstName"] for r in found.rows] == ["Buyer2"]
    sent = fake.requests[-1].body
    assert sent["variables"]["query"] == 'email:"buyer2@example.org"'
    assert "buyer2" not in sent["query"]  # the value is a variable, never in the document


async def test_google_sheets_live_search_reads_and_filters_the_range(service, serve_fake) -> None:
    key = key_pair()
    fake = await serve_fake(FakeGoogleSheets(key.public_key()))
    rows = [["email", "name"], ["ada@example.org", "Ada"], ["bo@example.org", "Bo"]]
    fake.add("sheet-1", {"Customers": rows})
    body = {
        "name": "sheet",
        "source_type": "google_sheets",
        "service_account_json": key_file(key, fake.token_uri),
        "sheet_id": "sheet-1",
        "api_base": fake.base_url,
    }
    source = (await sources.create(service, body)).id
    found = await live(service, source, "google_sheets", "email = {email}", email="bo@example.org")
    assert isinstance(found, LiveRows)
    assert [dict(r) for r in found.rows] == [{"email": "bo@example.org", "name": "Bo"}]


async def test_csv_live_search_filters_its_rows(service) -> None:
    content = "order,email,status\n7,ada@example.com,shipped\n8,bo@example.com,packed\n"
    body = {"name": "upload", "source_type": "csv", "content": content}
    source = (await sources.create(service, body)).id
    found = await live(service, source, "csv", "email = {email}", email=" ADA@example.com")
    assert isinstance(found, LiveRows)
    assert [dict(r) for r in found.rows] == [
        {"order": "7", "email": "ada@example.com", "status": "shipped"}
    ]
    missing = await live(service, source, "csv", "mail = {email}", email="ada@example.com")
    assert isinstance(missing, LiveFailure) and "no column 'mail'" in missing.reason


async def test_a_source_that_never_answers_fails_on_time(service, serve_fake) -> None:
    service.settings = attrs.evolve(service.settings, live_query_timeout_seconds=0.3)
    fake = await serve_fake(FakeRestApi("X-Api-Key", "k-0123456789", items=1))
    fake.delay = 30.0  # hangs (released when the test ends)
    body = {
        "name": "slow",
        "source_type": "rest_api",
        "base_url": fake.base_url,
        "auth_header": "X-Api-Key: k-0123456789",
        "records_path": "/v1/customers",
    }
    source = (await sources.create(service, body)).id
    started = trio.current_time()
    failed = await live(service, source, "rest_api", "/v1/customers/{order_id}", order_id="1")
    assert failed == LiveFailure("no answer within 0.3 seconds", failed.duration_ms)
    assert trio.current_time() - started < 2
