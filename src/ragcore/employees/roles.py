"""Role identifiers and the nine built-in roles."""

from __future__ import annotations

import re

from ragcore.errors import InvalidInput

BUILT_IN_ROLES = (
    "manager",
    "secretary",
    "ceo",
    "sales",
    "support",
    "hr",
    "finance",
    "marketing",
    "operations",
)
_IDENTIFIER = re.compile(r"^[a-z0-9_-]{1,64}$")
IDENTIFIER_RULE = "lowercase letters, digits, _ and -, at most 64 characters"


def check_role_identifier(value: object) -> str:
    if not isinstance(value, str) or not _IDENTIFIER.match(value):
        raise InvalidInput("role", f"must be a role identifier: {IDENTIFIER_RULE}")
    return value
