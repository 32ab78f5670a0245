"""Live actions run on real databases: a customer's message matched to an action, its
values bound as the driver's parameters, the query run by the service's handler of
``RunLiveQuery`` (``ragio.live.handlers``) on a MariaDB of the module's own and on the
embedded PostgreSQL. Not yet wired into answers (issue 14 goes on)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from cryptography.fernet import Fernet

from ragcore.live.matching import LiveAction
from ragcore.live.pipeline import LiveData, LiveFailed, match_and_execute_action
from ragcore.live.templates import check_template
from ragio.integrations import sources
from ragio.runner import run
from tests.io.mariadb import MariaDB, NotInstalled, running_mariadb

PASSWORD = "live-S3cret"  # noqa: S105 (the test server's)
NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
ORDER = "SELECT id, email, status FROM orders WHERE id = {order_id}"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"addon_encryption_key": Fernet.generate_key().decode()}


@pytest.fixture(scope="module")
def maria(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    try:
        with running_mariadb(tmp_path_factory.mktemp("live-mariadb")) as server:
            admin = server.admin()
            with admin, admin.cursor() as cursor:
                for statement in (
                    "CREATE DATABASE shop",
                    "CREATE TABLE shop.orders (id INT PRIMARY KEY, email VARCHAR(100),"
                    " status VARCHAR(20))",
                    "INSERT INTO shop.orders VALUES (4411, 'ada@example.com', 'shipped'),"
                    " (4412, 'bo@example.com', 'packed')",
                    "CREATE USER 'shop'@'%%' IDENTIFIED BY %s",
                    "GRANT SELECT, UPDATE ON shop.orders TO 'shop'@'%'",
                ):
                    cursor.execute(statement, (PASSWORD,) if "%s" in statement else None)
            yield server
    except NotInstalled as error:
        pytest.fail(str(error))


def status_of(maria: MariaDB, order: int) -> str:
    admin = maria.admin()
    with admin, admin.cursor() as cursor:
        cursor.execute("SELECT status FROM shop.orders WHERE id = %s", (order,))
        return str(cursor.fetchone()[0])


async def mysql_source(service, maria: MariaDB, password: str = PASSWORD) -> int:
    body = {
        "name": f"shop {password}",
        "source_type": "mysql",
        "host": "127.0.0.1",
        "port": maria.port,
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


async def test_an_order_is_read_live_with_its_number_bound(service, maria) -> None:
    source = await mysql_source(service, maria)
    found = await ask(service, action(source, ORDER), "where is my order 4411?")
    assert isinstance(found, LiveData)
    assert [dict(row) for row in found.rows] == [
        {"id": 4411, "email": "ada@example.com", "status": "shipped"}
    ]


async def test_injection_in_a_value_stays_a_value(service, maria) -> None:
    source = await mysql_source(service, maria)
    by_email = action(source, "SELECT id, status FROM orders WHERE email = {email}")
    for message in (
        "my email is x' OR '1'='1@example.com",
        "my email is {email}@example.com",
        "my email is " + "a" * 5000 + "@example.com",
    ):
        found = await ask(service, by_email, message)
        assert not isinstance(found, LiveData) or found.rows == (), message
    assert status_of(maria, 4411) == "shipped"


async def test_a_write_template_updates_its_row_once(service, maria) -> None:
    source = await mysql_source(service, maria)
    cancel = action(
        source,
        "UPDATE orders SET status = 'cancelled' WHERE id = {order_id}",
        triggers=("cancel my order",),
    )
    done = await ask(service, cancel, "please cancel my order 4412")
    assert isinstance(done, LiveData) and done.affected == 1
    assert status_of(maria, 4412) == "cancelled"
    assert status_of(maria, 4411) == "shipped"


async def test_a_failing_source_is_a_failure_not_an_error(service, maria) -> None:
    source = await mysql_source(service, maria, password="wrong-password")
    failed = await ask(service, action(source, ORDER), "where is my order 4411?")
    assert isinstance(failed, LiveFailed)
    assert "Access denied" in failed.reason and "wrong-password" not in failed.reason


async def test_postgresql_reads_in_a_read_only_transaction(service, database_url) -> None:
    with psycopg.connect(database_url, autocommit=True) as db:
        db.execute("CREATE TABLE orders (id int PRIMARY KEY, status text)")
        db.execute("INSERT INTO orders VALUES (4411, 'shipped')")
    body = {
        "name": "pg shop",
        "source_type": "postgresql",
        "url": database_url,
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
    assert isinstance(refused, LiveFailed) and "read-only transaction" in refused.reason
