"""Real parts for tests/io: one embedded PostgreSQL per session, a fresh database per test,
the service opened on it, and the HTTP app and fake providers served by Hypercorn on free
ports; and what the provider tests send, shared so they state one contract alike."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from ragcore.generation import Generate, Prompt
from ragio.db.embedded import EmbeddedPostgres
from ragio.db.migrations import apply_migrations
from ragio.http.app import create_app
from ragio.server import hypercorn_config
from ragio.service import Service
from ragio.startup import open_service
from tests.conftest import make_settings
from tests.io.fakes.action_receivers import CertAuthority, serve_https
from tests.io.fakes.asgi import FakeServer
from tests.io.fakes.clock import FakeClock
from tests.io.fakes.workflow_receiver import WorkflowReceiver
from tests.io.live import maria, owner_postgres, shop  # noqa: F401 (fixtures)

F = TypeVar("F", bound=FakeServer)
C = TypeVar("C")


@pytest.fixture(scope="session", autouse=True)
def local_embedder_ready() -> None:
    """The local MiniLM loaded in this process, its faster graph built (once per machine:
    kept under the checkout's data/models), before any test runs: otherwise its build,
    in the background of whichever test first embeds, runs beside later ones (and one
    measures this process's idle CPU)."""
    from ragio.providers.local import MINILM, load_model

    root = Path(__file__).resolve().parents[2]
    load_model(MINILM, root / "data" / "models").wait_for_rewrite()


@pytest.fixture(scope="session")
def embedded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPostgres]:
    """The session's embedded PostgreSQL, which makes and drops the tests' databases (as its
    superuser; the service connects as its own role, as in production)."""
    server = EmbeddedPostgres(tmp_path_factory.mktemp("pg"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_url(embedded_server: EmbeddedPostgres) -> str:
    """URL of the session's ``ragchat`` database, as the service's role."""
    return embedded_server.url()


@pytest.fixture(scope="session")
def migrated_template(embedded_server: EmbeddedPostgres) -> str:
    """A database with every migration applied (by the service's role, as at start-up),
    copied for each test (a copy costs half of migrating, over a thousand times a run)."""
    name = f"template_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(embedded_server.create_database(name), autocommit=True) as conn:
        apply_migrations(conn)
    return name


@contextmanager
def new_database(server: EmbeddedPostgres, template: str | None = None) -> Iterator[str]:
    """A new database owned by the service's role (a copy of ``template``); its URL."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    yield server.create_database(name, template)
    server.drop_database(name)


@pytest.fixture
def database_url(embedded_server: EmbeddedPostgres, migrated_template: str) -> Iterator[str]:
    """A new database for one test, migrated, dropped afterwards."""
    with new_database(embedded_server, migrated_template) as url:
        yield url


@pytest.fixture
def empty_database_url(embedded_server: EmbeddedPostgres) -> Iterator[str]:
    """A new database for one test, with nothing in it but the ``vector`` extension (as the
    embedded server's own is made), dropped afterwards."""
    with new_database(embedded_server) as url:
        yield url


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


@pytest.fixture
def fake_clock(service: Service) -> FakeClock:
    """The service's clock, stopped at the present moment: the test moves time with
    ``advance`` (the service reads the time only through ``service.clock``)."""
    service.clock = clock = FakeClock()
    return clock


async def serve_app(
    app: Any, nursery: trio.Nursery, config: Config | None = None
) -> tuple[str, trio.Event]:
    """Serve ``app`` on a free loopback port, with ``config`` (Hypercorn's defaults when
    None); returns its base URL and an event that stops it."""
    if config is None:
        config = Config()
        config.accesslog = None
    config.bind = ["127.0.0.1:0"]
    stop = trio.Event()
    binds = await nursery.start(
        lambda task_status: serve(app, config, shutdown_trigger=stop.wait, task_status=task_status)
    )
    return binds[0], stop


async def serve_service(
    svc: Service, nursery: trio.Nursery, config: Config | None = None
) -> tuple[str, trio.Event]:
    """The service's app served as ``ragchat serve`` serves it: with the production
    Hypercorn config (``config``, when given, is one made by ``hypercorn_config``), on a free
    loopback port."""
    config = config or hypercorn_config(svc.settings)
    return await serve_app(create_app(svc), nursery, config)


@asynccontextmanager
async def serving(fake: F, nursery: trio.Nursery) -> AsyncIterator[F]:
    """Serve a fake provider with its ``base_url`` set; on exit release its hanging requests
    first, or stopping the server would wait for them."""
    url, stop = await serve_app(fake, nursery)
    fake.base_url = url + fake.base_path
    try:
        yield fake
    finally:
        fake.close()
        stop.set()


@pytest.fixture
async def serve_fake(nursery: trio.Nursery) -> AsyncIterator[Callable[[F], Awaitable[F]]]:
    """``await serve_fake(FakeOpenAI(...))``: the fake, served until the test ends."""
    async with AsyncExitStack() as stack:

        async def start(fake: F) -> F:
            return await stack.enter_async_context(serving(fake, nursery))

        yield start


@pytest.fixture
async def closing() -> AsyncIterator[Callable[[C], C]]:
    """``closing(provider)``: the provider, its connections closed (``aclose()``) after the
    test, in the order they were made."""
    made: list[Any] = []

    def keep(provider: C) -> C:
        made.append(provider)
        return provider

    yield keep
    for provider in made:
        await provider.aclose()


@pytest.fixture
async def api(service: Service, nursery: trio.Nursery) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to the real app served by Hypercorn, configured as in production."""
    base_url, stop = await serve_service(service, nursery)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client
    stop.set()


# ---------------------------------------------------------------- calling a provider

# The one request the provider tests send, so their expected replies and token counts agree.
REQUEST = Generate(
    Prompt(
        system="Answer only from the numbered sources.",
        user="Sources:\n\n[1] (refunds.md)\nRefunds take 5 days.\n\nQuestion: How long?",
        question="How long?",
        sources=(),
    ),
    max_output_tokens=200,
    temperature=0.2,
)

HASTY = {"provider_timeout_seconds": 1, "max_retries": 0}  # settings: give up after one second


async def generate(answerer: Any) -> None:
    await answerer.generate(REQUEST)


async def embed(embedder: Any) -> None:
    await embedder.embed(["refunds"], "query")


async def stream(answerer: Any) -> None:
    async for _ in answerer.stream(REQUEST):
        pass


def on_openai(fake: Any, dimensions: int = 64, **settings: Any) -> dict[str, Any]:
    """Settings that put the service on a fake OpenAI server: OPENAI_API_KEY alone selects
    openai for answers and embeddings; small vectors keep the tests fast."""
    return {
        "openai_api_key": fake.api_key,
        "openai_base_url": fake.base_url,
        "embedding_dimensions": dimensions,
        **settings,
    }


# ---------------------------------------------------------------- receivers


@pytest.fixture
async def receiver(serve_fake: Callable[[Any], Awaitable[Any]]) -> WorkflowReceiver:
    """A workflow's webhook receiver on 127.0.0.1 that records every call."""
    return await serve_fake(WorkflowReceiver())


@pytest.fixture
def authority(tmp_path: Path) -> CertAuthority:
    """A test certificate authority; the service trusts it through ACTIONS_CA_BUNDLE."""
    folder = tmp_path / "ca"
    folder.mkdir()
    return CertAuthority(folder)


@pytest.fixture
async def chatops(nursery: trio.Nursery, authority: CertAuthority) -> AsyncIterator[Any]:
    """A recording https receiver on 127.0.0.1 with a certificate from ``authority``."""
    receiver = WorkflowReceiver()
    async with serve_https(receiver, nursery, authority, "127.0.0.1") as port:
        receiver.base_url = f"https://127.0.0.1:{port}"
        yield receiver
