"""Language detection with lingua (the rule that decides is ragcore.language).

Over all languages lingua runs in low-accuracy mode (~100 MB, well under a
millisecond a message); restricted by LANGUAGE_DETECTION_SUPPORTED_LANGUAGES it
runs in high-accuracy mode over just those. The detector is built once, in a
worker thread, on first use; a message is detected on the event loop unless it is long.
"""

from __future__ import annotations

from collections.abc import Sequence

import trio
from lingua import IsoCode639_1, Language, LanguageDetector, LanguageDetectorBuilder

from ragcore.language import LanguageGuess, language_name

GUESSES = 3
#: a text up to this long is detected on the event loop (at most ~0.35 ms here): lingua
#: holds the GIL as it works, so a worker thread adds only its hop (~0.1 ms of CPU)
INLINE_CHARACTERS = 500


class LanguageDetection:
    def __init__(self, supported: Sequence[str] = ()):
        self.supported = tuple(supported)
        self._detector: LanguageDetector | None = None
        self._lock = trio.Lock()

    def _build(self) -> LanguageDetector:
        if len(self.supported) >= 2:
            languages = [
                Language.from_iso_code_639_1(getattr(IsoCode639_1, c.upper()))
                for c in self.supported
            ]
            return LanguageDetectorBuilder.from_languages(*languages).build()
        builder = LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode()
        return builder.build()

    async def detect(self, text: str) -> list[LanguageGuess]:
        if self._detector is None:
            async with self._lock:
                if self._detector is None:
                    self._detector = await trio.to_thread.run_sync(self._build)
        compute = self._detector.compute_language_confidence_values
        if len(text) <= INLINE_CHARACTERS:
            values = compute(text)
        else:
            values = await trio.to_thread.run_sync(compute, text)
        guesses = []
        for value in values[:GUESSES]:
            code = value.language.iso_code_639_1.name.lower()
            guesses.append(LanguageGuess(code, language_name(code), value.value))
        return guesses
