"""SQL for roles. Every value is bound as a parameter, never formatted.

The nine built-in roles are seeded with ``INSERT … ON CONFLICT DO NOTHING``: two first
calls at the same moment both insert, the primary key makes the second wait and skip,
and there are exactly nine. Seeding never overwrites a role the owner has edited.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import psycopg

from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.editing import EmployeePatch, apply_patch, follow_defaults
from ragcore.employees.memory import seed_memories
from ragcore.employees.roles import BUILT_IN_ROLES, Role
from ragio.employees import memory

_COLUMNS = "identifier, display_name, personality, channels, skill_tags, autonomy"
_SELECT = f"SELECT {_COLUMNS}, created_at, updated_at FROM roles"


@attrs.frozen
class StoredRole:
    role: Role
    created_at: datetime
    updated_at: datetime
    created: bool = False  # True when this call created it


def _stored(row: Sequence[Any], created: bool = False) -> StoredRole:
    role = Role(
        identifier=row[0],
        display_name=row[1],
        personality=row[2],
        channels=row[3],
        skill_tags=row[4],
        autonomy=row[5],
    )
    return StoredRole(role, row[6], row[7], created)


def seed_roles(conn: psycopg.Connection) -> None:
    """Insert the built-in roles that are not stored yet, each with its starter memory
    seeds (stored by the call that inserted the role, so a seed the owner deleted never
    comes back); leave the others as they are."""
    stored = conn.execute(
        "SELECT count(*) FROM roles WHERE identifier = ANY (%s)", (list(BUILT_IN_ROLES),)
    ).fetchone()[0]
    if stored == len(BUILT_IN_ROLES):
        return
    with conn.transaction():
        for role in BUILT_IN.values():
            inserted = conn.execute(
                f"""INSERT INTO roles ({_COLUMNS}, built_in)
                    VALUES (%s, %s, %s, %s, %s, %s, true)
                    ON CONFLICT (identifier) DO NOTHING
                    RETURNING identifier""",
                (
                    role.identifier,
                    role.display_name,
                    role.personality,
                    list(role.channels),
                    list(role.skill_tags),
                    role.autonomy,
                ),
            ).fetchone()
            if inserted is not None:
                memory.insert_seeds(conn, role.identifier, seed_memories(role.memory_seeds))


def follow_built_in_defaults(conn: psycopg.Connection) -> list[str]:
    """Bring the stored built-in roles up to the code's defaults in every field the owner
    has not edited (``follow_defaults``); the identifiers changed. Run at start-up."""
    changed = []
    with conn.transaction():
        rows = conn.execute(
            f"{_SELECT.replace(' FROM', ', edited FROM')} WHERE built_in FOR UPDATE"
        ).fetchall()
        for row in rows:
            stored = _stored(row[:8]).role
            default = BUILT_IN.get(stored.identifier)
            if default is None:
                continue
            wanted = follow_defaults(stored, default, row[8])
            if wanted == stored:
                continue
            conn.execute(
                """UPDATE roles SET display_name = %s, personality = %s, channels = %s,
                       skill_tags = %s, autonomy = %s
                   WHERE identifier = %s""",
                (
                    wanted.display_name,
                    wanted.personality,
                    list(wanted.channels),
                    list(wanted.skill_tags),
                    wanted.autonomy,
                    wanted.identifier,
                ),
            )
            changed.append(stored.identifier)
    return changed


def list_roles(conn: psycopg.Connection) -> list[StoredRole]:
    """Every role, seeding the built-in ones first: built-in in their order, then runtime
    roles oldest first."""
    seed_roles(conn)
    rows = conn.execute(
        f"""{_SELECT}
            ORDER BY built_in DESC, array_position(%s::text[], identifier), created_at,
                     identifier""",
        (list(BUILT_IN_ROLES),),
    ).fetchall()
    return [_stored(row) for row in rows]


def get_role(conn: psycopg.Connection, identifier: str) -> StoredRole | None:
    """The stored role, or None. A built-in role asked for before the first listing is
    seeded first, so it is there whichever endpoint is called first."""
    row = conn.execute(f"{_SELECT} WHERE identifier = %s", (identifier,)).fetchone()
    if row is None and identifier in BUILT_IN_ROLES:
        seed_roles(conn)
        row = conn.execute(f"{_SELECT} WHERE identifier = %s", (identifier,)).fetchone()
    return _stored(row) if row else None


def role_identifiers(conn: psycopg.Connection) -> list[str]:
    return [stored.role.identifier for stored in list_roles(conn)]


def patch_role(conn: psycopg.Connection, identifier: str, patch: EmployeePatch) -> StoredRole:
    """Apply ``patch`` to the stored role (locked while merging, so two edits do not undo
    each other), or create the runtime role ``identifier`` from it. ``apply_patch`` decides
    what is allowed; InvalidInput from it writes nothing."""
    if identifier in BUILT_IN_ROLES:
        seed_roles(conn)
    for _ in range(3):  # a concurrent create of the same new role: the loser edits it
        with conn.transaction():
            row = conn.execute(
                f"{_SELECT} WHERE identifier = %s FOR UPDATE", (identifier,)
            ).fetchone()
            existing = _stored(row).role if row else None
            role = apply_patch(identifier, existing, patch)
            values = (
                role.display_name,
                role.personality,
                list(role.channels),
                list(role.skill_tags),
                role.autonomy,
                identifier,
            )
            if existing is not None:
                row = conn.execute(
                    """UPDATE roles SET display_name = %s, personality = %s, channels = %s,
                           skill_tags = %s, autonomy = %s, updated_at = now(),
                           edited = ARRAY(SELECT DISTINCT unnest(edited || %s::text[]))
                       WHERE identifier = %s
                       RETURNING identifier, display_name, personality, channels,
                           skill_tags, autonomy, created_at, updated_at""",
                    (*values[:-1], sorted(patch.given()), identifier),
                ).fetchone()
                return _stored(row)
            row = conn.execute(
                f"""INSERT INTO roles (display_name, personality, channels, skill_tags,
                        autonomy, identifier, built_in)
                    VALUES (%s, %s, %s, %s, %s, %s, false)
                    ON CONFLICT (identifier) DO NOTHING
                    RETURNING {_COLUMNS}, created_at, updated_at""",
                values,
            ).fetchone()
            if row is not None:
                return _stored(row, created=True)
    raise RuntimeError(f"role {identifier!r} kept changing while being saved")
