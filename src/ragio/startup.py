"""Opening the service: the database (embedded or DATABASE_URL) migrated and shaped for
the active embedder, the providers, and the handlers of every effect; all closed as one
on the way out. The entry points (``ragio.cli``, ``ragio.server``, voiceio) go through it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from ragcore.knowledge.embedding_space import NeedsReindex, choose_embedder
from ragcore.knowledge.graph_rules import ModelExtraction
from ragcore.settings import Settings
from ragcore.usage import Caps
from ragio.chat.policy import answers_with_model
from ragio.db.embedded import EmbeddedPostgres, embedded_by_supervisor
from ragio.db.embedding_space import EmbeddingSpaceMismatch, prepare_space, stored_space
from ragio.db.migrations import apply_migrations
from ragio.db.pool import Database
from ragio.db.source_connections import SourceConnections
from ragio.employees.store import follow_built_in_defaults
from ragio.graph.service import build_graph, check_graph_driver
from ragio.language import LanguageDetection
from ragio.providers import aclose_all, build_answerers, build_embedder
from ragio.registry import HANDLERS
from ragio.runner import run
from ragio.service import Service, outbound_client

log = logging.getLogger(__name__)


@asynccontextmanager
async def open_database(settings: Settings) -> AsyncIterator[Database]:
    """DATABASE_URL, or the embedded server under DATA_DIR; closed (and left) on the way out."""
    embedded = None if settings.database_url else EmbeddedPostgres(Path(settings.data_dir))
    try:
        if embedded is not None:
            url = await trio.to_thread.run_sync(embedded.start)
        else:
            url = settings.database_url
        # a supervisor's embedded server (ragio.supervisor) is the embedded one all the same
        database = Database(url, embedded=embedded is not None or embedded_by_supervisor())
        await database.open()
        try:
            yield database
        finally:
            with trio.CancelScope(shield=True):
                await database.close()
    finally:
        if embedded is not None:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(embedded.stop)


@asynccontextmanager
async def open_service(settings: Settings) -> AsyncIterator[Service]:
    """The database migrated and shaped for the active embedder, and the providers;
    the providers' connections are closed on the way out. A store the settings choose and
    this install cannot use (Neo4j without the graph extra) stops it before anything
    starts (``GraphDriverMissing``)."""
    check_graph_driver(settings)
    # An explicit EMBEDDING_PROVIDER it cannot run stops it before the database starts;
    # unset, the stored chunks' space may decide (ragcore.knowledge.embedding_space).
    embedder = build_embedder(settings) if settings.embedding_provider else None
    answerer = build_answerers(settings)
    outbound = outbound_client()
    try:
        async with open_database(settings) as database:
            await database.run(apply_migrations)
            choice = choose_embedder(settings, *await database.run(stored_space))
            if isinstance(choice, NeedsReindex):
                raise EmbeddingSpaceMismatch(choice.message)
            if choice.note:
                log.info("%s", choice.note)
            if embedder is None:
                embedder = build_embedder(settings, choice.provider)
            await database.run(prepare_space, embedder.space)
            updated = await database.run(follow_built_in_defaults)
            if updated:
                log.info("built-in roles brought up to this version: %s", ", ".join(updated))
            if settings.actions_allow_private_targets:
                log.warning(
                    "ACTIONS_ALLOW_PRIVATE_TARGETS=true: webhook and chat-ops actions may "
                    "reach loopback and private addresses. For local testing only: turn it off."
                )
            graph = build_graph(settings, database)
            source_connections = SourceConnections()
            try:
                service = Service(
                    settings,
                    database,
                    embedder,
                    answerer,
                    LanguageDetection(settings.language_detection_supported_languages),
                    HANDLERS,
                    outbound,
                    graph=graph,
                    source_connections=source_connections,
                )
                if settings.graph_model_extraction and answers_with_model(service):
                    graph.extract_with_model(
                        lambda pipeline: run(pipeline, service),
                        ModelExtraction(Caps.from_settings(settings), settings.usage_ledger),
                    )
                yield service
                with trio.CancelScope(shield=True):  # the last spans sent
                    await trio.to_thread.run_sync(service.tracing.shutdown)
            finally:
                with trio.CancelScope(shield=True):
                    await graph.close()
                    await trio.to_thread.run_sync(source_connections.close)
    finally:
        with trio.CancelScope(shield=True):
            await outbound.aclose()
        await aclose_all(embedder, answerer)
