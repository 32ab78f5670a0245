"""A data source's credentials at rest: one Fernet token of their JSON.

Tokens are written with ``ADDON_ENCRYPTION_KEY`` and read with it or with
``ADDON_ENCRYPTION_KEY_PREVIOUS`` (a MultiFernet), so the key can be rotated: set the new
key with the old one as previous, run ``ragchat rekey`` (every token re-encrypted with the
new key), then drop the previous key. Credentials are never logged, returned or put in a
problem: a token that cannot be read is ``CredentialsUnreadable`` naming the data source
and both settings, and nothing of it is used.
"""

from __future__ import annotations

import json

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from ragcore.api.problems import ProblemError
from ragcore.settings import Settings

KEY_SETTINGS = "ADDON_ENCRYPTION_KEY (or ADDON_ENCRYPTION_KEY_PREVIOUS)"


class NoKey(ProblemError):
    """No ADDON_ENCRYPTION_KEY: credentials cannot be stored (503: the service needs it)."""

    def __init__(self) -> None:
        super().__init__(
            503,
            "data sources need ADDON_ENCRYPTION_KEY to encrypt their credentials: run "
            "`ragchat keygen`, set its output as ADDON_ENCRYPTION_KEY and restart",
        )


class CredentialsUnreadable(ProblemError):
    """A stored token no configured key opens (503: a key setting is wrong or missing)."""

    def __init__(self, name: str) -> None:
        self.source = name
        super().__init__(
            503,
            f"the credentials of data source {name!r} cannot be decrypted with "
            "ADDON_ENCRYPTION_KEY or ADDON_ENCRYPTION_KEY_PREVIOUS: set the key they were "
            "stored with (as ADDON_ENCRYPTION_KEY, or as ADDON_ENCRYPTION_KEY_PREVIOUS "
            "during a rotation), or enter the credentials again with PATCH",
        )


class Keys:
    """The configured keys: the current one writes, both read."""

    def __init__(self, current: str, previous: str = "") -> None:
        keys = [Fernet(key) for key in (current, previous) if key]
        self.writable = bool(current)
        self._fernet = MultiFernet(keys) if keys else None

    @classmethod
    def of(cls, settings: Settings) -> Keys:
        return cls(settings.addon_encryption_key, settings.addon_encryption_key_previous)

    def encrypt(self, credentials: dict[str, str]) -> str:
        if not self.writable or self._fernet is None:
            raise NoKey()
        text = json.dumps(credentials, sort_keys=True, ensure_ascii=False)
        return self._fernet.encrypt(text.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str, name: str) -> dict[str, str]:
        """The credentials in ``token``; CredentialsUnreadable naming the source ``name``."""
        if self._fernet is None:
            raise CredentialsUnreadable(name)
        try:
            data = json.loads(self._fernet.decrypt(token.encode("ascii")))
        except (InvalidToken, ValueError, UnicodeError):
            raise CredentialsUnreadable(name) from None
        if not isinstance(data, dict):
            raise CredentialsUnreadable(name)
        return {str(k): str(v) for k, v in data.items()}

    def rotate(self, token: str, name: str) -> str:
        """``token`` encrypted with the current key (its content unchanged)."""
        if not self.writable or self._fernet is None:
            raise NoKey()
        try:
            return self._fernet.rotate(token.encode("ascii")).decode("ascii")
        except (InvalidToken, ValueError, UnicodeError):
            raise CredentialsUnreadable(name) from None
