#!/usr/bin/env python3
"""Records per second a sync stores, from MariaDB and from a paginated API.

    .venv/bin/python scripts/bench_sync.py
    .venv/bin/python scripts/bench_sync.py --rows 100000 --api-records 5000 --page-delay 0.05

The real service (embedded PostgreSQL, the app on Hypercorn, httpx as the client)
syncs two data sources through its API, ``POST /integrations`` then
``POST /integrations/{id}/sync``, timed from the 202 until the source says
``succeeded``:

- ``mysql``: a table of ``--rows`` customers on Debian's MariaDB, started here as a
  process of its own (mariadb-server must be installed: ``scripts/dev.py test`` does);
- ``rest_api``: the paginated fake API of the tests, 100 records a page, each page
  answered after ``--page-delay`` seconds (50 ms: a SaaS API far away).

Each sync is run ``--runs`` times (the first stores every record, the next ones
update them); the figures are records per second of each run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import trio
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.conftest import make_settings  # noqa: E402
from tests.io.conftest import serve_service, serving  # noqa: E402
from tests.io.fakes.rest_server import FakeRestApi  # noqa: E402
from tests.io.mariadb import running_mariadb  # noqa: E402

from ragio.startup import open_service  # noqa: E402

PASSWORD = "bench-pw"  # noqa: S105 (the benchmark's own server)
TOKEN = "Bearer bench-token"  # noqa: S105 (the fake API's)


def fill_mariadb(admin, rows: int) -> None:
    with admin, admin.cursor() as cursor:
        cursor.execute("CREATE DATABASE crm")
        cursor.execute("CREATE USER 'shop'@'%%' IDENTIFIED BY %s", (PASSWORD,))
        cursor.execute("GRANT SELECT ON crm.* TO 'shop'@'%'")
        cursor.execute(
            "CREATE TABLE crm.customers (id INT PRIMARY KEY, email VARCHAR(100),"
            " name VARCHAR(100), plan VARCHAR(20), balance DECIMAL(12,2), joined DATETIME)"
        )
        for start in range(1, rows + 1, 10_000):
            cursor.executemany(
                "INSERT INTO crm.customers VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (n, f"c{n}@example.com", f"Customer {n}", "pro", "120.50", "2024-05-06")
                    for n in range(start, min(start + 10_000, rows + 1))
                ],
            )


async def sync_once(api: httpx.AsyncClient, source_id: int) -> tuple[float, dict]:
    started = time.perf_counter()
    answer = await api.post(f"/integrations/{source_id}/sync")
    answer.raise_for_status()
    while True:
        shown = (await api.get(f"/integrations/{source_id}")).json()
        if shown["sync"]["status"] != "syncing":
            break
        await trio.sleep(0.01)
    elapsed = time.perf_counter() - started
    if shown["sync"]["status"] != "succeeded":
        raise SystemExit(f"the sync did not succeed: {shown['sync']}")
    return elapsed, shown["sync"]


async def bench(args: argparse.Namespace, work: Path) -> None:
    stack = AsyncExitStack()
    with running_mariadb(work / "mariadb") as maria:
        fill_mariadb(maria.admin(), args.rows)
        settings = make_settings(
            data_dir=work / "data",
            addon_encryption_key=Fernet.generate_key().decode(),
            integrations_allow_http_loopback=True,
        )
        fake = FakeRestApi("Authorization", TOKEN, args.api_records, page_size=100)
        fake.delay = args.page_delay
        async with trio.open_nursery() as nursery, open_service(settings) as svc:
            await stack.enter_async_context(serving(fake, nursery))
            base_url, stop = await serve_service(svc, nursery)
            async with httpx.AsyncClient(base_url=base_url, timeout=60) as api:
                sources = {
                    f"mysql, {args.rows} rows": {
                        "source_type": "mysql",
                        "host": "127.0.0.1",
                        "port": maria.port,
                        "user": "shop",
                        "password": PASSWORD,
                        "database": "crm",
                        "table": "customers",
                    },
                    f"rest_api, {args.api_records} records, {args.page_delay * 1000:g} ms a page": {
                        "source_type": "rest_api",
                        "base_url": fake.base_url,
                        "records_path": "/v1/customers",
                        "auth_header": f"Authorization: {TOKEN}",
                        "user_field": "email",
                    },
                }
                for number, (label, body) in enumerate(sources.items()):
                    created = await api.post(
                        "/integrations", json={"name": f"source {number}", **body}
                    )
                    created.raise_for_status()
                    for run in range(args.runs):
                        elapsed, state = await sync_once(api, created.json()["id"])
                        seen = state["records_seen"]
                        print(
                            f"{label}: run {run + 1}: {seen} records in {elapsed:.2f} s = "
                            f"{seen / elapsed:,.0f} records/s",
                            flush=True,
                        )
            stop.set()
            await stack.aclose()
            nursery.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=50_000, help="MariaDB rows")
    parser.add_argument("--api-records", type=int, default=5_000, help="records of the API")
    parser.add_argument("--page-delay", type=float, default=0.05, help="seconds a page")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as work:
        trio.run(bench, args, Path(work))


if __name__ == "__main__":
    main()
