"""The first words of a call: VOICE_GREETING, or one built from VOICE_BOT_NAME and the
business profile's products, so a caller knows at once whom they reached and what to ask."""

from __future__ import annotations

from ragcore.employees.profile import Profile
from ragcore.voice.speech import spoken

MAX_TOPIC_CHARS = 120


def greeting(configured: str, bot_name: str, profile: Profile | None) -> str:
    if configured.strip():
        return spoken(configured)
    name = bot_name.strip()
    who = f"this is {name}, the virtual assistant" if name else "this is the virtual assistant"
    topic = _topic(profile.products if profile is not None else "")
    about = f"your questions about {topic}" if topic else "your questions about our business"
    return f"Hello, {who}. I can answer {about}. What would you like to know?"


def _topic(products: str) -> str:
    line = spoken(products.strip().splitlines()[0]) if products.strip() else ""
    line = line.rstrip(".!?;: ")
    if len(line) > MAX_TOPIC_CHARS:
        cut = line.rfind(",", 0, MAX_TOPIC_CHARS)
        line = line[: cut if cut > 0 else MAX_TOPIC_CHARS].rstrip(" ,")
    return line  # said, not shown: its capitals do not matter
