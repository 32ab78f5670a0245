"""Every effect's handler: the areas' tables merged into the one the runner uses.

Built at import, so an effect of ragcore without a handler, or with two, stops the
service at start-up (``HandlerTableError``) rather than failing its first request.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import ragcore
from ragcore.effects import Effect
from ragio import language
from ragio.actions import handlers as actions
from ragio.chat import handlers as chat
from ragio.employees import handlers as employees
from ragio.knowledge import handlers as knowledge
from ragio.runner import EffectType, Handlers, merge_handlers
from ragio.usage import handlers as usage


def effects_declared_in(package: ModuleType) -> list[EffectType]:
    """Every effect class the modules of ``package`` declare (imported here to find them)."""
    for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        importlib.import_module(module.name)
    found: list[EffectType] = []
    pending: list[EffectType] = list(Effect.__subclasses__())
    while pending:
        kind = pending.pop()
        pending.extend(kind.__subclasses__())
        if kind.__module__.startswith(f"{package.__name__}.") and kind not in found:
            found.append(kind)
    return found


HANDLERS: Handlers = merge_handlers(
    [
        actions.HANDLERS,
        chat.HANDLERS,
        employees.HANDLERS,
        knowledge.HANDLERS,
        language.HANDLERS,
        usage.HANDLERS,
    ],
    effects=effects_declared_in(ragcore),
    streaming=chat.STREAMING_HANDLERS,
)
