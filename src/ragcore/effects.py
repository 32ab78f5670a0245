"""The base of every effect request: what a pipeline asks the outside world to do.

A pipeline is a generator that yields effects (frozen attrs values) and receives each
result back through ``send()``; its return value is the outcome. Each area declares its
own effects, in its ``effects`` module or beside the pipeline that yields them and the
types of their results (every one, with its handler, is in docs/architecture.md's
table, made by ``ragio.registry.effects_doc``); the runner in ragio executes each with
the handler its area registered, and tests in ``tests/core`` answer them with recorded
results instead.

``Effect[R]`` says what the effect's result is, so a type checker holds a handler to it:
``class Embed(Effect[list[Vector]])`` is executed by
``async def embed_texts(effect: Embed, service) -> list[Vector]``.
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

R = TypeVar("R")


class Effect(Generic[R]):
    """An effect whose result is an ``R``."""

    #: True for an effect that gives back what a pipeline holds (a token reservation):
    #: the runner still executes it while a cancelled pipeline unwinds
    gives_back: ClassVar[bool] = False
    #: True for an effect that changes nothing anyone sees, or only what happens whatever
    #: the turn becomes (a read, a model call, its tokens held and settled): a turn asked
    #: tentatively (a voice question before the caller's silence made sure they were
    #: done) runs it ahead; the runner holds every other effect until it is confirmed
    runs_ahead: ClassVar[bool] = False
