"""Which settings a channel needs, from the one table every check reads."""

from __future__ import annotations

from ragcore.channels.required import missing_settings
from ragcore.settings import load_settings


def test_nothing_set_names_every_setting_a_use_needs_in_order():
    s = load_settings({})
    assert missing_settings(s, "telegram", "reply") == ["TELEGRAM_BOT_TOKEN"]
    assert missing_settings(s, "whatsapp", "reply") == ["TELCO_ACCOUNT_SID", "TELCO_AUTH_TOKEN"]
    assert missing_settings(s, "discord", "reply") == []  # the interaction brings its token
    assert missing_settings(s, "whatsapp", "notify") == [
        "TELCO_ACCOUNT_SID",
        "TELCO_AUTH_TOKEN",
        "WHATSAPP_FROM_NUMBER",
    ]
    assert missing_settings(s, "discord", "register-command") == [
        "DISCORD_APPLICATION_ID",
        "DISCORD_BOT_TOKEN",
    ]


def test_a_set_setting_is_no_longer_named():
    s = load_settings({"TELEGRAM_BOT_TOKEN": "123456789:AAHfakeTokenForTests_0123456789abc"})
    assert missing_settings(s, "telegram", "reply") == []
    assert missing_settings(s, "telegram", "set-webhook") == ["TELEGRAM_WEBHOOK_SECRET"]
