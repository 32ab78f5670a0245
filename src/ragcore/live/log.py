"""The execution log's fingerprint of the values an action ran with.

The log never holds the values (an order number or an e-mail address is the customer's),
only an HMAC of them under a key of the service's: two runs with the same values have
the same hash, so the owner sees repeats, and nobody without the key can test a guessed
value against it. The key is derived from ADDON_ENCRYPTION_KEY in ragio
(``ragio.live.keys.live_hash_key``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence


def values_hash(values: Sequence[tuple[str, str]], key: bytes) -> str:
    """HMAC-SHA256, in hex, of ``values`` as canonical JSON: the list of ``[name,
    value]`` pairs sorted, no spaces, text as UTF-8 (the order the values come in does
    not matter)."""
    canonical = json.dumps(sorted(values), separators=(",", ":"), ensure_ascii=False)
    return hmac.new(key, canonical.encode("utf-8"), hashlib.sha256).hexdigest()
