"""The certificates https targets and the mail server are checked against: the system's
authorities (certifi's bundle) plus, when ``ACTIONS_CA_BUNDLE`` names a PEM file, the
authorities in it (a private CA; the tests trust their own test CA this way)."""

from __future__ import annotations

import functools
import ssl

import certifi

from ragcore.settings import Settings


class CertificatesUnreadable(ValueError):
    """ACTIONS_CA_BUNDLE names a file that is not a readable PEM bundle."""


@functools.lru_cache(maxsize=8)
def tls_context(ca_bundle: str = "") -> ssl.SSLContext:
    """Verification against certifi's authorities plus those in ``ca_bundle``, if any."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_bundle:
        try:
            context.load_verify_locations(cafile=ca_bundle)
        except (OSError, ssl.SSLError) as error:
            raise CertificatesUnreadable(
                f"ACTIONS_CA_BUNDLE={ca_bundle!r} cannot be read as PEM certificates "
                f"({type(error).__name__})"
            ) from None
    return context


def settings_context(settings: Settings) -> ssl.SSLContext:
    return tls_context(settings.actions_ca_bundle.strip())
