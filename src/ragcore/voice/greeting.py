"""The first words of a call: VOICE_GREETING, or one built from VOICE_BOT_NAME and the
business profile's products, so a caller knows at once whom they reached and what to ask.
The built one is in the call's language before the caller has spoken
(``ragcore.voice.phrases.call_language``); VOICE_GREETING is said as written."""

from __future__ import annotations

from ragcore.employees.profile import Profile
from ragcore.voice.phrases import GREETINGS
from ragcore.voice.speech import spoken

MAX_TOPIC_CHARS = 120


def greeting(configured: str, bot_name: str, profile: Profile | None, language: str = "en") -> str:
    if configured.strip():
        return spoken(configured)
    words = GREETINGS.get(language, GREETINGS["en"])
    name = bot_name.strip()
    who = words["named"].format(name=name) if name else words["unnamed"]
    topic = _topic(profile.products if profile is not None else "")
    about = words["topic"].format(topic=topic) if topic else words["no_topic"]
    return words["text"].format(who=who, about=about)


def _topic(products: str) -> str:
    line = spoken(products.strip().splitlines()[0]) if products.strip() else ""
    line = line.rstrip(".!?;: ")
    if len(line) > MAX_TOPIC_CHARS:
        cut = line.rfind(",", 0, MAX_TOPIC_CHARS)
        line = line[: cut if cut > 0 else MAX_TOPIC_CHARS].rstrip(" ,")
    return line  # said, not shown: its capitals do not matter
