"""The `ragchat` command."""

from __future__ import annotations

import argparse
import errno
import logging
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from ragcore import __version__
from ragcore.errors import InvalidInput
from ragcore.settings import Settings, SettingsError, bind_refusal
from ragio import logs

DESCRIPTION = """\
ragchat answers questions over your own documents, with citations.

Settings come from the environment and an optional .env file in the current
folder (see .env.example). With no provider key set, everything runs offline:
an embedded PostgreSQL under DATA_DIR, local embeddings and extractive answers."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragchat", description=DESCRIPTION, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"ragchat {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve = commands.add_parser(
        "serve",
        help="run the HTTP API on APP_BIND:APP_PORT (default 127.0.0.1:8000) in APP_WORKERS "
        "processes (default one per core), with the job worker beside them; on the embedded "
        "database with VOICEAI_API_KEY set, also the voice server on VOICE_BIND:VOICE_PORT",
    )
    serve.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="API processes on the one port (APP_WORKERS; 0: one per core, 1: one process)",
    )
    # what a supervising `serve` gives the processes it starts (ragio.supervisor)
    serve.add_argument("--listen-fds", help=argparse.SUPPRESS)
    voice = commands.add_parser(
        "voice",
        help="run the voice server alone on VOICE_BIND:VOICE_PORT (default 127.0.0.1:8765), "
        "against DATABASE_URL",
    )
    worker = commands.add_parser(
        "worker",
        help="run background jobs (large uploads, data source syncs) claimed from the "
        "database, beside any number of `serve` and `worker` processes, until SIGTERM",
    )
    for supervised in (serve, voice, worker):
        supervised.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    prepare = commands.add_parser(
        "prepare-models",
        help="build the faster local embedding graph (about 5 s of CPU) into the installation, "
        "for an image: a new process then loads it rather than building it into DATA_DIR",
    )
    prepare.add_argument(
        "--into",
        type=Path,
        default=None,
        help="build it there instead (default: the installation's share/ragchat/models)",
    )
    ingest = commands.add_parser(
        "ingest",
        help="add documents (txt, md, html, pdf, docx, csv, png, jpg, tif; folders walked) to the "
        "knowledge base",
    )
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ingest.add_argument(
        "--replace",
        action="store_true",
        help="a file whose name a stored document of other content holds replaces it (a "
        "new version); without this, such a file is reported and not stored",
    )
    crawl = commands.add_parser(
        "crawl",
        help="crawl a website into documents in the foreground, with a progress bar: a "
        "start URL (the website of that start URL is made, or crawled again) or a website's "
        "id; exit code 1 when a page failed",
    )
    crawl.add_argument("target", metavar="URL_OR_ID", help="a start URL, or a website's id")
    crawl.add_argument("--name", help="the new website's name; default: the URL's host")
    crawl.add_argument("--sitemap", action="append", default=[], help="a sitemap (repeatable)")
    crawl.add_argument("--include", action="append", default=[], help="a pattern of pages kept")
    crawl.add_argument("--exclude", action="append", default=[], help="a pattern of pages left")
    crawl.add_argument("--max-pages", type=int, help="default: 500")
    crawl.add_argument("--max-depth", type=int, help="default: 5")
    sites = commands.add_parser(
        "sites", help="the websites the chat widget may run on (docs/widget.md)"
    )
    sites_actions = sites.add_subparsers(dest="action", metavar="ACTION", required=True)
    sites_actions.add_parser(
        "list", help="list the sites: id, public id, name, enabled, allowed origins, role"
    )
    added = sites_actions.add_parser(
        "add", help="add a site; prints its public id, the embed line and its identity secret"
    )
    added.add_argument("name", metavar="NAME")
    added.add_argument(
        "--origin",
        action="append",
        default=[],
        required=True,
        help="an origin the widget may run on (https://shop.example.com); repeat for more",
    )
    added.add_argument("--role", default=None, help="the employee that answers (default: none)")
    for action, meaning in (
        ("enable", "let the widget run on a site again"),
        ("disable", "stop the widget on a site at once"),
    ):
        switched = sites_actions.add_parser(action, help=meaning)
        switched.add_argument("site", metavar="ID", type=int)
    api_keys = commands.add_parser(
        "keys", help="API keys beside SERVICE_API_KEY, with scopes and limits (docs/api.md)"
    )
    keys_actions = api_keys.add_subparsers(dest="action", metavar="ACTION", required=True)
    keys_actions.add_parser(
        "list", help="list the keys: id, name, first characters, scopes, limits, state"
    )
    made = keys_actions.add_parser("create", help="make a key; prints it, only this once")
    made.add_argument("name", metavar="NAME")
    made.add_argument(
        "--scope",
        action="append",
        default=[],
        required=True,
        help="admin, read, chat or ingest; repeat for more",
    )
    made.add_argument("--requests-per-minute", type=int, default=0, help="default: no limit")
    made.add_argument("--tokens-per-day", type=int, default=0, help="default: no limit")
    made.add_argument("--expires-in-days", type=int, default=None, help="default: never")
    revoked = keys_actions.add_parser("revoke", help="revoke a key, by id: refused at once")
    revoked.add_argument("key", metavar="ID", type=int)
    documents = commands.add_parser("documents", help="list or delete the stored documents")
    documents_actions = documents.add_subparsers(dest="action", metavar="ACTION", required=True)
    listed = documents_actions.add_parser(
        "list", help="list the documents, oldest first: id, name, chunks, type, size, added"
    )
    listed.add_argument("--query", "-q", default="", help="only names containing this (any case)")
    listed.add_argument(
        "--limit", type=int, default=None, help="show at most this many (default: all)"
    )
    delete = documents_actions.add_parser(
        "delete", help="delete a document and its chunks, by id or by name"
    )
    delete.add_argument("document", metavar="ID_OR_NAME")
    rename = documents_actions.add_parser(
        "rename", help="rename a document (by id); a name another document holds is refused"
    )
    rename.add_argument("document", metavar="ID", type=int)
    rename.add_argument("name", metavar="NEW_NAME")
    answers = commands.add_parser("answers", help="the owner's answers (docs/answers.md)")
    answers_actions = answers.add_subparsers(dest="action", metavar="ACTION", required=True)
    imported = answers_actions.add_parser(
        "import",
        help="import an FAQ, CSV (question and answer columns) or JSON; all of it or nothing",
    )
    imported.add_argument("file", metavar="FILE", type=Path)
    imported.add_argument(
        "--format", choices=("csv", "json"), default=None, help="default: from FILE's suffix"
    )
    graph = commands.add_parser("graph", help="the knowledge graph (GRAPH_ENABLED, GRAPH_URI)")
    graph_actions = graph.add_subparsers(dest="action", metavar="ACTION", required=True)
    graph_actions.add_parser(
        "rebuild",
        help="extract the entities of every document again (after DOMAIN_TERMS or the "
        "store changed) and print the counts",
    )
    graph_actions.add_parser("status", help="the graph's state and counts")
    ask = commands.add_parser("ask", help="answer a question and print its sources")
    ask.add_argument("question")
    ask.add_argument("--role", help="answer as this AI employee")
    commands.add_parser("migrate", help="apply pending database migrations and exit")
    commands.add_parser(
        "reindex",
        help="re-embed every chunk with the active embedder (after a model or dimension change)",
    )
    commands.add_parser("keygen", help="print a fresh Fernet key for ADDON_ENCRYPTION_KEY")
    commands.add_parser(
        "rekey",
        help="re-encrypt every data source's credentials with ADDON_ENCRYPTION_KEY (after a "
        "rotation; then ADDON_ENCRYPTION_KEY_PREVIOUS can be dropped)",
    )
    sync = commands.add_parser(
        "sync",
        help="sync one data source, or all, in the foreground (for cron or a Kubernetes "
        "CronJob); exit code 1 when a sync fails or stops short (a source whose sync is "
        "already running is skipped, exit code 0)",
    )
    sync.add_argument("id", nargs="?", type=int, help="the data source's id; default: all")
    telegram = commands.add_parser("telegram", help="Telegram bot setup")
    telegram_actions = telegram.add_subparsers(dest="action", metavar="ACTION", required=True)
    set_webhook = telegram_actions.add_parser(
        "set-webhook",
        help="register the webhook URL with Telegram, with TELEGRAM_WEBHOOK_SECRET as its "
        "secret_token",
    )
    set_webhook.add_argument(
        "url", nargs="?", help="https URL; default: PUBLIC_BASE_URL + /webhook/telegram"
    )
    discord = commands.add_parser("discord", help="Discord application setup")
    discord_actions = discord.add_subparsers(dest="action", metavar="ACTION", required=True)
    discord_actions.add_parser(
        "register-command",
        help="create or update the /ask slash command (DISCORD_APPLICATION_ID, "
        "DISCORD_BOT_TOKEN), with the roles on the discord channel as choices",
    )
    return parser


def main(argv: list[str] | None = None, commands: dict[str, Any] | None = None) -> int:
    """Run the command line; ``commands`` adds to or replaces ``COMMANDS`` (the voice
    service's, which this layer cannot import: ``voiceio.cli``)."""
    commands = {**COMMANDS, **(commands or {})}
    args = build_parser().parse_args(argv)
    serving = args.command in ("serve", "voice", "worker")
    logs.configure(logging.INFO if args.verbose or serving else logging.WARNING)
    if args.command == "keygen":
        from cryptography.fernet import Fernet

        print(Fernet.generate_key().decode("ascii"))
        return 0
    if args.command == "prepare-models":
        return prepare_models(args.into)
    if args.command not in commands:
        print(f"ragchat: {args.command} is run by the `ragchat` command itself", file=sys.stderr)
        return 2
    from ragio.config import read_settings

    try:
        settings = read_settings()
    except SettingsError as error:
        print(f"ragchat: {error}", file=sys.stderr)
        return 2
    logs.use_format(settings.log_format)
    if getattr(args, "workers", None) is not None:
        if not 0 <= args.workers <= 64:
            print("ragchat: --workers must be 0 (one per core) to 64", file=sys.stderr)
            return 2
        settings = attrs.evolve(settings, app_workers=args.workers)
    try:
        return trio.run(commands[args.command], settings, args)
    except KeyboardInterrupt:
        return 130
    except StartupError as error:
        print(f"ragchat: {error}", file=sys.stderr)
        return 2


def prepare_models(into: Path | None) -> int:
    """Build the rewritten MiniLM (``ragio.providers.minilm_graph``) into ``into`` (the
    installation's INSTALLED_MODELS by default); needs no settings, as in an image build."""
    from ragio.providers.local import minilm_files
    from ragio.providers.minilm_graph import INSTALLED_MODELS, prepare

    folder = into or INSTALLED_MODELS
    try:
        source, _ = minilm_files()
        path, built = prepare(source, folder)
    except Exception as error:  # noqa: BLE001 (one line naming the folder, not a traceback)
        print(
            f"ragchat: could not build the faster local model into {folder}: {error}",
            file=sys.stderr,
        )
        return 1
    print(f"{'built' if built else 'already there'}: {path}")
    return 0


class StartupError(Exception):
    """The service cannot start as configured; the message says what to change."""


def check_ports(*wanted: tuple[str, int, str]) -> None:
    """Each ``(host, port, setting)`` can be listened on, checked before anything starts
    (the database, the worker), so a port in use is one line naming it and its setting
    rather than a traceback later. Bound as the servers bind (SO_REUSEADDR: a port
    left in TIME_WAIT is free), all held at once (two servers on one port are refused
    too), then let go. Port 0 (any free one) and a host that does not resolve are
    left to the server."""
    held: list[socket.socket] = []
    try:
        for host, port, setting in wanted:
            if not port:
                continue
            try:
                addresses = socket.getaddrinfo(
                    host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
                )
            except socket.gaierror:
                continue
            for family, kind, proto, _, address in addresses:
                sock = socket.socket(family, kind, proto)
                held.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                try:
                    sock.bind(address)
                    sock.listen()
                except OSError as error:
                    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                    if error.errno == errno.EADDRINUSE:
                        raise StartupError(
                            f"port {port} is already in use ({where}, {setting}): stop what "
                            f"listens there or set {setting} to a free port"
                        ) from None
                    raise StartupError(
                        f"cannot listen on {where} ({setting}): {error.strerror or error}"
                    ) from None
    finally:
        for sock in held:
            sock.close()


async def serve_command(
    settings: Settings,
    args: argparse.Namespace,
    companions: tuple[Any, ...] = (),
    ports: tuple[tuple[str, int, str], ...] = (),
) -> int:
    """The HTTP API, and ``companions`` beside it on the same service (the voice server,
    listening on ``ports``, checked with the API's before anything starts). Started by a
    supervisor (``--listen-fds``), on the socket it bound."""
    refusal = bind_refusal(settings)
    if refusal:
        raise StartupError(refusal)
    listen_fds = _fds(getattr(args, "listen_fds", None))
    api_port = (settings.app_bind, settings.app_port, "APP_PORT")
    check_ports(*ports) if listen_fds else check_ports(api_port, *ports)
    from ragio.server import run_server

    async with startup_errors():
        await run_server(
            settings,
            companions=companions,
            listen_fds=listen_fds,
            ready_fd=getattr(args, "ready_fd", None),
        )
    return 0


async def supervise_command(
    settings: Settings, args: argparse.Namespace, voice: bool, ports: tuple[Any, ...] = ()
) -> int:
    """``serve`` as a supervisor of APP_WORKERS API processes, the job worker and (``voice``)
    the voice server, each a ``ragchat`` process of its own (ragio.supervisor)."""
    refusal = bind_refusal(settings)
    if refusal:
        raise StartupError(refusal)
    check_ports((settings.app_bind, settings.app_port, "APP_PORT"), *ports)
    from ragio.supervisor import Supervisor, ragchat_command, supervised_workers

    supervisor = Supervisor(
        settings, ragchat_command(), supervised_workers(settings), voice, verbose=args.verbose
    )
    async with startup_errors():
        return await supervisor.run()


def _fds(listed: str | None) -> tuple[int, ...]:
    return tuple(int(fd) for fd in listed.split(",")) if listed else ()


async def worker_command(settings: Settings, args: argparse.Namespace) -> int:
    """Background jobs until a stop signal; the running one has SHUTDOWN_GRACE_SECONDS,
    then it is handed back. DATA_DIR/worker.alive is touched on every pass (a probe)."""
    from ragio.http.problems import problem_for
    from ragio.jobs.worker import Worker
    from ragio.registry import JOB_KINDS
    from ragio.server import run_companions

    alive = Path(settings.data_dir) / "worker.alive"
    alive.parent.mkdir(parents=True, exist_ok=True)
    alive.unlink(missing_ok=True)  # a restarted container's old one would look alive

    async def worker(svc: Any, *, task_status: Any) -> None:
        jobs = Worker(svc, JOB_KINDS, problem_for, svc.settings.jobs_concurrency, alive_file=alive)
        if args.ready_fd is None:  # a supervising `serve` says where the service listens
            print(f"ragchat worker running jobs as {jobs.process}", flush=True)
        await jobs.run(task_status=task_status)

    async with startup_errors():
        await run_companions(settings, (worker,), ready_fd=args.ready_fd)
    return 0


async def migrate_command(settings: Settings, args: argparse.Namespace) -> int:
    from ragio.db.migrations import apply_migrations
    from ragio.startup import open_database

    async with startup_errors(), open_database(settings) as database:
        applied = await database.run(apply_migrations)
    print("applied: " + ", ".join(applied) if applied else "the database is up to date")
    return 0


async def ask_command(settings: Settings, args: argparse.Namespace) -> int:
    from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
    from ragio.employees.lookup import UnknownRole, stored_role
    from ragio.runner import run
    from ragio.startup import open_service

    if args.role is not None:
        from ragcore.employees.roles import check_role_identifier

        try:
            check_role_identifier(args.role)
        except InvalidInput as error:
            print(f"ragchat: --role {error.message}", file=sys.stderr)
            return 2
    async with startup_errors(), open_service(settings) as svc:
        try:
            # the stored role, runtime roles included, as POST /chat?role= finds it
            employee = None if args.role is None else await stored_role(svc.database, args.role)
            answer = await run(
                answer_question(
                    ChatRequest(args.question, args.role, employee),
                    ChatPolicy.from_settings(settings),
                ),
                svc,
            )
        except UnknownRole as error:
            print(f"ragchat: {error}", file=sys.stderr)
            return 2
        except InvalidInput as error:
            print(f"ragchat: {error}", file=sys.stderr)
            return 2
    print(answer.answer)
    if answer.citations:
        print("\nSources:")
        for c in answer.citations:
            print(f"  [{c.number}] {c.document_name} (chunk {c.chunk_id}): {c.snippet}")
    return 0


async def ingest_command(settings: Settings, args: argparse.Namespace) -> int:
    """Add files (folders walked) with a progress bar: files, chunks, rates and time left.

    A file that cannot be added is reported with the reason and the rest go on (those
    added stay), and the exit code is 1; an unexpected error (the embedding provider
    refusing, say) stops the run, and the summary still says what was added before it.
    A folder with no file of a supported type is a warning on stderr; a run that found
    no such file at all exits 1 (a wrong path, a volume not mounted).
    """
    from tqdm import tqdm

    from ragcore.knowledge.documents import supported_formats
    from ragio.knowledge.ingest import ingest_paths
    from ragio.startup import open_service

    async with startup_errors(), open_service(settings) as svc:
        with tqdm(unit="file", disable=None, dynamic_ncols=True) as progress:
            chunks = 0

            def total(files: int) -> None:
                progress.reset(total=files)

            def advance(files: int, new_chunks: int) -> None:
                nonlocal chunks
                chunks += new_chunks
                elapsed = progress.format_dict["elapsed"] or 0
                rate = f", {chunks / elapsed:.1f} chunks/s" if elapsed else ""
                progress.set_postfix_str(f"{chunks} chunks{rate}", refresh=False)
                progress.update(files)

            report = await ingest_paths(
                svc, args.paths, advance, on_total=total, replace=args.replace
            )
    replaced = f"; replaced {len(report.replaced)} older version(s)" if report.replaced else ""
    print(
        f"added {len(report.added)} file(s), {report.chunks} chunks; "
        f"skipped {len(report.duplicates)} duplicate(s); failed {len(report.failed)}{replaced}"
    )
    for path, old in report.replaced:
        print(f"  replaced: {old} by {path}")
    for path, existing in report.duplicates:
        print(f"  duplicate: {path} (same content as {existing})")
    for path, reason in report.failed:
        print(f"  failed: {path}: {reason}")
    for folder in report.empty_folders:
        print(
            f"ragchat: warning: {folder} holds no file of a supported type "
            f"({supported_formats().partition(' (')[0]}); nothing was read from it",
            file=sys.stderr,
        )
    if report.stopped:
        print(f"ragchat: {report.stopped}", file=sys.stderr)
        return 1
    found_nothing = not (report.added or report.duplicates or report.failed)
    return 1 if report.failed or found_nothing else 0


@asynccontextmanager
async def startup_errors() -> AsyncIterator[None]:
    """Turn the known ways a command fails into one clear message (and exit code 2)."""
    from psycopg_pool import PoolTimeout

    from ragio.db.embedded import PasswordsLost
    from ragio.db.embedding_space import EmbeddingSpaceMismatch
    from ragio.db.pool import DatabaseUnreachable
    from ragio.graph.service import GraphDriverMissing
    from ragio.providers import ProviderUnavailable
    from ragio.providers.failures import AnswerFailed, EmbeddingFailed

    try:
        yield
    except (
        EmbeddingSpaceMismatch,
        ProviderUnavailable,
        AnswerFailed,
        EmbeddingFailed,
        PasswordsLost,
        GraphDriverMissing,
    ) as error:
        raise StartupError(str(error)) from None
    except (DatabaseUnreachable, PoolTimeout) as error:
        raise StartupError(
            f"cannot connect to the database at DATABASE_URL ({error}); check that it is "
            "running and that the URL, user and password are right"
        ) from None


async def reindex_command(settings: Settings, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ragio.db.migrations import apply_migrations
    from ragio.knowledge.reindex import reindex
    from ragio.providers import aclose_all, build_embedder
    from ragio.startup import open_database

    async with startup_errors():
        embedder = build_embedder(settings)
        try:
            async with open_database(settings) as database:
                await database.run(apply_migrations)
                with tqdm(unit="chunk", disable=None, desc="re-embedding") as progress:
                    count = await reindex(database, embedder, progress.update)
        finally:
            await aclose_all(embedder)
    print(f"re-embedded {count} chunks with {embedder.space.describe()}")
    return 0


async def telegram_command(settings: Settings, args: argparse.Namespace) -> int:
    """``telegram set-webhook [URL]``: Telegram then calls URL with the secret."""
    from urllib.parse import urlsplit

    from ragcore.channels.required import missing_settings
    from ragio.channels.outbound import SendFailed
    from ragio.channels.telegram import set_webhook
    from ragio.service import outbound_client

    missing = missing_settings(settings, "telegram", "set-webhook")
    if missing:
        print(f"ragchat: set {' and '.join(missing)} first", file=sys.stderr)
        return 2
    url = args.url or (
        settings.public_base_url + "/webhook/telegram" if settings.public_base_url else ""
    )
    if not url:
        print("ragchat: give the URL, or set PUBLIC_BASE_URL", file=sys.stderr)
        return 2
    if urlsplit(url).scheme != "https" or not urlsplit(url).hostname:
        print(f"ragchat: Telegram calls https URLs only, not {url!r}", file=sys.stderr)
        return 2
    async with outbound_client() as client:
        try:
            description = await set_webhook(client, settings, url)
        except SendFailed as error:
            print(f"ragchat: {error}", file=sys.stderr)
            return 1
    print(f"{description}: Telegram now sends updates to {url} with the secret")
    return 0


async def discord_command(settings: Settings, args: argparse.Namespace) -> int:
    """``discord register-command``: create or update /ask, its role choices from the
    roles a customer can reach on Discord."""
    from ragcore.channels.required import missing_settings
    from ragcore.channels.routing import customer_roles
    from ragio.channels.discord import register_command
    from ragio.channels.outbound import SendFailed
    from ragio.db.migrations import apply_migrations
    from ragio.employees.store import list_roles
    from ragio.service import outbound_client
    from ragio.startup import open_database

    missing = missing_settings(settings, "discord", "register-command")
    if missing:
        print(f"ragchat: set {' and '.join(missing)} first", file=sys.stderr)
        return 2
    async with startup_errors(), open_database(settings) as database:
        await database.run(apply_migrations)
        stored = await database.run(list_roles)
    roles = customer_roles([s.role for s in stored], "discord")
    async with outbound_client() as client:
        try:
            command_id = await register_command(client, settings, roles)
        except SendFailed as error:
            print(f"ragchat: {error}", file=sys.stderr)
            return 1
    names = ", ".join(r.identifier for r in roles) or "none"
    print(f"registered /ask (command {command_id}); roles to choose from: {names}")
    return 0


async def rekey_command(settings: Settings, args: argparse.Namespace) -> int:
    """Re-encrypt every stored token with the current key."""
    from ragio.db.migrations import apply_migrations
    from ragio.integrations import store
    from ragio.integrations.credentials import CredentialsUnreadable, Keys, NoKey
    from ragio.startup import open_database

    keys = Keys.of(settings)
    async with startup_errors(), open_database(settings) as database:
        await database.run(apply_migrations)
        stored = await database.run(store.tokens)
        try:
            replaced = [(id_, old, keys.rotate(old, name)) for id_, name, old in stored]
        except (NoKey, CredentialsUnreadable) as error:
            print(f"ragchat: {error.detail}; nothing was changed", file=sys.stderr)
            return 1
        written = await database.run(store.replace_tokens, replaced)
    print(f"re-encrypted the credentials of {written} data source(s) with ADDON_ENCRYPTION_KEY")
    if written < len(replaced):
        print(f"{len(replaced) - written} changed meanwhile: run rekey again", file=sys.stderr)
        return 1
    return 0


async def sync_command(settings: Settings, args: argparse.Namespace) -> int:
    """Sync one data source (``args.id``) or all, one after another; 1 when any failed or
    stopped at the bound. A source whose sync is already running (the scheduler's, the
    console's, an earlier CronJob's) is skipped with one line: not a failure."""
    from ragcore.api.problems import ProblemError
    from ragio.integrations import store
    from ragio.integrations.sync import AlreadySyncing, sync_now
    from ragio.startup import open_service

    failed = 0
    async with startup_errors(), open_service(settings) as svc:
        if args.id is not None:
            one = await svc.database.run(store.get_source, args.id)
            if one is None:
                print(f"ragchat: no data source {args.id}", file=sys.stderr)
                return 2
            sources = [one]
        else:
            sources = await svc.database.run(store.list_sources)
        for source in sources:
            try:
                ended = await sync_now(svc, source)
            except AlreadySyncing:
                print(
                    f"{source.id} {source.name}: skipped, a sync of this source is already running"
                )
                continue
            except ProblemError as error:
                print(f"ragchat: {source.name}: {error.detail}", file=sys.stderr)
                failed += 1
                continue
            if ended is None:
                print(f"ragchat: {source.name}: taken over by another sync", file=sys.stderr)
                failed += 1
                continue
            state = ended.sync
            print(
                f"{ended.id} {ended.name}: {state.status}, {state.records_seen} seen, "
                f"{state.records_stored} stored, {state.records_skipped} without a user, "
                f"{state.records_removed} removed"
            )
            if state.status != "succeeded":
                print(f"ragchat: {ended.name}: {state.error}", file=sys.stderr)
                failed += 1
    return 1 if failed else 0


async def crawl_command(settings: Settings, args: argparse.Namespace) -> int:
    """Crawl a website now (``ragio.websites.crawl``), showing pages fetched of pages known.
    A start URL finds the website that starts there, or makes one with the options given;
    a crawl of it already queued or running (the scheduler's, the console's) is not run
    twice: that is said, exit code 1."""
    from tqdm import tqdm

    from ragcore.errors import InvalidInput
    from ragcore.websites.crawl import MAX_LISTED
    from ragcore.websites.pages import normal_url
    from ragcore.websites.sites import check_new
    from ragio.jobs import store as jobs_store
    from ragio.startup import open_service
    from ragio.websites import store
    from ragio.websites.crawl import CRAWL, crawl

    async with startup_errors(), open_service(settings) as svc:
        if args.target.isdigit():
            site = await svc.database.run(store.get, int(args.target))
            if site is None:
                print(
                    f"ragchat: no website {args.target}; GET /websites lists them", file=sys.stderr
                )
                return 2
        else:
            url = normal_url(args.target)
            if url is None:
                print(f"ragchat: {args.target!r} is not an http(s) address", file=sys.stderr)
                return 2
            sites = await svc.database.run(store.list_sites)
            site = next((s for s in sites if url in s.start_urls), None)
            if site is None:
                body: dict[str, object] = {
                    "name": args.name or url.split("/")[2],
                    "start_urls": [url],
                    "sitemaps": args.sitemap,
                    "include": args.include,
                    "exclude": args.exclude,
                }
                for option in ("max_pages", "max_depth"):
                    if getattr(args, option) is not None:
                        body[option] = getattr(args, option)
                try:
                    fields = check_new(body)
                    site = await svc.database.run(store.create, fields, svc.clock.now())
                except InvalidInput as bad:
                    print(f"ragchat: {bad.field}: {bad.message}", file=sys.stderr)
                    return 2
                except store.NameTaken as taken:
                    print(
                        f"ragchat: a website named {taken.name!r} exists; --name another",
                        file=sys.stderr,
                    )
                    return 2
                print(f"website {site.id} {site.name!r} made")
        running = await svc.database.run(jobs_store.unfinished_with_key, CRAWL, str(site.id))
        if running is not None:
            print(
                f"ragchat: a crawl of {site.name!r} is {running.status} already "
                f"(GET /jobs/{running.id}); not crawled twice",
                file=sys.stderr,
            )
            return 1
        with tqdm(unit="page", disable=None, dynamic_ncols=True, desc=site.name) as bar:

            async def progress(done: int, total: int) -> None:
                bar.total = total
                bar.n = done
                bar.refresh()

            result = await crawl(svc, site, on_progress=progress)
    counts = ", ".join(f"{count} {outcome}" for outcome, count in result["pages"].items())
    print(f"website {site.id} {site.name!r}: {counts or 'no page'} in {result['seconds']:g} s")
    if "incomplete" in result:
        print(f"  {result['incomplete']}")
    for problem in result["problems"][:MAX_LISTED]:
        print(f"  {problem['outcome']}: {problem['url']}: {problem['reason']}")
    return 1 if result["pages"].get("failed") else 0


async def documents_command(settings: Settings, args: argparse.Namespace) -> int:
    """``documents list [--query Q] [--limit N]``, ``documents delete ID_OR_NAME`` and
    ``documents rename ID NEW_NAME``."""
    from ragcore.api.queries import contains_pattern
    from ragio.db.migrations import apply_migrations
    from ragio.knowledge import store
    from ragio.startup import open_database

    if args.action == "list" and args.limit is not None and args.limit < 1:
        print("ragchat: --limit must be a whole number of at least 1", file=sys.stderr)
        return 2
    if args.action == "rename":
        return await _rename_document(settings, args.document, args.name)
    if args.action == "delete":  # a pipeline: the knowledge graph forgets them too
        from ragcore.knowledge.documents import forget_documents
        from ragio.runner import run
        from ragio.startup import open_service

        async with startup_errors(), open_service(settings) as svc:
            deleted = await run(forget_documents(args.document), svc)
    else:
        async with startup_errors(), open_database(settings) as database:
            await database.run(apply_migrations)
            found, total = await database.run(
                store.list_documents, args.limit, 0, contains_pattern(args.query)
            )
        for doc in found:
            added = doc.created_at.strftime("%Y-%m-%d %H:%M") if doc.created_at else ""
            print(
                f"{doc.id}\t{doc.name}\t{doc.chunk_count} chunks\t{doc.content_type}\t"
                f"{doc.size_bytes} bytes\t{added}"
            )
        matching = f" named like {args.query!r}" if args.query else ""
        print(f"{len(found)} of {total} document(s){matching}", file=sys.stderr)
        return 0
    if not deleted:
        print(
            f"ragchat: no document with the id or name {args.document!r}; "
            "`ragchat documents list` shows them",
            file=sys.stderr,
        )
        return 2
    for doc in deleted:
        print(f"deleted document {doc.id}, {doc.name} ({doc.chunk_count} chunks)")
    return 0


async def _rename_document(settings: Settings, document_id: int, name: str) -> int:
    from ragcore.knowledge.documents import NameTaken, check_name
    from ragio.db.migrations import apply_migrations
    from ragio.knowledge import store
    from ragio.startup import open_database

    try:
        name = check_name(name).strip()
    except InvalidInput as bad:
        print(f"ragchat: NEW_NAME {bad.message}", file=sys.stderr)
        return 2
    async with startup_errors(), open_database(settings) as database:
        await database.run(apply_migrations)
        try:
            renamed = await database.run(store.rename_document, document_id, name)
        except NameTaken as taken:
            print(f"ragchat: {taken}", file=sys.stderr)
            return 2
    if renamed is None:
        print(
            f"ragchat: no document with the id {document_id}; `ragchat documents list` shows them",
            file=sys.stderr,
        )
        return 2
    print(f"renamed document {renamed.id} to {renamed.name}")
    return 0


async def sites_command(settings: Settings, args: argparse.Namespace) -> int:
    """``sites list``, ``sites add NAME --origin O [--role R]``, ``sites enable|disable ID``."""
    from ragcore.widget.sites import check_new, check_patch
    from ragio.clock import SystemClock
    from ragio.db.migrations import apply_migrations
    from ragio.employees.lookup import UnknownRole, stored_role
    from ragio.startup import open_database
    from ragio.widget import store

    try:
        if args.action == "add":
            fields = check_new(
                {"name": args.name, "allowed_origins": args.origin}
                | ({"role": args.role} if args.role else {})
            )
        elif args.action in ("enable", "disable"):
            fields = check_patch({"enabled": args.action == "enable"})
    except InvalidInput as bad:
        print(f"ragchat: {bad.field}: {bad.message}", file=sys.stderr)
        return 2
    now = SystemClock().now()
    async with startup_errors(), open_database(settings) as database:
        await database.run(apply_migrations)
        if args.action == "list":
            for site in await database.run(store.list_sites):
                state = "enabled" if site.enabled else "disabled"
                origins = " ".join(site.allowed_origins) or "(no origin)"
                print(
                    f"{site.id}\t{site.public_id}\t{site.name}\t{state}\t{origins}\t"
                    f"{site.role or ''}"
                )
            return 0
        if args.action == "add":
            if fields.role:
                try:
                    await stored_role(database, fields.role)
                except UnknownRole as unknown:
                    print(f"ragchat: --role: {unknown}", file=sys.stderr)
                    return 2
            secret = store.new_identity_secret()
            try:
                site = await database.run(store.create_site, fields, secret, now)
            except store.NameTaken:
                print(f"ragchat: a site named {args.name!r} exists already", file=sys.stderr)
                return 2
            base = settings.public_base_url.rstrip("/") or "https://<this service>"
            print(f"added site {site.id}: {site.public_id}")
            print(f'embed: <script src="{base}/widget.js" data-site="{site.public_id}" async>'
                  "</script>")  # fmt: skip
            print(f"identity secret (shown once, for verified customers): {secret}")
            return 0
        changed = await database.run(store.update_site, args.site, fields, now)
    if changed is None:
        print(f"ragchat: no site with the id {args.site}; `ragchat sites list` shows them",
              file=sys.stderr)  # fmt: skip
        return 2
    print(f"site {changed.id} ({changed.name}) {args.action}d")
    return 0


async def keys_command(settings: Settings, args: argparse.Namespace) -> int:
    """``keys list``, ``keys create NAME --scope S [...]``, ``keys revoke ID``."""
    from ragcore.api.keys import check_new
    from ragio import keys
    from ragio.clock import SystemClock
    from ragio.db.migrations import apply_migrations
    from ragio.startup import open_database

    if args.action == "create":
        body: dict[str, Any] = {
            "name": args.name,
            "scopes": args.scope,
            "requests_per_minute": args.requests_per_minute,
            "tokens_per_day": args.tokens_per_day,
        }
        if args.expires_in_days is not None:
            body["expires_in_days"] = args.expires_in_days
        try:
            fields = check_new(body)
        except InvalidInput as bad:
            flag = "scope" if bad.field == "scopes" else bad.field.replace("_", "-")
            print(f"ragchat: --{flag}: {bad.message}", file=sys.stderr)
            return 2
    now = SystemClock().now()
    async with startup_errors(), open_database(settings) as database:
        await database.run(apply_migrations)
        if args.action == "list":
            for key in await database.run(keys.list_keys, now):
                state = (
                    f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at
                    else f"until {key.expires_at:%Y-%m-%d}" if key.expires_at
                    else "in use"
                )  # fmt: skip
                print(
                    f"{key.id}\t{key.name}\t{key.shown}…\t{','.join(key.scopes)}\t"
                    f"{key.requests_per_minute or '-'}/min\t{key.tokens_per_day or '-'} tokens/day"
                    f"\t{state}"
                )
            return 0
        if args.action == "create":
            try:
                made = await database.run(keys.create, fields, now)
            except keys.NameTaken:
                print(f"ragchat: a key named {args.name!r} is in use already", file=sys.stderr)
                return 2
            print(f"made key {made.id} ({made.name}, {', '.join(made.scopes)}):")
            print(made.key)
            print("shown only this once: it is kept as a hash", file=sys.stderr)
            return 0
        if not await database.run(keys.revoke, args.key, now):
            print(f"ragchat: no key with the id {args.key}; `ragchat keys list` shows them",
                  file=sys.stderr)  # fmt: skip
            return 2
    print(f"key {args.key} revoked")
    return 0


async def graph_command(settings: Settings, args: argparse.Namespace) -> int:
    """``graph rebuild`` and ``graph status``."""
    from ragcore.api.graph import GRAPH_OFF
    from ragio.graph.store import GraphUnavailable
    from ragio.startup import open_service

    async with startup_errors(), open_service(settings) as svc:
        graph = svc.graph
        if not graph.on:
            print(f"ragchat: the knowledge graph is {GRAPH_OFF}", file=sys.stderr)
            return 2
        try:
            if args.action == "rebuild":
                done = await graph.rebuild()
                print(f"recorded {done.recorded} document(s)")
            counts = await graph.counts()
        except GraphUnavailable as error:
            print(f"ragchat: the knowledge graph is unavailable: {error}", file=sys.stderr)
            return 1
        state = graph.status()
        print(
            f"graph ({state.store}): {counts.entities} entities, {counts.mentions} mentions, "
            f"{counts.relations} relations"
        )
    return 0


async def answers_command(settings: Settings, args: argparse.Namespace) -> int:
    """``ragchat answers import FILE``: every entry of the FAQ, or none, with each
    malformed one named by its line."""
    from ragcore.answers.faq import MAX_FAQ_BYTES, FaqInvalid, faq_format
    from ragio.answers import store, writing
    from ragio.startup import open_service

    path: Path = args.file
    kind = args.format or faq_format(path.name)
    if kind is None:
        print(f"ragchat: {path}: name a .csv or .json file, or give --format", file=sys.stderr)
        return 2
    try:
        if path.stat().st_size > MAX_FAQ_BYTES:
            print(f"ragchat: {path}: larger than {MAX_FAQ_BYTES} bytes", file=sys.stderr)
            return 2
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        print(f"ragchat: {path}: cannot be read as UTF-8 text: {error}", file=sys.stderr)
        return 2
    async with startup_errors(), open_service(settings) as svc:
        try:
            counts = await writing.import_faq(svc, text, kind)
        except FaqInvalid as invalid:
            for problem in invalid.problems:
                print(f"{path}:{problem.line}: {problem.detail}", file=sys.stderr)
            print(f"ragchat: {path}: nothing imported", file=sys.stderr)
            return 1
        except store.Claimed as claimed:
            print(f"ragchat: {path}: {claimed}; nothing imported", file=sys.stderr)
            return 1
    print(
        f"imported {len(counts['answers'])} answer(s): {counts['created']} new, "
        f"{counts['updated']} rewritten, {counts['unchanged']} unchanged"
    )
    return 0


COMMANDS = {
    "answers": answers_command,
    "documents": documents_command,
    "sites": sites_command,
    "keys": keys_command,
    "graph": graph_command,
    "rekey": rekey_command,
    "sync": sync_command,
    "telegram": telegram_command,
    "discord": discord_command,
    "serve": serve_command,
    "migrate": migrate_command,
    "ask": ask_command,
    "ingest": ingest_command,
    "crawl": crawl_command,
    "reindex": reindex_command,
    "worker": worker_command,
}


if __name__ == "__main__":
    sys.exit(main())
