"""The database data sources against real servers: a MariaDB of the session's own
(Debian's mariadb-server, on its own data folder, socket and port), a second embedded
PostgreSQL (the owner's: never the one the service itself runs on), and nx-27017 (a
MongoDB wire-protocol server on SQLite). They are on this host: the Reach allows loopback
addresses and Unix sockets, as INTEGRATIONS_ALLOW_PRIVATE_TARGETS and
INTEGRATIONS_ALLOW_UNIX_SOCKETS do."""

from __future__ import annotations

import contextlib
import datetime
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import attrs
import bson
import psycopg
import pymongo
import pymysql
import pytest
import trio

from ragcore.integrations.addresses import targets
from ragcore.integrations.databases import json_shaped
from ragcore.integrations.kinds import KINDS, with_defaults
from ragio.integrations.connectors.base import Connector, Reach, SourceFailed
from ragio.integrations.connectors.databases import (
    MySQLTable,
    PostgreSQLTable,
    connect_mysql,
    connect_postgresql,
)
from ragio.integrations.connectors.mongodb import MongoCollection, bson_shaped, connect_mongodb
from tests.io.mariadb import MariaDB, NotInstalled, running_mariadb
from tests.io.processes import free_port

PASSWORD = "S3cret-pw/x@y%z"  # URL-special characters: a URL carries it percent-encoded
ENCODED = PASSWORD.replace("%", "%25").replace("/", "%2F").replace("@", "%40")
ROWS = 1234
AWKWARD = "we ird `tbl\" 'x%"  # a space, both quotes, a backtick and a percent sign
AWKWARD_PG = AWKWARD.replace('"', '""')  # as a quoted identifier in PostgreSQL
INJECTION = "customers; DROP TABLE customers; --"
#: the servers are on this host: loopback addresses and Unix sockets allowed
REACH = Reach(
    timeout=5,
    allow_http_loopback=False,
    targets=targets(allow_private=True),
    allow_unix_sockets=True,
)
QUICK = attrs.evolve(REACH, timeout=1)


def connector(kind: str, reach: Reach = REACH, **credentials: str) -> Connector:
    factory = {"mysql": connect_mysql, "postgresql": connect_postgresql}.get(kind, connect_mongodb)
    return factory(with_defaults(KINDS[kind], credentials), reach)


async def read_all(source: Connector) -> list[list[dict[str, Any]]]:
    return [page async for page in source.pages()]


async def failure(call: Any) -> str:
    with pytest.raises(SourceFailed) as failed:
        await call()
    print(failed.value.reason)  # shown with -s: what the owner reads
    return failed.value.reason


def assert_no_secret(reason: str) -> None:
    for secret in (PASSWORD, "S3cret", "x@y", "%25z", "y%z"):
        assert secret not in reason


# --- the servers --------------------------------------------------------------------------


@attrs.frozen
class Shop:
    """The MariaDB with the shop's database, and how the connector reaches it."""

    server: MariaDB

    @property
    def port(self) -> int:
        return self.server.port

    def admin(self) -> pymysql.connections.Connection[Any]:
        return self.server.admin()

    def credentials(self, **changes: str) -> dict[str, str]:
        base = {
            "host": "127.0.0.1",
            "port": str(self.port),
            "user": "shop",
            "password": PASSWORD,
            "database": "crm",
            "table": "customers",
        }
        return {**base, **changes}


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    """Debian's MariaDB, its own process on a data folder, socket and port of its own."""
    try:
        with running_mariadb(tmp_path_factory.mktemp("mariadb")) as server:
            admin = server.admin()
            with admin, admin.cursor() as cursor:
                for statement in (
                    "CREATE DATABASE crm",
                    "CREATE USER 'shop'@'%%' IDENTIFIED BY %s",  # %% for PyMySQL's formatting
                    "GRANT SELECT ON crm.* TO 'shop'@'%'",
                    "CREATE TABLE crm.customers (id INT PRIMARY KEY, email VARCHAR(100),"
                    " balance DECIMAL(12,2), joined DATETIME, avatar BLOB)",
                    "CREATE TABLE crm.`we ird ``tbl\" 'x%` (id INT PRIMARY KEY, email TEXT)",
                    "CREATE VIEW crm.slow AS SELECT id, SLEEP(30) AS waited FROM crm.customers",
                    # a view whose function writes (as its definer, root): read, it must fail
                    "CREATE TABLE crm.visits (at DATETIME)",
                    "CREATE FUNCTION crm.touch() RETURNS INT MODIFIES SQL DATA"
                    " BEGIN INSERT INTO crm.visits VALUES (NOW()); RETURN 1; END",
                    "CREATE VIEW crm.writes AS SELECT id, crm.touch() AS touched"
                    " FROM crm.customers",
                ):
                    cursor.execute(statement, (PASSWORD,) if "%s" in statement else None)
                cursor.executemany(
                    "INSERT INTO crm.customers VALUES (%s, %s, %s, %s, %s)",
                    [
                        (
                            n,
                            f"c{n}@example.com",
                            "1234567890.25",
                            "2024-05-06 07:08:09",
                            b"\x00\xff",
                        )
                        for n in range(1, ROWS + 1)
                    ],
                )
                cursor.execute("INSERT INTO crm.`we ird ``tbl\" 'x%` VALUES (1, 'odd@example.com')")
            yield Shop(server)
    except NotInstalled as error:
        pytest.fail(str(error))


@attrs.frozen
class Postgres:
    socket_dir: str
    port: str

    def credentials(self, **changes: str) -> dict[str, str]:
        base = {
            "host": self.socket_dir,
            "port": self.port,
            "user": "shop",
            "password": PASSWORD,
            "database": "crm_source",
            "table": "sales.customers",
        }
        return {**base, **changes}


@pytest.fixture(scope="session")
def postgres_source(owner_postgres: str) -> Postgres:
    """A database on the owner's PostgreSQL, read by the role ``shop`` with a password (the
    embedded server asks every role for one)."""
    postgres_url = owner_postgres
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        socket_dir = admin.execute("SHOW unix_socket_directories").fetchone()[0].split(",")[0]
        port = admin.execute("SHOW port").fetchone()[0]
        admin.execute("CREATE DATABASE crm_source")
        admin.execute(f"CREATE ROLE shop LOGIN PASSWORD '{PASSWORD}'")
    with psycopg.connect(postgres_url.replace("/ragchat?", "/crm_source?")) as db:
        for statement in (
            "CREATE SCHEMA sales",
            "CREATE TABLE sales.customers (id int PRIMARY KEY, email text, balance numeric,"
            " joined timestamptz, avatar bytea, tags text[], extra jsonb)",
            f'CREATE TABLE sales."{AWKWARD_PG}" (id int PRIMARY KEY, email text)',
            "CREATE FUNCTION sales.hang() RETURNS int LANGUAGE sql AS 'SELECT 1 FROM pg_sleep(30)'",
            "CREATE VIEW sales.slow AS SELECT id, sales.hang() AS waited FROM sales.customers",
            # a view whose function writes (as its owner): read, it must fail
            "CREATE TABLE sales.visits (at timestamptz)",
            "CREATE FUNCTION sales.touch() RETURNS int LANGUAGE sql SECURITY DEFINER AS"
            " 'INSERT INTO sales.visits VALUES (now()); SELECT 1'",
            "CREATE VIEW sales.writes AS SELECT id, sales.touch() AS touched FROM sales.customers",
            "GRANT USAGE ON SCHEMA sales TO shop",
            "GRANT SELECT ON ALL TABLES IN SCHEMA sales TO shop",
        ):
            db.execute(statement)
        with db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO sales.customers VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [
                    (n, f"c{n}@example.com", "1234567890.25", "2024-05-06T07:08:09Z",
                     b"\x00\xff", ["a", "b"], psycopg.types.json.Jsonb({"tier": n % 3}))
                    for n in range(1, ROWS + 1)
                ],
            )  # fmt: skip
            cursor.execute(f"""INSERT INTO sales."{AWKWARD_PG}" VALUES (1, 'odd@example.com')""")
    return Postgres(socket_dir, port)


@pytest.fixture(scope="session")
def mongo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """nx-27017 on a free port; its URL, with the collection crm.customers filled."""
    base = tmp_path_factory.mktemp("nx")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "nx_27017.nx_27017", "--data-dir", str(base / "data"),
         "--host", "127.0.0.1", "-p", str(port), "--log-file", str(base / "log"),
         "--pid-file", str(base / "pid")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"mongodb://127.0.0.1:{port}"
    try:
        client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
            url, serverSelectionTimeoutMS=30_000
        )
        with client:
            client.admin.command("ping")
            client.crm.customers.insert_many(
                [
                    {"n": n, "email": f"c{n}@example.com", "joined": _when(),
                     "avatar": b"\x00\xff", "nested": {"list": [1, {"ref": _object_id(n)}]}}
                    for n in range(1, ROWS + 1)
                ]
            )  # fmt: skip
        yield url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def _when() -> datetime.datetime:
    return datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)


def _object_id(n: int) -> bson.ObjectId:
    return bson.ObjectId(f"{n:024x}")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


def closed_port() -> int:
    return free_port()  # nothing listens on it once free_port's socket is closed


# --- MySQL / MariaDB ----------------------------------------------------------------------


async def test_mysql_test_says_what_answered(mariadb: Shop) -> None:
    said = await connector("mysql", **mariadb.credentials()).test()
    assert said.startswith("MariaDB 10.") and said.endswith(": table customers readable")
    url = f"mysql://shop:{ENCODED}"
    said = await connector(
        "mysql", url=f"{url}@127.0.0.1:{mariadb.port}/crm", table="crm.customers"
    ).test()
    assert said.endswith(": table crm.customers readable")


async def test_mysql_reads_every_row_in_pages(mariadb: Shop) -> None:
    pages = await read_all(connector("mysql", **mariadb.credentials()))
    assert [len(page) for page in pages] == [500, 500, 234]
    rows = [row for page in pages for row in page]
    assert [row["id"] for row in rows] == list(range(1, ROWS + 1))
    assert rows[0] == {
        "id": 1,
        "email": "c1@example.com",
        "balance": "1234567890.25",  # a Decimal as text: exact
        "joined": "2024-05-06T07:08:09",
        "avatar": "AP8=",  # bytes as base64
    }


async def test_mysql_a_read_stopped_early_frees_its_connection(mariadb: Shop) -> None:
    def sessions() -> int:
        admin = mariadb.admin()
        with admin, admin.cursor() as cursor:
            cursor.execute(
                "SELECT COUNT(*) FROM information_schema.processlist WHERE user = 'shop'"
            )
            return cursor.fetchone()[0]

    async with contextlib.aclosing(connector("mysql", **mariadb.credentials()).pages()) as pages:
        assert len(await anext(pages)) == 500
        assert sessions() == 1
    for _ in range(50):  # the server notices the goodbye soon after
        if sessions() == 0:
            break
        await trio.sleep(0.1)
    assert sessions() == 0


async def test_mysql_failures_carry_the_servers_reason(mariadb: Shop) -> None:
    wrong = await failure(connector("mysql", **mariadb.credentials(password="nope")).test)
    assert "Access denied for user 'shop'@'127.0.0.1'" in wrong
    refused = await failure(connector("mysql", **mariadb.credentials(port=str(closed_port()))).test)
    assert "Can't connect to MySQL server on '127.0.0.1'" in refused
    assert "refused" in refused.lower()
    no_table = await failure(connector("mysql", **mariadb.credentials(table="orders")).test)
    assert no_table == "table orders does not exist"
    no_key = await failure(connector("mysql", **mariadb.credentials(key_column="idx")).test)
    assert no_key == "key column idx does not exist in table customers"
    pages = connector("mysql", **mariadb.credentials(table="crm.nothing"))
    assert await failure(lambda: read_all(pages)) == "table crm.nothing does not exist"
    for reason in (wrong, refused, no_table, no_key):
        assert_no_secret(reason)


async def test_mysql_awkward_names_stay_names(mariadb: Shop) -> None:
    rows = await read_all(connector("mysql", **mariadb.credentials(table=AWKWARD)))
    assert rows == [[{"id": 1, "email": "odd@example.com"}]]
    said = await connector("mysql", **mariadb.credentials(table=f"crm.{AWKWARD}")).test()
    assert said.endswith(f"table crm.{AWKWARD} readable")
    # raw in the SQL, each would be read (as no rows); quoted, each is a name no table has
    for injection in (INJECTION, "customers LIMIT 0 #", "customers` LIMIT 0 #"):
        injected = await failure(connector("mysql", **mariadb.credentials(table=injection)).test)
        assert injected == f"table {injection} does not exist"
    admin = mariadb.admin()
    with admin, admin.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM crm.customers")
        assert cursor.fetchone() == (ROWS,)


async def test_mysql_reads_in_a_read_only_transaction(mariadb: Shop) -> None:
    writes = connector("mysql", **mariadb.credentials(table="writes"))
    assert "READ ONLY transaction" in await failure(lambda: read_all(writes))
    admin = mariadb.admin()
    with admin, admin.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM crm.visits")
        assert cursor.fetchone() == (0,)


async def test_mysql_timeouts_cut_a_hang(mariadb: Shop, silent_port: int) -> None:
    quick = QUICK
    started = trio.current_time()
    slow = connector("mysql", quick, **mariadb.credentials(table="slow"))
    reason = await failure(lambda: read_all(slow))
    assert "max_statement_time" in reason
    silent = connector("mysql", quick, **mariadb.credentials(port=str(silent_port)))
    reason = await failure(silent.test)
    assert "timed out" in reason
    assert trio.current_time() - started < 10


# --- PostgreSQL ---------------------------------------------------------------------------


async def test_postgresql_test_says_what_answered(postgres_source: Postgres) -> None:
    said = await connector("postgresql", **postgres_source.credentials()).test()
    assert said.startswith("PostgreSQL 1") and said.endswith(": table sales.customers readable")
    url = f"postgresql://shop:{ENCODED}@/crm_source?host={postgres_source.socket_dir}"
    url += f"&port={postgres_source.port}"
    assert (await connector("postgresql", url=url, table="sales.customers").test()).endswith(
        "readable"
    )


async def test_postgresql_reads_every_row_in_pages(postgres_source: Postgres) -> None:
    pages = await read_all(connector("postgresql", **postgres_source.credentials()))
    assert [len(page) for page in pages] == [500, 500, 234]
    rows = [row for page in pages for row in page]
    assert [row["id"] for row in rows] == list(range(1, ROWS + 1))
    assert rows[0] == {
        "id": 1,
        "email": "c1@example.com",
        "balance": "1234567890.25",
        "joined": "2024-05-06T07:08:09+00:00",
        "avatar": "AP8=",
        "tags": ["a", "b"],
        "extra": {"tier": 1},
    }


async def test_postgresql_failures_carry_the_servers_reason(postgres_source: Postgres) -> None:
    source = postgres_source
    wrong = await failure(connector("postgresql", **source.credentials(password="nope")).test)
    assert 'password authentication failed for user "shop"' in wrong
    refused = await failure(
        connector(
            "postgresql", **source.credentials(host="127.0.0.1", port=str(closed_port()))
        ).test
    )
    assert "Connection refused" in refused
    no_table = await failure(
        connector("postgresql", **source.credentials(table="sales.orders")).test
    )
    assert no_table == "table sales.orders does not exist"
    no_key = await failure(connector("postgresql", **source.credentials(key_column="idx")).test)
    assert no_key == "key column idx does not exist in table sales.customers"
    for reason in (wrong, refused, no_table, no_key):
        assert_no_secret(reason)


async def test_postgresql_a_url_libpq_quotes_back_is_masked() -> None:
    # libpq quotes a URI it cannot parse whole in its message, password and all
    url = f"postgresql://shop:{ENCODED}@[::1/crm_source"
    reason = await failure(connector("postgresql", url=url, table="customers").test)
    assert "IPv6" in reason and "********" in reason
    assert_no_secret(reason)


async def test_postgresql_awkward_names_stay_names(
    postgres_source: Postgres,
    owner_postgres: str,
) -> None:
    credentials = postgres_source.credentials(table=f"sales.{AWKWARD}")
    assert await read_all(connector("postgresql", **credentials)) == [
        [{"id": 1, "email": "odd@example.com"}]
    ]
    assert (await connector("postgresql", **credentials).test()).endswith(
        f"table sales.{AWKWARD} readable"
    )
    # raw in the SQL, each would be read (as no rows); quoted, each is a name no table has
    for injection in (INJECTION, "customers LIMIT 0 -- ", 'customers" LIMIT 0 -- '):
        injected = f"sales.{injection}"
        reason = await failure(
            connector("postgresql", **postgres_source.credentials(table=injected)).test
        )
        assert reason == f"table {injected} does not exist"
    with psycopg.connect(owner_postgres.replace("/ragchat?", "/crm_source?")) as db:
        assert db.execute("SELECT count(*) FROM sales.customers").fetchone() == (ROWS,)
    quoted = postgres_source.credentials(table='"sales"."customers"')
    assert (await connector("postgresql", **quoted).test()).endswith("readable")


async def test_postgresql_reads_in_a_read_only_transaction(
    postgres_source: Postgres,
    owner_postgres: str,
) -> None:
    writes = connector("postgresql", **postgres_source.credentials(table="sales.writes"))
    assert "read-only transaction" in await failure(lambda: read_all(writes))
    with psycopg.connect(owner_postgres.replace("/ragchat?", "/crm_source?")) as db:
        assert db.execute("SELECT count(*) FROM sales.visits").fetchone() == (0,)


async def test_postgresql_timeouts_cut_a_hang(postgres_source: Postgres, silent_port: int) -> None:
    quick = QUICK
    started = trio.current_time()
    slow = connector("postgresql", quick, **postgres_source.credentials(table="sales.slow"))
    assert "statement timeout" in await failure(lambda: read_all(slow))
    silent = postgres_source.credentials(host="127.0.0.1", port=str(silent_port))
    reason = await failure(connector("postgresql", quick, **silent).test)
    assert "timeout" in reason
    assert trio.current_time() - started < 10


# --- MongoDB ------------------------------------------------------------------------------


def mongo_credentials(url: str, **changes: str) -> dict[str, str]:
    return {"url": url, "database": "crm", "collection": "customers", **changes}


async def test_mongodb_test_says_what_answered(mongo: str) -> None:
    said = await connector("mongodb", **mongo_credentials(mongo)).test()
    assert said.startswith("MongoDB ") and said.endswith(": collection customers readable")


async def test_mongodb_reads_every_document_in_pages(mongo: str) -> None:
    pages = await read_all(connector("mongodb", **mongo_credentials(mongo)))
    assert [len(page) for page in pages] == [500, 500, 234]
    documents = [d for page in pages for d in page]
    assert sorted(d["n"] for d in documents) == list(range(1, ROWS + 1))
    assert len({d["_id"] for d in documents}) == ROWS
    first = documents[0]
    assert isinstance(first["_id"], str) and len(first["_id"]) == 24  # the ObjectId's hex
    assert first["joined"] == "2024-05-06T07:08:09+00:00"
    assert first["avatar"] == "AP8="
    assert first["nested"] == {"list": [1, {"ref": f"{first['n']:024x}"}]}


async def test_mongodb_failures_carry_the_drivers_reason(mongo: str) -> None:
    port = closed_port()
    url = f"mongodb://shop:{ENCODED}"
    quick = QUICK
    refused = await failure(
        connector("mongodb", quick, **mongo_credentials(f"{url}@127.0.0.1:{port}/")).test
    )
    assert f"127.0.0.1:{port}" in refused and "refused" in refused.lower()
    assert_no_secret(refused)
    missing = await failure(
        connector("mongodb", **mongo_credentials(mongo, collection="orders")).test
    )
    assert missing == "collection orders does not exist in database crm"
    nothing = connector("mongodb", **mongo_credentials(mongo, database="shop"))
    assert await failure(lambda: read_all(nothing)) == (
        "collection customers does not exist in database shop"
    )
    bad = await failure(connector("mongodb", **mongo_credentials(f"{url}@127.0.0.1:x/")).test)
    assert_no_secret(bad)
    # nx-27017 has no users: pymongo's authentication breaks on its answer (a real
    # MongoDB says "Authentication failed."); either way, a reason without the password
    server = mongo.removeprefix("mongodb://")
    unauthenticated = await failure(
        connector("mongodb", **mongo_credentials(f"{url}@{server}/?authSource=admin")).test
    )
    assert_no_secret(unauthenticated)


async def test_mongodb_timeout_cuts_a_silent_server(silent_port: int) -> None:
    quick = QUICK
    started = trio.current_time()
    url = f"mongodb://127.0.0.1:{silent_port}/"
    reason = await failure(connector("mongodb", quick, **mongo_credentials(url)).test)
    assert reason.endswith("(no server answered within 1 s)")
    assert trio.current_time() - started < 10


def test_bson_values_become_json_shaped() -> None:
    # nx-27017 stores no Decimal128: the BSON types it cannot hold, shaped without a server
    document = {
        "_id": _object_id(255),
        "price": bson.Decimal128("12345678901234567.89"),
        "ref": bson.DBRef("orders", _object_id(1)),
        "stamp": bson.Timestamp(1700000000, 1),
        "blob": bson.Binary(b"\x00\xff", 0),
        "big": bson.Int64(2**40),
    }
    assert json_shaped(document, bson_shaped) == {
        "_id": f"{255:024x}",
        "price": "12345678901234567.89",
        "ref": {"$ref": "orders", "$id": f"{1:024x}"},
        "stamp": "Timestamp(1700000000, 1)",
        "blob": "AP8=",
        "big": 2**40,
    }


# --- where a database source may be -------------------------------------------------------


async def test_database_hosts_follow_the_address_rules(
    mariadb: Shop, postgres_source: Postgres, mongo: str
) -> None:
    strict = Reach(timeout=5, allow_http_loopback=False)  # the settings' defaults
    hint = "set INTEGRATIONS_ALLOW_PRIVATE_TARGETS=true to reach a data source on this host or LAN"
    for host in ("127.0.0.1", "localhost", "127.1"):
        reason = await failure(connector("mysql", strict, **mariadb.credentials(host=host)).test)
        assert reason.startswith("host: ") and reason.endswith(f"is a loopback address; {hint}")
    url = f"mysql://shop:{ENCODED}@127.0.0.1:{mariadb.port}/crm"
    reason = await failure(connector("mysql", strict, url=url, table="customers").test)
    assert reason == f"url: 127.0.0.1 is a loopback address; {hint}"
    assert_no_secret(reason)
    reason = await failure(connector("mongodb", strict, **mongo_credentials(mongo)).test)
    assert reason == f"url: 127.0.0.1 is a loopback address; {hint}"
    socket_dir = postgres_source.socket_dir
    sockets = "set INTEGRATIONS_ALLOW_UNIX_SOCKETS=true to reach a database on this host"
    reason = await failure(connector("postgresql", strict, **postgres_source.credentials()).test)
    assert reason == f"host: {socket_dir} is a Unix socket; {sockets} through its socket"
    url = f"postgresql://shop:{ENCODED}@/crm_source?host={socket_dir}"
    reason = await failure(connector("postgresql", strict, url=url, table="sales.customers").test)
    assert reason == f"url: {socket_dir} is a Unix socket; {sockets} through its socket"
    # link-local and cloud metadata: never, whatever the settings say
    for host in ("169.254.169.254", "metadata.google.internal", "[fe80::1]"):
        credentials = postgres_source.credentials(host=host, port="5432")
        reason = await failure(connector("postgresql", REACH, **credentials).test)
        assert "data sources never go there" in reason, reason
    # allowed, the host is read as it resolves and the connection pinned to its address
    said = await connector("mysql", REACH, **mariadb.credentials(host="localhost")).test()
    assert said.endswith(": table customers readable")


async def test_an_answer_over_the_cap_is_refused(
    mariadb: Shop, postgres_source: Postgres, mongo: str
) -> None:
    """A page (500 rows, about 40 kB here) or a live read over the cap: refused, saying so
    (the cap counts the rows as they come)."""
    capped = attrs.evolve(REACH, max_response_bytes=round(0.01 * 2**20))
    said = (
        "the source answered more than 0.01 MB; nothing more was read "
        "(INTEGRATIONS_MAX_RESPONSE_MB)"
    )
    sources = {
        "mysql": mariadb.credentials(),
        "postgresql": postgres_source.credentials(),
        "mongodb": mongo_credentials(mongo),
    }
    for kind, credentials in sources.items():
        source = connector(kind, capped, **credentials)
        assert await failure(lambda: read_all(source)) == said, kind  # noqa: B023
    tiny = attrs.evolve(REACH, max_response_bytes=1000)  # a live read of 50 rows
    for kind, table in (("mysql", MySQLTable), ("postgresql", PostgreSQLTable)):
        credentials = with_defaults(KINDS[kind], sources[kind])
        read = table(credentials, tiny).run_statement(
            "SELECT * FROM " + credentials["table"], {}, writes=False, max_rows=50
        )
        with pytest.raises(SourceFailed, match="more than 0.000954 MB"):
            await read
        # within the cap, the first 50 rows of many: the rest left unread
        rows, _ = await table(credentials, REACH).run_statement(
            "SELECT * FROM " + credentials["table"], {}, writes=False, max_rows=50
        )
        assert len(rows) == 50
    documents = MongoCollection(with_defaults(KINDS["mongodb"], sources["mongodb"]), tiny)
    with pytest.raises(SourceFailed, match="more than 0.000954 MB"):
        await documents.find({}, 50)
