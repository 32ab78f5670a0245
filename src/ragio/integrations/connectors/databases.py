"""The SQL data sources: a table (or view) of the owner's MySQL/MariaDB or PostgreSQL
database, read row by row.

Drivers: PyMySQL for MySQL and MariaDB (pure Python: nothing to compile, speaks both
servers' protocol, and takes a timeout for connecting, reading and writing) and psycopg 3
for PostgreSQL (already the service's own driver; its sync API, as everywhere here).
Both are blocking, so every call runs in a worker thread (``trio.to_thread.run_sync``).

Pagination is by keyset on ``key_column``: ``WHERE key > <last key> ORDER BY key LIMIT
500``, so a large table is read in stable pages to its end, and a row added or removed
meanwhile neither shifts nor repeats the others (an OFFSET would). The key identifies a
row: rows whose key is NULL are not read, and the key should be unique (of several rows
with one key across a page's edge, the later ones are skipped). One connection serves a
whole read; each page is its own read-only transaction (``START TRANSACTION READ ONLY``;
psycopg's ``read_only``), so no page holds a lock on the owner's table while the caller
works. A live query's statement (``run_statement``) may run on a connection kept from an
earlier one (``ragio.db.source_connections``): opened and judged the same way, its
transaction read-only unless it writes, and its statement timeout set again in each.

Timeouts: every call is bounded by ``Reach.timeout``: connecting (``connect_timeout``;
libpq counts whole seconds, at least 2), each statement on the server (PostgreSQL's
``statement_timeout``, MariaDB's ``max_statement_time``, MySQL's ``max_execution_time``,
which covers SELECT) and, for PyMySQL, each socket read and write
(``read_timeout``/``write_timeout``, a second longer, so that the server's own reason
comes first), which also cuts a server that stops answering. libpq has no read timeout:
for PostgreSQL, TCP keepalives end a wait on a host that is gone.

Where: the host (each host of a libpq URL) is judged by the address rules and the
connection pinned to a judged address (``ragio.integrations.connectors.addresses``:
psycopg's ``hostaddr``, PyMySQL's ``host``); a Unix socket only when allowed, never the
service's own database.

Size: rows are read one at a time as the server sends them (libpq's single-row mode,
PyMySQL's unbuffered cursor) and counted (``Capped``): a page or a live read over
``Reach.max_response_bytes`` fails, and nothing more is read (PostgreSQL cancels the
statement; MySQL, which cannot stop sending, has its connection dropped).

Names: ``table`` and ``key_column`` are split and checked by
``ragcore.integrations.identifiers`` and quoted as identifiers
(``psycopg.sql.Identifier``; backticks doubled for MySQL); every value is a bound
parameter. A table or key column that does not exist is a ``SourceFailed`` naming it.

Reasons: a failure's reason is the server's or the driver's own words, on one line,
with every credential value (the password, the URL and the URL's password) masked.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

import psycopg
import pymysql
import pymysql.cursors
import trio
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from pymysql.constants import CR, ER, SERVER_STATUS

from ragcore.integrations import identifiers
from ragcore.integrations.databases import (
    BadAddress,
    address_of,
    json_shaped,
    secrets_of,
    server_name,
    without_secrets,
)
from ragcore.integrations.identifiers import BadIdentifier
from ragcore.integrations.kinds import KINDS
from ragio.db.source_connections import Lease
from ragio.integrations.connectors.addresses import judged, pinned
from ragio.integrations.connectors.base import (
    Capped,
    Connector,
    Reach,
    Record,
    SourceFailed,
    size_of,
)

PAGE_ROWS = 500
#: a socket waits this much longer than a statement may run, so that a slow statement is
#: stopped by the server, which says why, and a server that stopped answering by the socket
SOCKET_MARGIN = 1.0
T = TypeVar("T")

# MySQL's and MariaDB's error numbers that name what the owner configured
_NO_TABLE = 1146
_NO_COLUMN = 1054
_NO_DATABASE = 1049
_CANNOT_CONNECT = 2003  # PyMySQL's: nothing answered at that address
_LOST = {CR.CR_SERVER_GONE_ERROR, CR.CR_SERVER_LOST}  # a connection that ended


def connect_mysql(credentials: Mapping[str, str], reach: Reach) -> Connector:
    return MySQLTable(credentials, reach)


def connect_postgresql(credentials: Mapping[str, str], reach: Reach) -> Connector:
    return PostgreSQLTable(credentials, reach)


class _Table:
    """What both SQL connectors share: the names, the thread, the reasons."""

    kind = ""
    limits = identifiers.MYSQL

    def __init__(self, credentials: Mapping[str, str], reach: Reach):
        self._credentials = dict(credentials)
        self._reach = reach
        secret = [field.name for field in KINDS[self.kind].fields if field.secret]
        self._secrets = secrets_of(credentials, secret)
        self._shown_table = credentials.get("table", "")
        self._shown_key = credentials.get("key_column", "id")

    async def test(self) -> str:
        return await self._run(self._test)

    async def pages(self) -> AsyncIterator[list[Record]]:
        table, key = await self._run(self._names)
        conn = await self._run(self._open)
        try:
            last: Any = None
            while True:
                page, last = await self._run(functools.partial(self._page, conn, table, key, last))
                if page:
                    yield page
                if len(page) < PAGE_ROWS:
                    return
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(_close_quietly, conn)

    async def run_statement(
        self,
        text: str,
        params: dict[str, str],
        *,
        writes: bool,
        max_rows: int,
        dry_run: bool = False,
        kept: Lease | None = None,
    ) -> tuple[list[Record], int | None]:
        """One statement of a live action with its bound ``params``: a read in a read-only
        transaction, at most ``max_rows`` rows; a write committed, with the rows it
        changed, or with ``dry_run`` rolled back, with the rows it would have changed.
        The server's statement timeout applies to all. A failure of the statement itself
        says what kind of error it was (``_kind_of``: an SQLSTATE's condition name, a
        MySQL error's name), never the server's message, which may quote the customer's
        values; a failure to connect keeps the server's words (no value was sent yet).

        ``kept``: the source's kept connections (``ragio.db.source_connections``): one
        is taken when there is one, else one opened, and it is given back after a
        statement that ended well. A kept one is checked by the transaction's first
        round trip (which sets the statement timeout again); when that finds it broken
        (its server restarted, the connection cut), it is closed and the statement runs
        on a new connection: nothing of it had been sent."""
        statement = functools.partial(
            self._statement, text, params, writes, max_rows, dry_run, kept
        )
        return await self._run(statement)

    def _statement(
        self,
        text: str,
        params: dict[str, str],
        writes: bool,
        max_rows: int,
        dry_run: bool,
        kept: Lease | None,
    ) -> tuple[list[Record], int | None]:
        conn = kept.take() if kept is not None else None
        if conn is not None and not self._usable(conn):
            _close_quietly(conn)
            conn = None
        reused = conn is not None
        if conn is None:
            conn = self._open()
        done = False
        try:
            try:
                self._begin(conn, writes=writes)
            except Exception as failed:
                if not reused or not self._gone(conn, failed):
                    raise
                _close_quietly(conn)  # its server restarted, or it was cut: a new one
                conn = self._open()
                self._begin(conn, writes=writes)
            try:
                if not writes:
                    rows = self._rows(conn, text, params, max_rows)  # params: a dict, always:
                    _rollback_quietly(conn)  # %% is then read as %
                    done = True
                    return [json_shaped(row) for row in rows], None
                with conn.cursor() as cursor:
                    cursor.execute(text, params)
                    affected = cursor.rowcount
                    if dry_run:
                        conn.rollback()
                    else:
                        conn.commit()
                    done = True
                    return [], affected
            except Exception as failed:
                kind = None if isinstance(failed, SourceFailed) else self._kind_of(failed)
                if kind is None:
                    raise
                raise SourceFailed(f"the statement failed: {kind}") from None
        except BaseException:
            _rollback_quietly(conn)
            raise
        finally:
            if done and kept is not None and self._usable(conn):
                kept.give(conn)
            else:
                _close_quietly(conn)

    def _usable(self, conn: Any) -> bool:
        """Whether ``conn`` is open with no transaction in progress, as far as can be
        told without asking its server."""
        raise NotImplementedError

    def _gone(self, conn: Any, failed: Exception) -> bool:
        """Whether ``failed`` says the connection is lost (not that the server refused)."""
        raise NotImplementedError

    def _begin(self, conn: Any, *, writes: bool) -> None:
        """Open the statement's transaction: read-only unless it ``writes``."""
        raise NotImplementedError

    def _rows(self, conn: Any, statement: Any, params: Any, limit: int) -> list[dict[str, Any]]:
        """At most ``limit`` rows of ``statement``, read one by one as the server sends
        them and counted (``Capped``): more than ``Reach.max_response_bytes`` is a
        failure, and nothing more is read."""
        raise NotImplementedError

    def _cap(self) -> Capped:
        return Capped(self._reach.max_response_bytes)

    def _test(self) -> str:
        raise NotImplementedError

    def _open(self) -> Any:
        """A connection for a whole read (in a worker thread)."""
        raise NotImplementedError

    def _page(
        self, conn: Any, table: identifiers.TableName, key: str, last: Any
    ) -> tuple[list[Record], Any]:
        """The page after the key ``last`` (None: the first), and its last key."""
        rows = self._select(conn, table, key, limit=PAGE_ROWS, after=last)
        if not rows:
            return [], last
        return [json_shaped(row) for row in rows], rows[-1][key]

    def _select(
        self, conn: Any, table: identifiers.TableName, key: str, *, limit: int, after: Any
    ) -> list[dict[str, Any]]:
        """In one read-only transaction, the rows after the key ``after`` (None: from the
        first), by the key; ``limit`` 0: none, which checks that the table and its key
        column exist and may be read."""
        raise NotImplementedError

    def _names(self) -> tuple[identifiers.TableName, str]:
        table = identifiers.split_table(self._shown_table, self.limits)
        key = identifiers.column_name(self._shown_key, self.limits)
        return table, key

    def _timeout_ms(self) -> int:
        return max(1, round(self._reach.timeout * 1000))

    async def _run(self, call: Callable[[], T]) -> T:
        """``call`` in a worker thread; its failure as ``SourceFailed`` with the source's
        reason, secrets masked."""
        try:
            return await trio.to_thread.run_sync(
                call, abandon_on_cancel=self._reach.abandon_on_cancel
            )
        except (BadAddress, BadIdentifier) as bad:
            raise SourceFailed(without_secrets(bad.reason, self._secrets)) from None
        except Exception as failed:
            reason = self._reason(failed)
            if reason is None:
                raise
            raise SourceFailed(without_secrets(reason, self._secrets)) from None

    def _reason(self, failed: Exception) -> str | None:
        raise NotImplementedError

    def _kind_of(self, failed: Exception) -> str | None:
        """What kind of error a statement's ``failed`` is, in words that quote no value;
        None when it is not the driver's."""
        raise NotImplementedError

    def _missing_table(self) -> str:
        return f"table {self._shown_table} does not exist"

    def _missing_key(self) -> str:
        return f"key column {self._shown_key} does not exist in table {self._shown_table}"


class MySQLTable(_Table):
    kind = "mysql"
    limits = identifiers.MYSQL

    def _open(self) -> Any:
        return self._connect()[0]

    def _connect(self) -> tuple[pymysql.connections.Connection[Any], str]:
        address = address_of(self._credentials, ("mysql", "mariadb", "mysql+pymysql"))
        field = "url" if self._credentials.get("url") else "host"
        how, where = pinned(field, address.host, address.port, self._reach)
        timeout = self._reach.timeout
        socket_timeout = timeout + SOCKET_MARGIN
        settings: dict[str, Any] = {
            "port": address.port,
            "user": address.user,
            "password": address.password,
            "database": address.database,
            "connect_timeout": timeout,
            "read_timeout": socket_timeout,
            "write_timeout": socket_timeout,
            "charset": "utf8mb4",
            "cursorclass": pymysql.cursors.DictCursor,
            "autocommit": True,
        }
        conn = _connect_first(
            [{"unix_socket": where[0]}] if how == "socket" else [{"host": a} for a in where],
            settings,
        )
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT VERSION() AS version")
                version = str(cursor.fetchone()["version"])
                # the server stops a statement that runs longer (MariaDB counts seconds,
                # MySQL milliseconds, and only for SELECT)
                if "mariadb" in version.lower():
                    cursor.execute("SET SESSION max_statement_time = %s", (self._reach.timeout,))
                else:
                    cursor.execute("SET SESSION max_execution_time = %s", (self._timeout_ms(),))
            conn.autocommit(False)
        except BaseException:
            _close_quietly(conn)
            raise
        return conn, version

    def _begin(self, conn: Any, *, writes: bool) -> None:
        with conn.cursor() as cursor:
            cursor.execute("START TRANSACTION" if writes else "START TRANSACTION READ ONLY")

    def _usable(self, conn: Any) -> bool:
        in_transaction = conn.server_status & SERVER_STATUS.SERVER_STATUS_IN_TRANS
        return bool(conn.open) and not in_transaction

    def _gone(self, conn: Any, failed: Exception) -> bool:
        if isinstance(failed, pymysql.err.OperationalError | pymysql.err.InterfaceError):
            return not conn.open or _code_and_message(failed)[0] in _LOST
        return isinstance(failed, OSError | EOFError)

    def _test(self) -> str:
        table, key = self._names()
        conn, version = self._connect()
        try:
            self._select(conn, table, key, limit=0, after=None)
        finally:
            _close_quietly(conn)
        return f"{server_name(version, 'MySQL')}: table {self._shown_table} readable"

    def _select(
        self, conn: Any, table: identifiers.TableName, key: str, *, limit: int, after: Any
    ) -> list[dict[str, Any]]:
        """One read-only transaction: the rows after ``after`` by the key (``limit`` 0: the
        key column of none, which checks that both exist and may be read)."""
        # PyMySQL formats the bound values into the statement with Python's % (given a
        # tuple, even an empty one): so a % in a quoted name is written %%
        name = ".".join(identifiers.mysql_quoted(part) for part in table.parts())
        name, column = name.replace("%", "%%"), identifiers.mysql_quoted(key).replace("%", "%%")
        parameters: tuple[Any, ...]
        if limit == 0:
            statement, parameters = f"SELECT {column} FROM {name} LIMIT 0", ()
        elif after is None:
            statement = (
                f"SELECT * FROM {name} WHERE {column} IS NOT NULL ORDER BY {column} LIMIT %s"
            )
            parameters = (limit,)
        else:
            statement = f"SELECT * FROM {name} WHERE {column} > %s ORDER BY {column} LIMIT %s"
            parameters = (after, limit)
        with conn.cursor() as cursor:
            cursor.execute("START TRANSACTION READ ONLY")
        try:
            rows = self._rows(conn, statement, parameters, max(1, limit))
        except BaseException:
            _rollback_quietly(conn)
            raise
        conn.rollback()
        return rows

    def _rows(self, conn: Any, statement: Any, params: Any, limit: int) -> list[dict[str, Any]]:
        # an unbuffered cursor: the rows come as they are read, not all at once
        cap = self._cap()
        rows: list[dict[str, Any]] = []
        cursor = conn.cursor(pymysql.cursors.SSDictCursor)
        try:
            cursor.execute(statement, params)
            for row in cursor:
                if len(rows) == limit:  # more than wanted: the rest is left unread
                    _drop(conn, cursor)
                    return rows
                cap.add(size_of(row))
                rows.append(row)
            cursor.close()  # every row read
        except BaseException:
            _drop(conn, cursor)
            raise
        return rows

    def _reason(self, failed: Exception) -> str | None:
        if isinstance(failed, pymysql.err.MySQLError):
            code, message = _code_and_message(failed)
            if code == _NO_TABLE:
                return self._missing_table()
            if code == _NO_COLUMN and f"'{self._names()[1]}'" in message:
                return self._missing_key()
            if code == _NO_DATABASE:
                return f"database does not exist: {message}"
            return message
        if isinstance(failed, OSError | EOFError):
            return str(failed) or type(failed).__name__
        return None

    def _kind_of(self, failed: Exception) -> str | None:
        if isinstance(failed, pymysql.err.MySQLError):
            code = _code_and_message(failed)[0]
            if code is None:
                return type(failed).__name__
            name = MYSQL_ERRORS.get(code)
            return f"MySQL error {code} ({name})" if name else f"MySQL error {code}"
        if isinstance(failed, OSError | EOFError):
            return type(failed).__name__
        return None


def _mysql_names() -> dict[int, str]:
    """MySQL's and MariaDB's error numbers and their names (PyMySQL's constants)."""
    names: dict[int, str] = {}
    for module, prefix in ((CR, ""), (ER, "ER_")):
        for name in dir(module):
            value = getattr(module, name)
            if name.isupper() and isinstance(value, int):
                names.setdefault(value, name if name.startswith(("CR_", "ER_")) else prefix + name)
    return names


MYSQL_ERRORS = _mysql_names()


def _connect_first(
    places: list[dict[str, str]], settings: dict[str, Any]
) -> pymysql.connections.Connection[Any]:
    """A connection to the first of ``places`` (judged addresses) that answers."""
    connect: Any = pymysql.connect  # its overloads cannot be told from the settings' types
    for n, place in enumerate(places):
        try:
            conn: pymysql.connections.Connection[Any] = connect(**place, **settings)
            return conn
        except pymysql.err.OperationalError as failed:
            if n == len(places) - 1 or _code_and_message(failed)[0] != _CANNOT_CONNECT:
                raise
    raise AssertionError("no place to connect to")  # judged: never empty


def _code_and_message(failed: pymysql.err.MySQLError) -> tuple[int | None, str]:
    if len(failed.args) >= 2 and isinstance(failed.args[0], int):
        return failed.args[0], str(failed.args[1])
    return None, str(failed) or type(failed).__name__


def _close_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):  # already closed, or the server gone
        conn.close()


def _drop(conn: Any, cursor: Any) -> None:
    """Leave the rest of an unbuffered result unread: the connection is closed (MySQL has
    no way to stop sending a result but that); the caller's rollback and close are then
    quiet. PyMySQL would read the rest when the cursor or its result is closed or
    collected: both are told the result is over (``unbuffered_active``, its own flag)."""
    _close_quietly(conn)
    result = getattr(cursor, "_result", None)
    if result is not None:
        result.unbuffered_active = False
    cursor.connection = None


def _rollback_quietly(conn: Any) -> None:
    """End the transaction after a failure (whose reason is the one to tell)."""
    with contextlib.suppress(Exception):
        conn.rollback()


class PostgreSQLTable(_Table):
    kind = "postgresql"
    limits = identifiers.POSTGRESQL

    def _open(self) -> Any:
        return self._connect()

    def _connect(self) -> psycopg.Connection[dict[str, Any]]:
        seconds = max(2, round(self._reach.timeout))  # libpq counts whole seconds, at least 2
        options: dict[str, Any] = {
            "connect_timeout": seconds,
            "row_factory": dict_row,
            # libpq has no read timeout: TCP keepalives end a wait on a host that is gone
            # (an answering server's slow statement is the statement_timeout's)
            "keepalives": 1,
            "keepalives_idle": seconds,
            "keepalives_interval": 1,
            "keepalives_count": 3,
        }
        url = self._credentials.get("url")
        if url:
            # libpq reads the URL itself, its options (sslmode, a socket's host) included
            if not url.startswith(("postgresql://", "postgres://")):
                raise BadAddress("url must begin with postgresql://")
            params: dict[str, Any] = conninfo_to_dict(url)
            for option in ("service", "servicefile", "passfile"):
                if option in params:
                    raise BadAddress(
                        f"url option {option} is not supported here: it reads a file of "
                        "the service's host; give host, port and password instead"
                    )
            field = "url"
        else:
            address = address_of(self._credentials, ("postgresql", "postgres"))
            params = {
                "host": address.host,
                "port": address.port,
                "user": address.user,
                "password": address.password,
                "dbname": address.database,
            }
            field = "host"
        params.update(self._pinned(params, field))
        conn = psycopg.connect(**{**params, **options}, autocommit=True)
        try:
            conn.execute(
                "SELECT set_config('statement_timeout', %s, false)", (f"{self._timeout_ms()}ms",)
            )
            conn.autocommit = False
            conn.read_only = True
        except BaseException:
            conn.close()
            raise
        return conn

    def _pinned(self, params: dict[str, Any], field: str) -> dict[str, str]:
        """libpq's ``host``, ``hostaddr`` and ``port`` lists for ``params``: each host judged
        (``ragio.integrations.connectors.addresses``), a name given as every address it
        resolved to (``hostaddr``: libpq connects there and keeps the name for TLS), a
        Unix socket's directory as itself when allowed; ``BadAddress`` with no host."""
        hosts = str(params.get("host") or "").split(",")
        given = [a for a in str(params.get("hostaddr") or "").split(",")]
        if not any(hosts) and any(given):
            hosts = [""] * len(given)
        if not all(hosts) and not (len(given) == len(hosts) and all(given)):
            raise BadAddress(f"{field} must name the server's host (libpq's default is not used)")
        ports = [p.strip() for p in str(params.get("port") or "").split(",") if p.strip()]
        host_list: list[str] = []
        address_list: list[str] = []
        port_list: list[str] = []
        for n, host in enumerate(hosts):
            text = ports[n] if len(ports) > 1 and n < len(ports) else (ports or ["5432"])[0]
            if not text.isdigit() or not 0 < int(text) < 65536:
                raise BadAddress(f"{field} has a port that is not a number from 1 to 65535")
            port = int(text)
            address = given[n] if len(given) == len(hosts) else ""
            if address:
                found = ("tcp", judged(field, address, port, self._reach))
            else:
                found = pinned(field, host, port, self._reach)
            how, where = found
            for place in where:
                host_list.append(host or place)
                address_list.append(place if how == "tcp" else "")
                port_list.append(str(port))
        pins = {"host": ",".join(host_list), "port": ",".join(port_list)}
        if any(address_list):
            pins["hostaddr"] = ",".join(address_list)
        else:
            params.pop("hostaddr", None)
        return pins

    def _begin(self, conn: Any, *, writes: bool) -> None:
        conn.read_only = not writes  # set before the transaction begins
        # the statement timeout again, for this transaction: a kept connection keeps it
        # whatever an earlier statement did to the session
        conn.execute(
            "SELECT set_config('statement_timeout', %s, true)", (f"{self._timeout_ms()}ms",)
        )

    def _usable(self, conn: Any) -> bool:
        idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        return not conn.closed and not conn.broken and idle

    def _gone(self, conn: Any, failed: Exception) -> bool:
        lost = isinstance(failed, psycopg.OperationalError | OSError)
        return bool(conn.closed or conn.broken or lost)

    def _test(self) -> str:
        table, key = self._names()
        with self._connect() as conn:
            version = conn.execute("SHOW server_version").fetchone()
            self._select(conn, table, key, limit=0, after=None)
        number = str((version or {}).get("server_version", "")).split(" ")[0]
        return f"PostgreSQL {number}: table {self._shown_table} readable"

    def _select(
        self, conn: Any, table: identifiers.TableName, key: str, *, limit: int, after: Any
    ) -> list[dict[str, Any]]:
        # psycopg reads %s placeholders in the composed text, the names' too (given values,
        # even none): a % in a name is written %%, which it reads as one %
        parts = [part.replace("%", "%%") for part in table.parts()]
        names = {"table": sql.Identifier(*parts), "key": sql.Identifier(key.replace("%", "%%"))}
        if limit == 0:
            query = sql.SQL("SELECT {key} FROM {table} LIMIT 0").format(**names)
            parameters: tuple[Any, ...] = ()
        elif after is None:
            query = sql.SQL(
                "SELECT * FROM {table} WHERE {key} IS NOT NULL ORDER BY {key} LIMIT %s"
            ).format(**names)
            parameters = (limit,)
        else:
            query = sql.SQL(
                "SELECT * FROM {table} WHERE {key} > %s ORDER BY {key} LIMIT %s"
            ).format(**names)
            parameters = (after, limit)
        try:
            rows = self._rows(conn, query, parameters, max(1, limit))
        except BaseException:
            _rollback_quietly(conn)
            raise
        conn.rollback()
        return rows

    def _rows(self, conn: Any, statement: Any, params: Any, limit: int) -> list[dict[str, Any]]:
        # libpq's single-row mode: the rows come as they are read; leaving early cancels
        # the statement rather than reading the rest
        cap = self._cap()
        rows: list[dict[str, Any]] = []
        with conn.cursor() as cursor, contextlib.closing(cursor.stream(statement, params)) as rs:
            for row in rs:
                cap.add(size_of(row))
                rows.append(row)
                if len(rows) >= limit:
                    break
        return rows

    def _reason(self, failed: Exception) -> str | None:
        if isinstance(failed, psycopg.errors.UndefinedTable):
            return self._missing_table()
        if isinstance(failed, psycopg.errors.InvalidSchemaName):
            return self._missing_table() + " (no such schema)"
        if isinstance(failed, psycopg.errors.UndefinedColumn):
            return self._missing_key()
        if isinstance(failed, psycopg.errors.QueryCanceled):
            return f"{_primary(failed)} (after {self._reach.timeout:g} s)"
        if isinstance(failed, psycopg.Error):
            return _primary(failed)
        if isinstance(failed, OSError):
            return str(failed) or type(failed).__name__
        return None

    def _kind_of(self, failed: Exception) -> str | None:
        if isinstance(failed, psycopg.errors.QueryCanceled):
            return f"{_condition(failed)} (after {self._reach.timeout:g} s)"
        if isinstance(failed, psycopg.Error):
            return _condition(failed)
        if isinstance(failed, OSError):
            return type(failed).__name__
        return None


def _condition(failed: psycopg.Error) -> str:
    """The SQLSTATE's condition name (``invalid_text_representation``), from psycopg's
    class of it, and the names (never values) the server gave: column, table,
    constraint, type."""
    condition = re.sub(r"(?<!^)(?=[A-Z])", "_", type(failed).__name__).lower()
    said = f"{condition} (SQLSTATE {failed.sqlstate})" if failed.sqlstate else condition
    diag = failed.diag
    names = [
        f"{what} {name}"
        for what, name in (
            ("column", diag.column_name),
            ("table", diag.table_name),
            ("constraint", diag.constraint_name),
            ("type", diag.datatype_name),
        )
        if name
    ]
    return ", ".join([said, *names])


def _primary(failed: psycopg.Error) -> str:
    """The server's message without its LINE/context lines, or the driver's."""
    diag = getattr(failed, "diag", None)
    primary = diag.message_primary if diag is not None else None
    # a connection failure's message has a hint on its next line: the first says it
    return primary or (str(failed).splitlines() or [type(failed).__name__])[0]
