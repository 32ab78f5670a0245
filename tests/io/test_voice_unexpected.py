"""The voice runner drops an event the call's state machine did not expect (a mistake of
the runner's, ``ragcore.voice.call.UnexpectedEvent``), says so once a call for each state
and event type, and goes on."""

from __future__ import annotations

import logging

import pytest

from ragcore.voice.call import Call, MarkPlayed, State, Tick, Transcript
from voiceio.call import PhoneCall


async def test_an_unexpected_event_is_logged_once_for_its_state_and_type_and_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    phone = PhoneCall(None, None, None)  # type: ignore[arg-type]  # feed needs none of them
    phone.call = Call("Hello, how can I help?")
    with caplog.at_level(logging.WARNING, logger="voiceio.call"):
        phone.feed(MarkPlayed("1.0", 0.0))
        phone.feed(MarkPlayed("1.1", 0.1))  # the same state and type: not logged again
        phone.feed(Transcript("my card number is 4111 1111", True, True, 0.2))
        phone.feed(Tick(0.3))  # before the start, a tick is ignored on purpose: no warning
    warnings = [r.getMessage() for r in caplog.records if r.name == "voiceio.call"]
    assert warnings == [
        "call ?: MarkPlayed while connecting: not expected; dropped",
        "call ?: Transcript while connecting: not expected; dropped",  # no caller's words
    ]
    assert phone.call.state is State.CONNECTING
