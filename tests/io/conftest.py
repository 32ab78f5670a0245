"""Real parts for tests/io: one embedded PostgreSQL per session, a fresh database per test,
the service opened on it, and the HTTP app served by Hypercorn on a free port."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from ragio.db.embedded import EmbeddedPostgres
from ragio.http.app import create_app
from ragio.service import Service, open_service
from tests.conftest import make_settings


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of the session's embedded PostgreSQL (its own ``ragchat`` database)."""
    server = EmbeddedPostgres(tmp_path_factory.mktemp("pg"))
    url = server.start()
    yield url
    server.stop()


@pytest.fixture
def database_url(postgres_url: str) -> Iterator[str]:
    """A new, empty database for one test, dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = postgres_url.replace("/ragchat?", f"/{name}?")
    yield url
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    """Override in a test module (or parametrize) to change the service's settings."""
    return {}


@pytest.fixture
async def service(
    database_url: str, settings_overrides: dict[str, Any], tmp_path: Path
) -> AsyncIterator[Service]:
    settings = make_settings(
        database_url=database_url, data_dir=tmp_path / "data", **settings_overrides
    )
    async with open_service(settings) as svc:
        yield svc


async def serve_app(app: Any, nursery: trio.Nursery) -> tuple[str, trio.Event]:
    """Serve ``app`` on a free loopback port; returns its base URL and an event that stops it."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    binds = await nursery.start(
        lambda task_status: serve(app, config, shutdown_trigger=stop.wait, task_status=task_status)
    )
    return binds[0], stop


@pytest.fixture
async def api(service: Service, nursery: trio.Nursery) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to the real app served by Hypercorn."""
    base_url, stop = await serve_app(create_app(service), nursery)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client
    stop.set()
