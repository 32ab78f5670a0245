"""Table and column names of the owner's database, split and checked before a connector
quotes them.

A name the owner typed is never formatted into SQL as raw text: it is split here into its
parts (``table`` or ``schema.table``), each part checked (not empty, no NUL character,
within the server's length limit), and the connector then quotes each part as the driver
or the dialect says (``psycopg.sql.Identifier``; ``mysql_quoted`` below). A part may be
wrapped in double quotes or backticks to hold a dot (``"my.table"``; a quote inside is
doubled, as in SQL); otherwise every character is the name's own, spaces and quotes
included.
"""

from __future__ import annotations

import attrs

QUOTES = ('"', "`")


class BadIdentifier(ValueError):
    """The name cannot name a table or column; ``reason`` says why, naming the field."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@attrs.frozen
class Limits:
    """What a dialect takes in one identifier."""

    max_chars: int
    max_bytes: int  # in UTF-8


#: PostgreSQL truncates a longer name to NAMEDATALEN - 1 = 63 bytes (and would then name
#: another table): refuse it instead
POSTGRESQL = Limits(max_chars=63, max_bytes=63)
#: MySQL and MariaDB: 64 characters
MYSQL = Limits(max_chars=64, max_bytes=64 * 4)


@attrs.frozen
class TableName:
    schema: str | None
    table: str

    def parts(self) -> tuple[str, ...]:
        return (self.table,) if self.schema is None else (self.schema, self.table)

    def __str__(self) -> str:
        return ".".join(self.parts())


def split_table(text: str, limits: Limits, field: str = "table") -> TableName:
    """``table`` or ``schema.table`` as its parts; ``BadIdentifier`` naming ``field``
    when it is not one."""
    parts = _split(text, field)
    if len(parts) > 2:
        raise BadIdentifier(
            f"{field} must be a table or schema.table; quote a name that holds a dot "
            '(e.g. "my.table")'
        )
    for part in parts:
        _check(part, limits, field)
    return TableName(parts[0], parts[1]) if len(parts) == 2 else TableName(None, parts[0])


def column_name(text: str, limits: Limits, field: str = "key_column") -> str:
    """One column's name (quotes as in ``split_table``; no schema or table before it)."""
    parts = _split(text, field)
    if len(parts) != 1:
        raise BadIdentifier(
            f'{field} must be one column\'s name; quote one that holds a dot ("a.b")'
        )
    _check(parts[0], limits, field)
    return parts[0]


def mysql_quoted(name: str) -> str:
    """A checked name as a MySQL/MariaDB quoted identifier: in backticks, each backtick
    doubled (this holds in every SQL mode, ANSI_QUOTES included)."""
    if "\0" in name:
        raise BadIdentifier("a name cannot hold a NUL character")
    return "`" + name.replace("`", "``") + "`"


def _split(text: str, field: str) -> list[str]:
    parts: list[str] = []
    at = 0
    while True:
        if at < len(text) and text[at] in QUOTES:
            part, at = _quoted(text, at, field)
            if at < len(text) and text[at] != ".":
                raise BadIdentifier(f"{field}: unexpected text after the quoted name {part!r}")
        else:
            end = text.find(".", at)
            end = len(text) if end == -1 else end
            part, at = text[at:end], end
        parts.append(part)
        if at >= len(text):
            return parts
        at += 1  # the dot
        if at == len(text):
            parts.append("")
            return parts


def _quoted(text: str, start: int, field: str) -> tuple[str, int]:
    """The name quoted from ``start`` (a doubled quote is one) and where it ends."""
    quote = text[start]
    name: list[str] = []
    at = start + 1
    while at < len(text):
        if text[at] == quote:
            if text[at + 1 : at + 2] == quote:
                name.append(quote)
                at += 2
                continue
            return "".join(name), at + 1
        name.append(text[at])
        at += 1
    raise BadIdentifier(f"{field}: a quote {quote} is not closed")


def _check(part: str, limits: Limits, field: str) -> None:
    if not part:
        raise BadIdentifier(f"{field} has an empty name in it")
    if "\0" in part:
        raise BadIdentifier(f"{field} cannot hold a NUL character")
    if len(part) > limits.max_chars or len(part.encode()) > limits.max_bytes:
        raise BadIdentifier(
            f"{field}: the name {part[:20]!r}… is longer than the server takes "
            f"({limits.max_chars} characters)"
        )
