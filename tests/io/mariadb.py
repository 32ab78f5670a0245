"""Debian's MariaDB as a process of our own: its own data folder, socket and port under
``base``, stopped on the way out (the database data sources' tests and
scripts/bench_sync.py)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pymysql

from tests.io.processes import free_port

SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])


class NotInstalled(Exception):
    pass


@attrs.frozen
class MariaDB:
    port: int
    socket: str

    def admin(self) -> pymysql.connections.Connection[Any]:
        return pymysql.connect(unix_socket=self.socket, user="root", autocommit=True)


@contextmanager
def running_mariadb(base: Path) -> Iterator[MariaDB]:
    """A fresh server (root over its socket, no password), until the block ends. It runs
    unprivileged: as whoever runs the tests, or, when that is root, as the ``mysql``
    system user Debian's package made, in a folder of its own outside root's."""
    server = shutil.which("mariadbd", path=SBIN)
    install = shutil.which("mariadb-install-db", path=SBIN)
    if server is None or install is None:
        raise NotInstalled("mariadb-server is not installed: scripts/dev.py test installs it")
    with _server_folder(base) as (folder, user):
        yield from _serve(server, install, folder, user)


@contextmanager
def _server_folder(base: Path) -> Iterator[tuple[Path, list[str]]]:
    """Where the server keeps its files, and the ``--user`` it runs as (none: the caller)."""
    if os.geteuid() != 0:
        yield base, []
        return
    try:
        account = pwd.getpwnam("mysql")
    except KeyError:  # no such user: the server runs as root, which it must be told
        yield base, ["--user=root"]
        return
    # root's pytest folders are closed to other users: one of its own, owned by mysql
    folder = Path(tempfile.mkdtemp(prefix="ragchat-mariadb-"))
    try:
        os.chown(folder, account.pw_uid, account.pw_gid)
        yield folder, ["--user=mysql"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _serve(server: str, install: str, base: Path, user: list[str]) -> Iterator[MariaDB]:
    data, sock, port = base / "data", str(base / "mysqld.sock"), free_port()
    subprocess.run(
        [install, "--no-defaults", f"--datadir={data}", "--auth-root-authentication-method=normal",
         "--skip-test-db", *user],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    process = subprocess.Popen(
        [server, "--no-defaults", f"--datadir={data}", f"--socket={sock}", f"--port={port}",
         "--bind-address=127.0.0.1", "--skip-name-resolve", f"--pid-file={base / 'pid'}",
         f"--log-error={base / 'error.log'}", "--innodb-buffer-pool-size=16M",
         "--skip-log-bin", *user],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    maria = MariaDB(port, sock)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                maria.admin().close()
                break
            except pymysql.err.OperationalError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (base / "error.log").read_text(errors="replace")
                    raise AssertionError(f"mariadbd did not start:\n{log[-3000:]}") from None
                time.sleep(0.1)
        yield maria
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
