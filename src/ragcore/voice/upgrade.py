"""Who may open the media stream: the telephony provider signs the WebSocket upgrade with
``X-Twilio-Signature`` over the stream URL it was given (no parameters), so a stranger who
learns the port cannot talk to the answering pipeline or run up the speech bill.

The URL the provider signed is the one the voice webhook handed out
(``ragcore.voice.media.stream_url``), however a proxy rewrote it on the way here: the
configured VOICE_PUBLIC_URL exactly, or that URL with the path this server saw. Without
one configured it was derived from the host the provider called, so the upgrade's own
Host header gives it back (as wss, or ws when no TLS is in front).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from ragcore.channels.messages import Verification
from ragcore.channels.telco import check_signature
from ragcore.voice.media import stream_url


def signed_urls(
    voice_public_url: str, public_base_url: str, voice_port: int, host: str, path: str
) -> list[str]:
    """The URLs the provider may have signed for an upgrade to ``path`` at ``host`` (the
    upgrade's Host header, which only matters when no public URL is configured)."""
    bases = []
    schemes = ("https",) if voice_public_url or public_base_url else ("https", "http")
    for scheme in schemes:
        try:
            bases.append(
                stream_url(voice_public_url, public_base_url, f"{scheme}://{host}/", voice_port)
            )
        except ValueError:  # a Host header no URL can have: nothing was signed for it
            continue
    urls = []
    for base in bases:
        parts = urlsplit(base)
        urls.append(base)
        urls.append(urlunsplit(parts._replace(path=path or "/")))
        prefix = parts.path.rstrip("/")
        if prefix and not (path or "/").startswith(prefix + "/"):
            urls.append(urlunsplit(parts._replace(path=prefix + (path or "/"))))
    return list(dict.fromkeys(urls))


def check_upgrade(
    auth_token: str, urls: list[str], given: str | None, allow_unsigned: bool
) -> Verification:
    """The upgrade's signature against every URL the provider may have signed."""
    verdict = Verification.refused("no URL to check")
    for url in urls:
        verdict = check_signature(auth_token, url, (), given, allow_unsigned=False)
        if verdict.accepted:
            return verdict
    return check_signature(auth_token, urls[0], (), given, allow_unsigned) if urls else verdict
