"""One table of handlers: every effect of ragcore has exactly one, checked at start-up; and
the table of the turn's stages its effects are timed in."""

from __future__ import annotations

import attrs
import pytest

import ragcore
from ragcore.chat.timings import STAGES
from ragcore.effects import Effect
from ragcore.generation import Generate
from ragcore.knowledge.effects import Embed
from ragcore.usage import ReleaseTokens
from ragio.registry import HANDLERS, HandlerTableError, effects_declared_in, merge_handlers
from ragio.timings import STAGE_OF


@attrs.frozen
class Ping(Effect[str]):
    """An effect of a test, not of ragcore."""


async def pong(effect: Ping, service: object) -> str:
    return "pong"


def test_every_effect_of_ragcore_has_a_handler():
    effects = effects_declared_in(ragcore)
    assert {Embed, Generate, ReleaseTokens} <= set(effects)
    assert Ping not in effects  # only ragcore's
    assert set(effects) <= set(HANDLERS.plain)
    assert set(HANDLERS.streaming) == {Generate}


def test_an_effect_without_a_handler_is_refused():
    with pytest.raises(HandlerTableError, match=r"test_registry\.Ping has no handler"):
        merge_handlers([{Embed: pong}], effects=[Embed, Ping])


def test_an_effect_with_two_handlers_is_refused():
    with pytest.raises(HandlerTableError, match=r"test_registry\.Ping has two handlers"):
        merge_handlers([{Ping: pong}, {Ping: pong}], effects=[Ping])


def test_streaming_an_effect_without_a_plain_handler_is_refused():
    with pytest.raises(HandlerTableError, match=r"Ping has no handler"):
        merge_handlers([{}], effects=[], streaming={Ping: pong})


def test_every_stage_of_a_turn_is_timed_from_effects_ragcore_declares():
    stages = set(STAGE_OF.values())
    assert stages == set(STAGES)  # each stage has its effects; no effect times another
    assert set(STAGE_OF) <= set(HANDLERS.plain)
