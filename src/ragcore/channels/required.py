"""Which settings each channel needs for each thing the service does on it: the one
table every check reads (answering a customer, messaging the owner, the CLI's set-up
commands), so a new platform or credential is added in one place."""

from __future__ import annotations

from typing import Any

#: (channel, use) -> the settings that must be non-empty, by their environment names;
#: the Settings attribute is the name in lower case
REQUIRED_SETTINGS: dict[tuple[str, str], tuple[str, ...]] = {
    # answering a customer; a Discord interaction brings its own token
    ("telegram", "reply"): ("TELEGRAM_BOT_TOKEN",),
    ("whatsapp", "reply"): ("TELCO_ACCOUNT_SID", "TELCO_AUTH_TOKEN"),
    ("discord", "reply"): (),
    # messaging the approval owner unprompted
    ("telegram", "notify"): ("TELEGRAM_BOT_TOKEN",),
    ("whatsapp", "notify"): ("TELCO_ACCOUNT_SID", "TELCO_AUTH_TOKEN", "WHATSAPP_FROM_NUMBER"),
    ("discord", "notify"): ("DISCORD_BOT_TOKEN",),
    # `ragchat telegram set-webhook`, `ragchat discord register-command`
    ("telegram", "set-webhook"): ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"),
    ("discord", "register-command"): ("DISCORD_APPLICATION_ID", "DISCORD_BOT_TOKEN"),
}


def missing_settings(settings: Any, channel: str, use: str) -> list[str]:
    """The settings still unset for ``use`` on ``channel``, in the table's order.
    KeyError for a pair the table does not have."""
    return [name for name in REQUIRED_SETTINGS[channel, use] if not getattr(settings, name.lower())]
