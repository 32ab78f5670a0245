"""Finding the role a question is answered as, for /chat, /chat/stream and ``ragchat ask``."""

from __future__ import annotations

import psycopg

from ragcore.employees.roles import Role, check_role_identifier
from ragio.db.pool import Database
from ragio.employees import store


class UnknownRole(LookupError):
    """No role by that identifier; the message lists the known ones."""

    def __init__(self, identifier: str, known: list[str]):
        self.identifier = identifier
        self.known = known
        super().__init__(f"unknown role {identifier!r}; known roles: {', '.join(known)}")


def _find(conn: psycopg.Connection, identifier: str) -> tuple[Role | None, list[str]]:
    found = store.get_role(conn, identifier)
    if found is not None:
        return found.role, []
    return None, store.role_identifiers(conn)


async def stored_role(database: Database, identifier: str) -> Role:
    """The stored role (built-in or runtime); InvalidInput for a malformed identifier,
    UnknownRole for one that is not stored: never a silent fallback to no role."""
    check_role_identifier(identifier)
    role, known = await database.run(_find, identifier)
    if role is None:
        raise UnknownRole(identifier, known)
    return role
