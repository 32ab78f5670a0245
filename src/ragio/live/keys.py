"""The key of the execution log's values hash (``ragcore.live.log.values_hash``).

Derived from ADDON_ENCRYPTION_KEY: live actions query data sources, whose credentials
need that key, so a service that runs them has it; and it is a secret, so a logged hash
cannot be tested against guessed values (an order number or a phone number is short
enough to guess from a plain hash) by whoever reads the log. A new key (a rotation)
gives new hashes: runs logged before it no longer compare with later ones.
"""

from __future__ import annotations

import hashlib

from ragcore.settings import Settings

CONTEXT = b"ragchat live values\0"


def live_hash_key(settings: Settings) -> bytes:
    """SHA-256 of a fixed context and ADDON_ENCRYPTION_KEY. Never fails: logging a run
    must not fail an answer (without the key no data source can be read anyway)."""
    return hashlib.sha256(CONTEXT + settings.addon_encryption_key.encode("utf-8")).digest()
