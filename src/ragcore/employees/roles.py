"""Role identifiers, autonomy levels and the ``Role`` record of an AI employee.

The nine built-in definitions live in ``ragcore.employees.builtin``; this module
keeps only their identifiers (``BUILT_IN_ROLES``) so it stays import-cheap for
the HTTP layer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

import attrs

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

# Autonomy for outbound actions (messages, emails, webhooks), least to most:
#   off  - the role never acts on its own; it only answers and drafts.
#   semi - the role proposes an action and the owner approves it (YES/NO) first.
#   full - the role carries out permitted actions (allow lists still apply) without asking.
Autonomy = Literal["off", "semi", "full"]
AUTONOMY_LEVELS: tuple[Autonomy, ...] = ("off", "semi", "full")
AUTONOMY_MEANINGS = {
    "off": "never acts on its own: it answers and drafts, and nothing is sent",
    "semi": "proposes outbound actions; each one waits for the owner's YES before it runs",
    "full": "carries out permitted outbound actions without asking (allow lists still apply)",
}


def check_role_identifier(value: object) -> str:
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        raise InvalidInput("role", f"must be a role identifier: {IDENTIFIER_RULE}")
    return value


def check_autonomy(value: object) -> Autonomy:
    for level in AUTONOMY_LEVELS:
        if value == level:
            return level
    raise InvalidInput("autonomy", f"must be one of: {', '.join(AUTONOMY_LEVELS)}")


def autonomy_rank(level: Autonomy) -> int:
    return AUTONOMY_LEVELS.index(level)


def _texts(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


@attrs.frozen
class Role:
    """An AI employee: who it is, how it speaks, where it works and how far it may act.

    ``personality`` is the fixed instruction block layered on top of the grounding
    instructions (never in place of them); ``skill_tags`` scope retrieval and feed
    the sensitivity check; ``memory_seeds`` are the starter owner instructions
    stored in the role's memory when the defaults are seeded.
    """

    identifier: str
    display_name: str
    personality: str
    channels: tuple[str, ...] = attrs.field(default=(), converter=_texts)
    skill_tags: tuple[str, ...] = attrs.field(default=(), converter=_texts)
    autonomy: Autonomy = "semi"
    memory_seeds: tuple[str, ...] = attrs.field(default=(), converter=_texts)

    @property
    def built_in(self) -> bool:
        return self.identifier in BUILT_IN_ROLES
