"""What the live-data tests share: a MariaDB with a shop's orders (one per test session), the
count of queries it was asked, actions created through the owner's API, and a PostgreSQL of
the owner's (``owner_postgres``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from ragio.db.embedded import DATABASE_NAME, EmbeddedPostgres
from tests.io.mariadb import MariaDB, NotInstalled, running_mariadb

PASSWORD = "live-S3cret"  # noqa: S105 (the test server's)
ORDERS = (
    (4411, "ada@example.com", "+14155550100", "shipped"),
    (4412, "bo@example.com", "+14155550111", "packed"),
)


@pytest.fixture(scope="session")
def maria(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    """A MariaDB with ``shop.orders`` and a ``shop`` user that may read and update them;
    its user statistics on, so a test can count the queries the service sent."""
    try:
        with running_mariadb(tmp_path_factory.mktemp("live-mariadb")) as server:
            admin = server.admin()
            with admin, admin.cursor() as cursor:
                for statement in (
                    "SET GLOBAL userstat = 1",
                    "CREATE DATABASE shop",
                    "CREATE TABLE shop.orders (id INT PRIMARY KEY, email VARCHAR(100),"
                    " phone VARCHAR(20), status VARCHAR(20))",
                    "CREATE USER 'shop'@'%%' IDENTIFIED BY %s",
                    "GRANT SELECT, UPDATE, DELETE ON shop.orders TO 'shop'@'%'",
                ):
                    cursor.execute(statement, (PASSWORD,) if "%s" in statement else None)
            yield server
    except NotInstalled as error:
        pytest.fail(str(error))


@pytest.fixture(scope="session")
def owner_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a PostgreSQL of the owner's, for postgresql data sources: a second
    embedded server in a folder of its own, started only by the tests that use it. Never
    the session's own server, on which the service runs: no data source may read the
    service's own database. Its URL's host is its socket directory, so the tests that use
    it allow Unix sockets (INTEGRATIONS_ALLOW_UNIX_SOCKETS). The URL is its superuser's:
    the owner's own administrator, who makes the databases the tests read."""
    server = EmbeddedPostgres(tmp_path_factory.mktemp("owner-pg"))
    server.start()
    yield server.admin_url(DATABASE_NAME)
    server.stop()


def owner_database(owner_url: str, name: str) -> str:
    """The URL of database ``name`` on the owner's PostgreSQL, created if missing."""
    with psycopg.connect(owner_url, autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            admin.execute(f'CREATE DATABASE "{name}"')
    return owner_url.replace("/ragchat?", f"/{name}?")


@pytest.fixture
def shop(maria: MariaDB) -> MariaDB:
    """The orders as ``ORDERS`` says, whatever an earlier test changed."""
    admin = maria.admin()
    with admin, admin.cursor() as cursor:
        cursor.execute("DELETE FROM shop.orders")
        cursor.executemany("INSERT INTO shop.orders VALUES (%s, %s, %s, %s)", ORDERS)
        admin.commit()
    return maria


def status_of(maria: MariaDB, order: int) -> str:
    admin = maria.admin()
    with admin, admin.cursor() as cursor:
        cursor.execute("SELECT status FROM shop.orders WHERE id = %s", (order,))
        return str(cursor.fetchone()[0])


def queries_of_shop(maria: MariaDB) -> int:
    """How many reads and writes the ``shop`` user sent: one each live query (the
    ``SELECT VERSION()`` each new connection sends is not counted; a live query may
    reuse a kept connection)."""
    admin = maria.admin()
    with admin, admin.cursor() as cursor:
        cursor.execute(
            "SELECT SELECT_COMMANDS + UPDATE_COMMANDS - TOTAL_CONNECTIONS"
            " FROM information_schema.USER_STATISTICS WHERE USER = 'shop'"
        )
        row = cursor.fetchone()
        return int(row[0]) if row else 0


async def add_mysql_source(api: httpx.AsyncClient, maria: MariaDB, **more: Any) -> int:
    body = {
        "name": "shop",
        "source_type": "mysql",
        "host": "127.0.0.1",
        "port": maria.port,
        "user": "shop",
        "password": PASSWORD,
        "database": "shop",
        "table": "orders",
        **more,
    }
    response = await api.post("/integrations", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


async def add_action(api: httpx.AsyncClient, source_id: int, template: Any, **more: Any) -> int:
    body = {"name": "Order status", "source_id": source_id, "template": template, **more}
    response = await api.post("/live-actions", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])
