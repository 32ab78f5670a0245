"""Migrations under the advisory lock: processes starting together take turns."""

from __future__ import annotations

import subprocess

import psycopg

from ragio.db.migrations import migration_files
from tests.io.processes import RAGCHAT, clean_environ


def test_two_processes_migrating_at_once_do_not_collide(tmp_path, empty_database_url):
    database_url = empty_database_url
    env = clean_environ(database_url=database_url)
    processes = [
        subprocess.Popen(
            [*RAGCHAT, "migrate"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    with psycopg.connect(database_url) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert sorted(versions) == [version for version, _, _ in migration_files()]
    applied, waited = sorted(out.strip() for out, _ in outputs)
    assert applied == "applied: " + ", ".join(f"{v:03d}_{n}" for v, n, _ in migration_files())
    assert waited == "the database is up to date"
