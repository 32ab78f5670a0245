#!/usr/bin/env python3
"""Milliseconds an uncached live query takes on a PostgreSQL data source, on the source's
kept connections against a new connection each time (the ratio in one run).

    .venv/bin/python scripts/bench_live.py
    .venv/bin/python scripts/bench_live.py --queries 500 --mysql

The real service (its embedded PostgreSQL) and an owner's PostgreSQL, a second embedded
server started here (reached on its Unix socket, with a password, as the tests reach
it): a ``postgresql`` source on a table of orders, and ``--queries`` live reads of one
order by its number, each through the service's handler of ``RunLiveQuery``
(``ragio.live.handlers``: the source read from the service's database, its credentials
decrypted, the address checks, the statement in a read-only transaction), never from
the results cache. ``kept``: the service's own ``SourceConnections`` (a few kept per
source); ``new each``: one that keeps none, so each query connects, as before.
``--mysql`` does the same on Debian's MariaDB, started here over TCP (mariadb-server
must be installed: ``scripts/dev.py test`` does).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import trio
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.conftest import make_settings  # noqa: E402
from tests.io.mariadb import running_mariadb  # noqa: E402

from ragcore.live.pipeline import LiveRows, RunLiveQuery  # noqa: E402
from ragcore.live.templates import check_template  # noqa: E402
from ragio.db.embedded import DATABASE_NAME, EmbeddedPostgres  # noqa: E402
from ragio.db.source_connections import SourceConnections  # noqa: E402
from ragio.integrations import sources  # noqa: E402
from ragio.live.handlers import run_live_query  # noqa: E402
from ragio.startup import open_service  # noqa: E402

READ = "SELECT id, status FROM orders WHERE id = {order_id}"
PASSWORD = "bench-pw"  # noqa: S105 (the benchmark's own server)


def owner_orders(server: EmbeddedPostgres) -> str:
    """A database ``shop`` with 1,000 orders on the owner's server; its URL."""
    admin_url = server.admin_url(DATABASE_NAME)
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute("CREATE DATABASE shop")
    url = admin_url.replace(f"/{DATABASE_NAME}?", "/shop?")
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE TABLE orders (id int PRIMARY KEY, status text)")
        db.execute("INSERT INTO orders SELECT n, 'shipped' FROM generate_series(1, 1000) n")
    return url


def fill_mariadb(admin: Any) -> None:
    with admin, admin.cursor() as cursor:
        cursor.execute("CREATE DATABASE shop")
        cursor.execute("CREATE USER 'shop'@'%%' IDENTIFIED BY %s", (PASSWORD,))
        cursor.execute("GRANT SELECT ON shop.* TO 'shop'@'%'")
        cursor.execute("CREATE TABLE shop.orders (id INT PRIMARY KEY, status VARCHAR(20))")
        cursor.executemany(
            "INSERT INTO shop.orders VALUES (%s, 'shipped')", [(n,) for n in range(1, 1001)]
        )


async def timed(run: Callable[[int], Awaitable[None]], queries: int) -> list[float]:
    """Milliseconds of each of ``queries`` calls of ``run`` (after one not counted)."""
    await run(0)
    took = []
    for n in range(queries):
        started = time.perf_counter()
        await run(n)
        took.append((time.perf_counter() - started) * 1000)
    return took


async def bench_source(service: Any, label: str, kind: str, body: dict, queries: int) -> None:
    source = (await sources.create(service, {"name": label, "source_type": kind, **body})).id
    template = check_template(kind, READ)

    async def read(n: int) -> None:
        values = (("order_id", str(n % 1000 + 1)),)
        found = await run_live_query(RunLiveQuery(1, source, kind, template, values), service)
        assert isinstance(found, LiveRows) and found.rows, found

    kept = service.source_connections
    service.source_connections = SourceConnections(per_source=0)  # keeps none: connects
    fresh = await timed(read, queries)
    service.source_connections = kept
    pooled = await timed(read, queries)
    for name, took in (("new each", fresh), ("kept", pooled)):
        print(
            f"{label}: {name}: {queries} queries, median {statistics.median(took):.2f} ms, "
            f"mean {statistics.fmean(took):.2f} ms, total {sum(took) / 1000:.2f} s",
            flush=True,
        )
    ratio = statistics.median(fresh) / statistics.median(pooled)
    print(f"{label}: kept connections are {ratio:.1f}x faster (median)", flush=True)


async def bench(args: argparse.Namespace, work: Path) -> None:
    owner = EmbeddedPostgres(work / "owner")
    await trio.to_thread.run_sync(owner.start)
    try:
        url = owner_orders(owner)
        settings = make_settings(
            data_dir=work / "data",
            addon_encryption_key=Fernet.generate_key().decode(),
            integrations_allow_private_targets=True,
            integrations_allow_unix_sockets=True,  # the owner's server: its socket
        )
        async with open_service(settings) as service:
            body = {"url": url, "table": "orders"}
            await bench_source(service, "postgresql", "postgresql", body, args.queries)
            if args.mysql:
                with running_mariadb(work / "mariadb") as maria:
                    fill_mariadb(maria.admin())
                    body = {
                        "host": "127.0.0.1",
                        "port": maria.port,
                        "user": "shop",
                        "password": PASSWORD,
                        "database": "shop",
                        "table": "orders",
                    }
                    await bench_source(service, "mysql", "mysql", body, args.queries)
    finally:
        await trio.to_thread.run_sync(owner.stop)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=200, help="live queries of each way")
    parser.add_argument("--mysql", action="store_true", help="also on MariaDB over TCP")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-live-") as work:
        trio.run(bench, args, Path(work))


if __name__ == "__main__":
    main()
