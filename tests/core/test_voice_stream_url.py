"""Where the voice webhook sends the provider's media stream (ragcore.voice.media.stream_url):
VOICE_PUBLIC_URL, else PUBLIC_BASE_URL's host on VOICE_PORT, else the request's own host."""

from __future__ import annotations

import pytest

from ragcore.voice.media import stream_url


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
