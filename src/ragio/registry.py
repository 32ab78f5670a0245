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
from ragio.actions import handlers as actions
from ragio.chat import handlers as chat
from ragio.employees import handlers as employees
from ragio.knowledge import handlers as knowledge
from ragio.runner import EffectType, Handlers, merge_handlers
from ragio.usage import handlers as usage


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
        chat.HANDLERS,
        employees.HANDLERS,
        knowledge.HANDLERS,
        usage.HANDLERS,
    ],
    effects=effects_declared_in(ragcore),
    streaming=chat.STREAMING_HANDLERS,
)
