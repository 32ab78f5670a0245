"""The execution log's values hash: an HMAC, the same for the same values in any order,
different under another key, never the values themselves."""

from __future__ import annotations

import hashlib
import hmac

from ragcore.live.log import values_hash

KEY = b"k" * 32


def test_the_hash_is_an_hmac_of_the_sorted_values_as_canonical_json() -> None:
    values = (("order_id", "4411"), ("email", "ada@example.com"))
    expected = hmac.new(
        KEY, b'[["email","ada@example.com"],["order_id","4411"]]', hashlib.sha256
    ).hexdigest()
    assert values_hash(values, KEY) == expected
    assert values_hash(tuple(reversed(values)), KEY) == expected
    assert len(expected) == 64 and "4411" not in expected


def test_other_values_or_another_key_give_another_hash() -> None:
    one = values_hash((("order_id", "4411"),), KEY)
    assert one != values_hash((("order_id", "4412"),), KEY)
    assert one != values_hash((("order_id", "4411"),), b"other key")
    assert one != values_hash((("phone", "4411"),), KEY)
    # text as UTF-8, unescaped: the same value always hashes the same
    accented = values_hash((("email", "zoë@example.com"),), KEY)
    canonical = '[["email","zoë@example.com"]]'.encode()
    assert accented == hmac.new(KEY, canonical, hashlib.sha256).hexdigest()


def test_no_values_hash_too() -> None:
    assert values_hash((), KEY) == hmac.new(KEY, b"[]", hashlib.sha256).hexdigest()
