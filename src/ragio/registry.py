"""Every effect's handler: the areas' tables merged into the one the runner uses.

Built at import, so an effect of ragcore without a handler, or with two, stops the
service at start-up (``HandlerTableError``) rather than failing its first request.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import typing
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import ragcore
from ragcore.effects import Effect
from ragcore.knowledge.jobs import INGEST
from ragio.actions import handlers as actions
from ragio.answers import handlers as answers
from ragio.channels import handlers as channels
from ragio.chat import handlers as chat
from ragio.employees import handlers as employees
from ragio.employees.profile_learning import LEARN, learn
from ragio.handoff import handlers as handoff
from ragio.integrations.sync import SYNC, queue_due_syncs, sync_job
from ragio.jobs.worker import JobHandler, Schedule
from ragio.knowledge import handlers as knowledge
from ragio.knowledge.ingest_job import ingest
from ragio.live import answering as live_answering
from ragio.live import handlers as live
from ragio.service import EffectType, Handler, Handlers, HandlerTable, StreamHandlerTable
from ragio.usage import handlers as usage
from ragio.websites.crawl import CRAWL, crawl_job, queue_due_crawls


class HandlerTableError(Exception):
    """An effect with no handler, or with two: a mistake of ours, found at start-up."""


def merge_handlers(
    tables: Iterable[HandlerTable],
    effects: Iterable[EffectType],
    streaming: StreamHandlerTable | None = None,
) -> Handlers:
    """One table of the areas' ``tables``, checked to handle each of ``effects`` exactly
    once (and to stream only effects it handles); HandlerTableError names each that is not."""
    plain: dict[EffectType, Handler] = {}
    twice = []
    for table in tables:
        for kind, handler in table.items():
            if kind in plain:
                twice.append(kind)
            plain[kind] = handler
    missing = [kind for kind in effects if kind not in plain]
    missing += [kind for kind in streaming or {} if kind not in plain]
    problems = [f"{_name(kind)} has two handlers" for kind in twice]
    problems += [f"{_name(kind)} has no handler" for kind in missing]
    if problems:
        raise HandlerTableError("; ".join(problems))
    return Handlers(plain, dict(streaming or {}))


def _name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def effects_declared_in(package: ModuleType) -> list[EffectType]:
    """Every effect class the modules of ``package`` declare (imported here to find them).

    Read from the modules, not from ``Effect.__subclasses__()``: that also lists the
    classes attrs replaced with slotted ones, until the garbage collector runs."""
    found: list[EffectType] = []
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        found += [value for value in vars(module).values() if _is_effect_of(value, module)]
    return found


def _is_effect_of(value: object, module: ModuleType) -> bool:
    if not isinstance(value, type) or value is Effect:
        return False
    return value.__module__ == module.__name__ and issubclass(value, Effect)


HANDLERS: Handlers = merge_handlers(
    [
        actions.HANDLERS,
        answers.HANDLERS,
        channels.HANDLERS,
        chat.HANDLERS,
        employees.HANDLERS,
        handoff.HANDLERS,
        knowledge.HANDLERS,
        live.HANDLERS,
        live_answering.HANDLERS,
        usage.HANDLERS,
    ],
    effects=effects_declared_in(ragcore),
    streaming=chat.STREAMING_HANDLERS,
)


#: every kind of background job, and the handler that runs it (ragio.jobs.worker)
JOB_KINDS: dict[str, JobHandler] = {
    INGEST: ingest,
    SYNC: sync_job,
    LEARN: learn,
    CRAWL: crawl_job,
}
#: what queues jobs when they fall due (ragio.jobs.worker.Schedule)
JOB_SCHEDULES: tuple[Schedule, ...] = (queue_due_syncs, queue_due_crawls)


def effects_doc() -> str:
    """The table of every effect in docs/architecture.md: where it is declared, its
    result, what it asks for (its docstring's first sentence, and whether it runs ahead
    of a tentative turn: ``Effect.runs_ahead``) and its handler. The docs test checks
    the file holds exactly this."""
    rows = [
        "| Effect | Declared in | Result | Asks for | Handler |",
        "|---|---|---|---|---|",
    ]
    for kind in sorted(effects_declared_in(ragcore), key=lambda k: (k.__module__, k.__name__)):
        handler = HANDLERS.plain[kind]
        streaming = ""
        if kind in HANDLERS.streaming:
            streaming = f" (streaming: `{_short(HANDLERS.streaming[kind])}`)"
        rows.append(
            f"| `{kind.__name__}` | `{kind.__module__}` | `{_result(kind)}` "
            f"| {_first_sentence(kind)}{' *Runs ahead.*' if kind.runs_ahead else ''} "
            f"| `{_short(handler)}`{streaming} |"
        )
    return "\n".join(rows) + "\n"


def _result(kind: type) -> str:
    [base] = [b for b in getattr(kind, "__orig_bases__", ()) if typing.get_origin(b) is Effect]
    [result] = typing.get_args(base)
    text = getattr(result, "__forward_arg__", None) or (
        result.__name__ if isinstance(result, type) else str(result)
    )
    short = re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", text).replace("NoneType", "None")
    return short.replace("|", "\\|")  # a table cell, even inside a code span


def _first_sentence(kind: type) -> str:
    text = " ".join((kind.__doc__ or "").split())
    return text.split(". ")[0].rstrip(".").replace("|", "\\|") + "."


def _short(handler: Any) -> str:
    return f"{handler.__module__.removeprefix('ragio.')}.{handler.__name__}"
