"""The text channels' settings: what the platforms accept, checked at start-up."""

from __future__ import annotations

import pytest

from ragcore.settings import SettingsError, load_settings

GOOD = {
    "TELEGRAM_BOT_TOKEN": "123456789:AAHfakeTokenForTests_0123456789abc",
    "TELEGRAM_WEBHOOK_SECRET": "a-Secret_42",
    "TELCO_ACCOUNT_SID": "AC0123456789abcdef0123456789abcdef",
    "TELCO_AUTH_TOKEN": "f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8",
    "WHATSAPP_FROM_NUMBER": "whatsapp:+14155238886",
    "PUBLIC_BASE_URL": "https://chat.example.com/ragchat/",
    "DISCORD_PUBLIC_KEY": "ab" * 32,
    "DISCORD_APPLICATION_ID": "1234567890123456789",
    "DISCORD_BOT_TOKEN": "MTIz.fake.bot-token",
}


def test_defaults_point_at_the_real_platforms_and_nothing_is_configured():
    s = load_settings({})
    assert s.telegram_api_base_url == "https://api.telegram.org"
    assert s.telco_api_base_url == "https://api.twilio.com"
    assert s.discord_api_base_url == "https://discord.com/api/v10"
    assert s.telegram_bot_token == s.discord_public_key == s.public_base_url == ""
    assert s.telegram_allow_unsigned is False and s.whatsapp_allow_unsigned is False


def test_good_values_are_read_and_normalised():
    s = load_settings(GOOD)
    assert s.whatsapp_from_number == "+14155238886"
    assert s.public_base_url == "https://chat.example.com/ragchat"


def test_secrets_never_show_in_the_settings_repr():
    shown = repr(load_settings(GOOD))
    for name in ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "TELCO_AUTH_TOKEN"):
        assert GOOD[name] not in shown
    assert GOOD["DISCORD_BOT_TOKEN"] not in shown


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("TELEGRAM_WEBHOOK_SECRET", "has spaces!", "A-Z, a-z, 0-9"),
        ("TELEGRAM_WEBHOOK_SECRET", "x" * 257, "1-256"),
        ("TELEGRAM_BOT_TOKEN", "not-a-token", "bot token"),
        ("TELCO_ACCOUNT_SID", "AC/../x", "letters and digits"),
        ("WHATSAPP_FROM_NUMBER", "0415 5238886", "E.164"),
        ("PUBLIC_BASE_URL", "chat.example.com", "http"),
        ("PUBLIC_BASE_URL", "https://chat.example.com/?a=1", "without ?query"),
        ("DISCORD_PUBLIC_KEY", "abc", "64 hex digits"),
        ("DISCORD_APPLICATION_ID", "my-app", "digits"),
        ("TELEGRAM_API_BASE_URL", "ftp://x", "http"),
    ],
)
def test_a_value_the_platform_would_refuse_stops_start_up_naming_it(name, value, says):
    with pytest.raises(SettingsError) as raised:
        load_settings({**GOOD, name: value})
    [problem] = raised.value.problems
    assert problem.startswith(f"{name}:") and says in problem
