"""The echo rule: is what comes back on the caller's line the caller, or the bot's own
voice returning from the handset and the network?

A phone line returns part of what it plays, attenuated (the echo return loss, 20 dB or
more on a good handset, at least 6 dB on any line G.168 allows) and delayed (tens to a
few hundred milliseconds). This is the Geigel double-talk rule, on 20 ms frames: while
the bot's audio is playing, or has played within ``ECHO_TAIL_SECONDS``, an inbound frame
is the caller only when the voice-activity detector hears speech in it *and* it is
louder than the loudest outbound frame of the last ``ECHO_TAIL_SECONDS`` less
``ECHO_MARGIN_DB``. Echo sits ``loss`` dB under the bot's level; a caller talking over
the bot is about as loud as the bot.
"""

from __future__ import annotations

from collections import deque

import attrs

from ragcore.voice.audio import FLOOR_DB, FRAME_SECONDS

#: how long after a frame plays its echo may still come back
ECHO_TAIL_SECONDS = 0.6
#: inbound speech counts as the caller when within this many dB of the bot's loudest
#: recent frame: echo must be attenuated by more than this to be told apart (lines give
#: 20 dB and more; 12 leaves a caller room to be quieter than the bot)
ECHO_MARGIN_DB = 12.0


@attrs.frozen
class _Played:
    start: float
    level: float


class EchoGuard:
    """What the bot has played, and the rule over it."""

    def __init__(self) -> None:
        self._played: deque[_Played] = deque()

    def playing(self, start: float, level: float) -> None:
        """An outbound frame that plays from ``start`` (call time, seconds)."""
        if level > FLOOR_DB:
            self._played.append(_Played(start, level))

    def cleared(self, at: float) -> None:
        """The provider's buffer was emptied at ``at``: what was queued after it never plays."""
        while self._played and self._played[-1].start > at:
            self._played.pop()

    def exposed(self, at: float) -> bool:
        """Whether bot audio plays at ``at`` or could still be coming back as echo."""
        self._forget(at)
        return bool(self._played) and self._played[0].start <= at

    def threshold(self, at: float) -> float:
        """The level an inbound frame at ``at`` must exceed to be the caller."""
        self._forget(at)
        levels = [p.level for p in self._played if p.start <= at]
        return max(levels) - ECHO_MARGIN_DB if levels else FLOOR_DB

    def is_caller(self, level: float, speech: bool, at: float) -> bool:
        """The rule: speech, and louder than any echo of what the bot played could be."""
        return speech and level > self.threshold(at)

    def _forget(self, at: float) -> None:
        horizon = at - ECHO_TAIL_SECONDS - FRAME_SECONDS
        while self._played and self._played[0].start < horizon:
            self._played.popleft()
