"""The connections kept to a data source between live queries, watched from the owner's
PostgreSQL itself (``pg_stat_activity``): live queries share one connection; an edit of
the source through the API closes it (the next query connects with the new settings), a
deletion leaves none; a connection the server ended is not the next query's failure; an
idle one is closed after a while, and all of them when the service closes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import trio
from cryptography.fernet import Fernet

from ragcore.live.pipeline import LiveFailure, LiveRows, RunLiveQuery
from ragcore.live.templates import check_template
from ragio.db.source_connections import SourceConnections
from ragio.integrations import sources
from ragio.live.handlers import run_live_query
from ragio.startup import open_service
from tests.conftest import make_settings
from tests.io.live import owner_database

DATABASE = "live_connections"
READ = "SELECT pg_backend_pid() AS pid, status FROM orders WHERE id = {order_id}"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {
        "addon_encryption_key": Fernet.generate_key().decode(),
        "integrations_allow_private_targets": True,
        "integrations_allow_unix_sockets": True,  # the owner's PostgreSQL: its socket
    }


@pytest.fixture
def pg_orders(owner_postgres: str) -> str:
    """An order on the owner's PostgreSQL, in a database of this module's; its URL."""
    url = owner_database(owner_postgres, DATABASE)
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS orders")
        db.execute("CREATE TABLE orders (id int PRIMARY KEY, status text)")
        db.execute("INSERT INTO orders VALUES (4411, 'shipped')")
    return url


def connected(owner_url: str) -> dict[int, str]:
    """The service's connections to the module's database now: pid -> application_name."""
    with psycopg.connect(owner_url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pid, application_name FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (DATABASE,),
        ).fetchall()
    return {int(pid): str(name) for pid, name in rows}


async def settled(owner_url: str, expected: int) -> dict[int, str]:
    """``connected`` once it shows ``expected`` connections (a closed one leaves the
    server's view a moment later), or as it is after 5 seconds."""
    with trio.move_on_after(5):
        while len(connected(owner_url)) != expected:
            await trio.sleep(0.02)
    return connected(owner_url)


async def read(service: Any, source: int) -> int:
    """A live read of order 4411 on ``source``: the server process that ran it."""
    effect = RunLiveQuery(
        1, source, "postgresql", check_template("postgresql", READ), (("order_id", "4411"),)
    )
    found = await run_live_query(effect, service)
    assert isinstance(found, LiveRows), found
    assert found.rows[0]["status"] == "shipped"
    return int(found.rows[0]["pid"])


async def add_source(api: httpx.AsyncClient, url: str) -> int:
    body = {"name": "pg orders", "source_type": "postgresql", "url": url, "table": "orders"}
    response = await api.post("/integrations", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


async def test_live_queries_share_a_connection_an_edit_closes_and_a_deletion_leaves_none(
    service, api: httpx.AsyncClient, owner_postgres: str, pg_orders: str
) -> None:
    source = await add_source(api, pg_orders)
    first = await read(service, source)
    assert await read(service, source) == first  # the same server process: no new connection
    assert await read(service, source) == first
    assert list(await settled(owner_postgres, 1)) == [first]

    edited = pg_orders + "&application_name=edited"  # the owner changes the URL
    response = await api.patch(f"/integrations/{source}", json={"url": edited})
    assert response.status_code == 200, response.text
    assert await settled(owner_postgres, 0) == {}  # the old connection closed at once
    second = await read(service, source)
    assert second != first
    assert await settled(owner_postgres, 1) == {second: "edited"}  # the new URL's

    response = await api.delete(f"/integrations/{source}")
    assert response.status_code == 204, response.text
    assert await settled(owner_postgres, 0) == {}


async def test_a_connection_the_server_ended_is_not_the_next_querys_failure(
    service, owner_postgres: str, pg_orders: str
) -> None:
    body = {"name": "pg", "source_type": "postgresql", "url": pg_orders, "table": "orders"}
    source = (await sources.create(service, body)).id
    first = await read(service, source)
    with psycopg.connect(owner_postgres, autocommit=True) as admin:  # as a restart would
        admin.execute("SELECT pg_terminate_backend(%s)", (first,))
    await settled(owner_postgres, 0)
    second = await read(service, source)
    assert second != first
    assert list(await settled(owner_postgres, 1)) == [second]


async def test_a_failed_statement_gives_its_connection_no_second_use(
    service, owner_postgres: str, pg_orders: str
) -> None:
    body = {"name": "pg", "source_type": "postgresql", "url": pg_orders, "table": "orders"}
    source = (await sources.create(service, body)).id
    first = await read(service, source)
    effect = RunLiveQuery(
        1, source, "postgresql", check_template("postgresql", READ), (("order_id", "x"),)
    )
    assert isinstance(await run_live_query(effect, service), LiveFailure)
    assert await settled(owner_postgres, 0) == {}  # closed, not kept
    assert await read(service, source) != first


async def test_idle_connections_are_closed_after_a_while(
    service, owner_postgres: str, pg_orders: str
) -> None:
    now = [0.0]
    service.source_connections = kept = SourceConnections(monotonic=lambda: now[0])
    body = {"name": "pg", "source_type": "postgresql", "url": pg_orders, "table": "orders"}
    source = (await sources.create(service, body)).id
    await read(service, source)
    now[0] += kept.idle_seconds - 1
    assert kept.close_idle() == 0
    assert len(await settled(owner_postgres, 1)) == 1
    now[0] += 1
    assert kept.close_idle() == 1
    assert await settled(owner_postgres, 0) == {}


async def test_the_service_closes_its_kept_connections_on_the_way_out(
    database_url: str, settings_overrides: dict[str, Any], tmp_path: Path, owner_postgres: str,
    pg_orders: str,
) -> None:  # fmt: skip
    settings = make_settings(
        database_url=database_url, data_dir=tmp_path / "data", **settings_overrides
    )
    async with open_service(settings) as service:
        body = {"name": "pg", "source_type": "postgresql", "url": pg_orders, "table": "orders"}
        source = (await sources.create(service, body)).id
        await read(service, source)
        assert len(await settled(owner_postgres, 1)) == 1
    assert await settled(owner_postgres, 0) == {}


class Conn:
    closed = False

    def close(self) -> None:
        self.closed = True


def test_at_most_a_few_are_kept_and_a_lease_from_before_an_edit_keeps_none() -> None:
    kept = SourceConnections(per_source=2)
    leases = [kept.lease(7, 1) for _ in range(3)]
    assert [lease.take() for lease in leases] == [None, None, None]  # a burst opens three
    burst = [Conn(), Conn(), Conn()]
    for lease, conn in zip(leases, burst, strict=True):
        lease.give(conn)
    assert [c.closed for c in burst] == [False, False, True]  # the third is over the bound
    edited = kept.lease(7, 2)  # the source was edited (a newer version): the old ones go
    assert edited.take() is None and all(c.closed for c in burst)
    stale = kept.lease(7, 1)  # read before the edit, it runs after: it keeps nothing
    assert stale.take() is None
    old = Conn()
    stale.give(old)
    assert old.closed and kept.statistics().idle == 0
    new = Conn()
    edited.give(new)
    assert kept.lease(7, 2).take() is new
