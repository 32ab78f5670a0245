"""Where the voice webhook sends the provider's media stream (ragcore.voice.media.stream_url):
VOICE_PUBLIC_URL, else PUBLIC_BASE_URL's host on VOICE_PORT, else the request's own host."""

from __future__ import annotations

import pytest

from ragcore.channels import telco
from ragcore.voice.media import stream_url
from ragcore.voice.upgrade import check_upgrade, signed_urls


@pytest.mark.parametrize(
    ("voice_public_url", "public_base_url", "request_url", "port", "expected"),
    [
        # VOICE_PUBLIC_URL wins, as given (a proxy may put the stream on a path)
        (
            "wss://voice.example.com/stream",
            "https://chat.example.com",
            "http://127.0.0.1:8000/",
            8765,
            "wss://voice.example.com/stream",
        ),
        # PUBLIC_BASE_URL's host: its path prefix and port are the HTTP service's, not the stream's
        (
            "",
            "https://chat.example.com",
            "http://127.0.0.1:8000/",
            8765,
            "wss://chat.example.com:8765",
        ),
        (
            "",
            "https://shop.example.com:8443/ragchat",
            "http://127.0.0.1/",
            9000,
            "wss://shop.example.com:9000",
        ),
        (
            "",
            "http://chat.example.com",
            "https://ignored.example/",
            8765,
            "ws://chat.example.com:8765",
        ),
        # neither set: the host the webhook request came to, its scheme mapped
        ("", "", "http://127.0.0.1:8000/", 8765, "ws://127.0.0.1:8765"),
        ("", "", "https://Chat.Example.com:8443/", 8765, "wss://chat.example.com:8765"),
        ("", "", "http://[::1]:8000/", 8765, "ws://[::1]:8765"),
        ("", "https://[2001:db8::1]", "http://127.0.0.1/", 443, "wss://[2001:db8::1]:443"),
    ],
)
def test_the_stream_url_comes_from_the_first_source_set(
    voice_public_url: str, public_base_url: str, request_url: str, port: int, expected: str
) -> None:
    assert stream_url(voice_public_url, public_base_url, request_url, port) == expected


# ---------------------------------------------------------------- the upgrade's signature


def sign(token: str, url: str) -> str:
    return telco.signature(token, url, ())


def test_an_upgrade_signed_over_the_handed_out_url_is_verified() -> None:
    urls = signed_urls("wss://voice.example.com", "", 8765, "voice.example.com", "/")
    for handed_out in ("wss://voice.example.com", "wss://voice.example.com/"):
        assert check_upgrade("tok", urls, sign("tok", handed_out), False).signed


def test_a_public_url_on_a_path_a_proxy_strips_is_still_verified() -> None:
    urls = signed_urls("wss://example.com/voice", "", 8765, "10.0.0.5:8765", "/")
    assert check_upgrade("tok", urls, sign("tok", "wss://example.com/voice"), False).signed


def test_without_settings_the_upgrades_host_gives_the_url_back() -> None:
    urls = signed_urls("", "", 8765, "chat.example.com:8765", "/")
    assert check_upgrade("tok", urls, sign("tok", "wss://chat.example.com:8765"), False).signed
    # PUBLIC_BASE_URL's host is what the webhook handed out, whatever Host says
    urls = signed_urls("", "https://chat.example.com", 8765, "10.0.0.5:8765", "/")
    assert check_upgrade("tok", urls, sign("tok", "wss://chat.example.com:8765"), False).signed


@pytest.mark.parametrize(
    ("token", "given", "allow", "accepted", "signed"),
    [
        ("tok", None, False, False, False),  # unsigned
        ("tok", "forged", False, False, False),
        ("tok", "elsewhere", False, False, False),  # signed for another URL
        ("", "anything", False, False, False),  # nothing to verify with
        ("tok", None, True, True, False),  # VOICE_ALLOW_UNSIGNED: in, unsigned
    ],
)
def test_unsigned_forged_and_misdirected_upgrades_are_refused(
    token: str, given: str | None, allow: bool, accepted: bool, signed: bool
) -> None:
    urls = signed_urls("wss://voice.example.com", "", 8765, "voice.example.com", "/")
    if given == "forged":
        given = sign("another token", "wss://voice.example.com")
    elif given == "elsewhere":
        given = sign("tok", "wss://attacker.example.com")
    verdict = check_upgrade(token, urls, given, allow)
    assert (verdict.accepted, verdict.signed) == (accepted, signed)


@pytest.mark.parametrize("host", ["[abc", "a:b", "", "x y"])
def test_a_host_header_no_url_can_have_is_refused_not_an_error(host: str) -> None:
    urls = signed_urls("", "", 8765, host, "/")
    given = sign("tok", "wss://chat.example.com:8765")
    assert not check_upgrade("tok", urls, given, False).accepted
