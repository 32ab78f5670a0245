"""An action's query template, one form per kind of data source, checked when it is saved.

The template is the only safety boundary (SPEC rule 9), so it is read here once, when the
owner saves it, and refused with a reason naming what to change; what is kept is already
in the form the runner binds: a customer's value never becomes query text.

- SQL (mysql, postgresql): one statement, SELECT, UPDATE, INSERT or DELETE, whose
  ``{placeholders}`` stand bare where a value goes. It becomes the text with the drivers'
  named parameters (``%(email)s``, as psycopg and PyMySQL both take them; every other
  ``%`` doubled, since both read ``%`` in the text once parameters are given) and the
  list of parameter names.
- mongodb: a JSON filter document whose string values may be exactly ``"{name}"``: the
  value replaces the whole string as a BSON value, never text inside one.
- rest_api: ``/path/{order_id}?email={email}``, each placeholder URL-encoded into its path
  segment or query value when bound.
- the SaaS kinds and csv: a search on one field equal to one placeholder,
  ``email = {email}`` (or ``{"field": "email", "equals": "{email}"}``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import attrs

from ragcore.errors import InvalidInput
from ragcore.live.extraction import PLACEHOLDERS

FIELD = "template"
MAX_TEMPLATE_CHARS = 10_000
MAX_DEPTH = 20
SQL_KINDS = ("mysql", "postgresql")
SEARCH_KINDS = ("hubspot", "salesforce", "shopify", "google_sheets", "stripe", "csv")
VERBS = ("SELECT", "UPDATE", "INSERT", "DELETE")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: a run of SQL that is neither a word nor the start of a literal, comment or placeholder
_OTHER = re.compile(r"[^'\"`;{$#\-/A-Za-z_]+|.", re.DOTALL)
_KNOWN = ", ".join("{" + name + "}" for name in PLACEHOLDERS)


@attrs.frozen
class SqlTemplate:
    """``text`` with ``%(name)s`` parameters; ``params``: their names, each once, in order;
    ``verb``: SELECT, UPDATE, INSERT or DELETE."""

    text: str
    params: tuple[str, ...]
    verb: str
    words: tuple[str, ...]  # the names the statement mentions, for auto-matching

    @property
    def writes(self) -> bool:
        return self.verb != "SELECT"


@attrs.frozen
class Slot:
    """Where a value goes in a MongoDB filter: the whole value, as a BSON value."""

    name: str


@attrs.frozen
class MongoTemplate:
    """A filter document (JSON values, with ``Slot``s where values go)."""

    filter: Any
    params: tuple[str, ...]
    words: tuple[str, ...]
    writes: bool = False


@attrs.frozen
class RestTemplate:
    """A path and query: each a sequence of parts, text as written or a ``Slot``."""

    path: tuple[tuple[str | Slot, ...], ...]  # the segments after the leading /
    query: tuple[tuple[str, tuple[str | Slot, ...]], ...]
    params: tuple[str, ...]
    words: tuple[str, ...]
    writes: bool = False


@attrs.frozen
class SearchTemplate:
    """Records whose ``field`` equals the value of ``param``."""

    field: str
    param: str
    words: tuple[str, ...]
    writes: bool = False

    @property
    def params(self) -> tuple[str, ...]:
        return (self.param,)


Template = SqlTemplate | MongoTemplate | RestTemplate | SearchTemplate


def check_template(kind: str, value: Any) -> Template:
    """The template of an action on a source of ``kind``, checked; ``InvalidInput``
    naming ``template`` with the reason otherwise."""
    if kind in SQL_KINDS:
        return check_sql(_text(value), mysql=kind == "mysql")
    if kind == "mongodb":
        return check_mongo(value)
    if kind == "rest_api":
        return check_rest(_text(value))
    if kind in SEARCH_KINDS:
        return check_search(value)
    raise InvalidInput("source_type", f"no live query for a source of type {kind!r}")


# --- SQL ------------------------------------------------------------------------------


def check_sql(template: str, *, mysql: bool) -> SqlTemplate:
    """One SQL statement with bare placeholders, as a bound query (see the module)."""
    out: list[str] = []
    params: list[str] = []
    words: list[str] = []
    at, end = 0, len(template)
    while at < end:
        char = template[at]
        word = _WORD.match(template, at)
        e_string = word is not None and word.group(0) in ("e", "E")
        e_string = e_string and template.startswith("'", at + 1)
        if char in "'\"`" or e_string:
            stop = _literal_end(template, at, mysql)
            literal = template[at:stop]
            _refuse_quoted_placeholder(literal)
            out.append(literal.replace("%", "%%"))
            at = stop
        elif word is not None:
            words.append(word.group(0))
            out.append(word.group(0))
            at = word.end()
        elif (
            template.startswith("--", at)
            or template.startswith("/*", at)
            or (mysql and char == "#")
        ):
            raise InvalidInput(
                FIELD, "remove the comment (-- …, /* … */ or #): a template holds no comments"
            )
        elif char == "$" and not mysql and (dollar := _dollar_tag(template, at)):
            close = template.find(dollar, at + len(dollar))
            if close < 0:
                raise InvalidInput(FIELD, f"the quote {dollar} is not closed")
            literal = template[at : close + len(dollar)]
            _refuse_quoted_placeholder(literal)
            out.append(literal.replace("%", "%%"))
            at = close + len(dollar)
        elif char == ";":
            if template[at + 1 :].strip():
                raise InvalidInput(FIELD, "must be one statement: remove the ; and what follows it")
            at = end
        elif char == "{":
            match = _PLACEHOLDER.match(template, at)
            if match is None:
                raise InvalidInput(
                    FIELD, f"a brace outside quotes must be a placeholder: one of {_KNOWN}"
                )
            name = _known(match.group(1))
            out.append(f"%({name})s")
            if name not in params:
                params.append(name)
            at = match.end()
        else:
            run = _OTHER.match(template, at)
            assert run is not None
            out.append(run.group(0).replace("%", "%%"))
            at = run.end()
    text = "".join(out).strip()
    verb = _verb(text, words)
    return SqlTemplate(text, tuple(params), verb, _name_words(words, sql=True))


def _literal_end(text: str, start: int, mysql: bool) -> int:
    """Where the quoted literal or identifier at ``start`` ends (just past its quote). A
    doubled quote is one; a backslash escapes the next character in MySQL strings and in
    PostgreSQL's E'…' strings."""
    escaped = text[start] in "eE"
    at = start + 1 if escaped else start
    quote_char = text[at]
    # MySQL strings, in single or double quotes (without ANSI_QUOTES), and E'…'
    backslash = escaped or (mysql and quote_char != "`")
    at += 1
    while at < len(text):
        if backslash and text[at] == "\\":
            at += 2
            continue
        if text[at] == quote_char:
            if text[at + 1 : at + 2] == quote_char:
                at += 2
                continue
            return at + 1
        at += 1
    raise InvalidInput(FIELD, f"a quote {quote_char} is not closed")


def _dollar_tag(text: str, at: int) -> str | None:
    match = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$").match(text, at)
    return match.group(0) if match else None


def _refuse_quoted_placeholder(literal: str) -> None:
    for match in _PLACEHOLDER.finditer(literal):
        if match.group(1) in PLACEHOLDERS:
            name = match.group(1)
            raise InvalidInput(
                FIELD,
                f"write {{{name}}} bare, without quotes around it: its value is bound as a "
                f"parameter, never written into the text ({match.group(0)} inside quotes "
                "would be taken literally)",
            )


def _verb(text: str, words: list[str]) -> str:
    first = re.match(r"[\s(]*([A-Za-z]+)", text)
    if not first:
        raise InvalidInput(FIELD, "must be an SQL statement: SELECT, UPDATE, INSERT or DELETE")
    verb = first.group(1).upper()
    if verb not in VERBS:
        raise InvalidInput(
            FIELD, f"must begin with SELECT, UPDATE, INSERT or DELETE, not {verb[:20]}"
        )
    if verb == "SELECT" and "into" in (word.lower() for word in words):
        raise InvalidInput(FIELD, "SELECT … INTO writes a table or a file: use INSERT")
    return verb


# --- MongoDB --------------------------------------------------------------------------


def check_mongo(value: Any) -> MongoTemplate:
    """A filter document: a JSON object (or its text); see the module."""
    if isinstance(value, str):
        if len(value) > MAX_TEMPLATE_CHARS:
            raise InvalidInput(FIELD, f"is longer than {MAX_TEMPLATE_CHARS} characters")
        try:
            value = json.loads(value)
        except ValueError as error:
            raise InvalidInput(FIELD, f"must be a JSON filter document: {error}") from None
    if not isinstance(value, Mapping):
        raise InvalidInput(FIELD, 'must be a filter document, e.g. {"email": "{email}"}')
    params: list[str] = []
    words: list[str] = []
    filter_ = _mongo_value(value, params, words, 0)
    return MongoTemplate(filter_, tuple(params), _name_words(words))


def _mongo_value(value: Any, params: list[str], words: list[str], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise InvalidInput(FIELD, f"is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if _PLACEHOLDER.search(key):
                raise InvalidInput(FIELD, f"a field name cannot be a placeholder ({key[:40]})")
            if key in ("$where", "$function", "$accumulator"):
                raise InvalidInput(FIELD, f"{key} runs JavaScript on the server: not accepted")
            if not key.startswith("$"):
                words.append(key)
            out[key] = _mongo_value(item, params, words, depth + 1)
        return out
    if isinstance(value, list):
        return [_mongo_value(item, params, words, depth + 1) for item in value]
    if isinstance(value, str) and (inner := _PLACEHOLDER.search(value)):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole is None:
            raise InvalidInput(
                FIELD,
                f'a placeholder must be the whole value, as "{inner.group(0)}": the value '
                "is substituted as a BSON value, never into a string",
            )
        name = _known(whole.group(1))
        if name not in params:
            params.append(name)
        return Slot(name)
    return value


def bind_filter(template: MongoTemplate, values: Mapping[str, str]) -> Any:
    """The filter with each ``Slot`` replaced by its value (a string, as a BSON value)."""

    def bind(value: Any) -> Any:
        if isinstance(value, Slot):
            return values[value.name]
        if isinstance(value, dict):
            return {key: bind(item) for key, item in value.items()}
        if isinstance(value, list):
            return [bind(item) for item in value]
        return value

    return bind(template.filter)


# --- rest_api -------------------------------------------------------------------------


def check_rest(template: str) -> RestTemplate:
    """``/path/{order_id}?key={email}``: a path under the source's base URL."""
    template = re.sub(r"^GET\s+", "", template.strip(), flags=re.IGNORECASE)
    if not template.startswith("/") or template.startswith("//") or "://" in template:
        raise InvalidInput(
            FIELD,
            "must be a path under the source's base URL, starting with /, e.g. /orders/{order_id}",
        )
    if "#" in template or re.search(r"\s", template):
        raise InvalidInput(FIELD, "a path holds no spaces and no # fragment")
    path_text, _, query_text = template.partition("?")
    params: list[str] = []
    words: list[str] = []
    path: list[tuple[str | Slot, ...]] = []
    for segment in path_text[1:].split("/"):
        if segment in (".", ".."):
            raise InvalidInput(FIELD, "a path holds no . or .. segments")
        path.append(_parts(segment, params, words))
    query: list[tuple[str, tuple[str | Slot, ...]]] = []
    for pair in filter(None, query_text.split("&")):
        key, _, value = pair.partition("=")
        if not key or _PLACEHOLDER.search(key):
            raise InvalidInput(FIELD, f"a query parameter needs a fixed name ({pair[:40]})")
        words.append(key)
        query.append((key, _parts(value, params, words)))
    return RestTemplate(tuple(path), tuple(query), tuple(params), _name_words(words))


def _parts(text: str, params: list[str], words: list[str]) -> tuple[str | Slot, ...]:
    if "{" in _PLACEHOLDER.sub("", text) or "}" in _PLACEHOLDER.sub("", text):
        raise InvalidInput(FIELD, f"a brace must be part of a placeholder: one of {_KNOWN}")
    parts: list[str | Slot] = []
    at = 0
    for match in _PLACEHOLDER.finditer(text):
        if match.start() > at:
            parts.append(text[at : match.start()])
        name = _known(match.group(1))
        if name not in params:
            params.append(name)
        parts.append(Slot(name))
        at = match.end()
    if at < len(text):
        parts.append(text[at:])
    words.extend(part for part in parts if isinstance(part, str))
    return tuple(parts)


def rest_target(template: RestTemplate, values: Mapping[str, str]) -> str:
    """The path and query, each value URL-encoded (``/`` and ``?`` included, and a value
    that is all dots, so it cannot climb the path)."""

    def encode(parts: tuple[str | Slot, ...]) -> str:
        out = []
        for part in parts:
            if isinstance(part, Slot):
                value = quote(values[part.name], safe="")
                out.append(value.replace(".", "%2E") if set(value) <= {"."} else value)
            else:
                out.append(part)
        return "".join(out)

    path = "/" + "/".join(encode(segment) for segment in template.path)
    query = "&".join(f"{key}={encode(parts)}" for key, parts in template.query)
    return f"{path}?{query}" if query else path


# --- the SaaS kinds and csv -----------------------------------------------------------


def check_search(value: Any) -> SearchTemplate:
    """``field = {placeholder}`` (or a mapping with ``field`` and ``equals``)."""
    if isinstance(value, Mapping):
        field, equals = value.get("field"), value.get("equals")
        if (
            set(value) - {"field", "equals"}
            or not isinstance(field, str)
            or not isinstance(equals, str)
        ):
            raise InvalidInput(FIELD, 'must be {"field": "<field name>", "equals": "{email}"}')
    elif isinstance(value, str):
        field, sep, equals = value.partition("=")
        if not sep:
            raise InvalidInput(FIELD, "must be a search on one field: <field> = {email}")
    else:
        raise InvalidInput(FIELD, "must be a search on one field: <field> = {email}")
    field, equals = field.strip(), equals.strip()
    if not re.fullmatch(r"[^\s{}\x00][^{}\x00]{0,199}", field):
        raise InvalidInput(FIELD, "the field must be a field's name (no braces), at most 200")
    whole = _PLACEHOLDER.fullmatch(equals)
    if whole is None:
        raise InvalidInput(FIELD, f"the field must equal one placeholder, one of {_KNOWN}")
    return SearchTemplate(field, _known(whole.group(1)), _name_words([field]))


# --- shared ---------------------------------------------------------------------------


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(FIELD, "must be text: the query, with placeholders such as {email}")
    if len(value) > MAX_TEMPLATE_CHARS:
        raise InvalidInput(FIELD, f"is longer than {MAX_TEMPLATE_CHARS} characters")
    if "\0" in value:
        raise InvalidInput(FIELD, "cannot hold a NUL character")
    return value


def _known(name: str) -> str:
    if name not in PLACEHOLDERS:
        raise InvalidInput(FIELD, f"unknown placeholder {{{name}}}: use {_KNOWN}")
    return name


_SQL_WORDS = frozenset(
    """select from where and or not in is null like ilike update set insert into values
    delete limit order by group having as on join left right inner outer full cross
    distinct asc desc returning case when then else end between exists union all any
    true false coalesce lower upper count sum min max avg cast with offset""".split()
)
_SHORT = frozenset({"id", "no", "nr"})


def _name_words(names: list[str], *, sql: bool = False) -> tuple[str, ...]:
    """The words of the names mentioned (``order_status`` and ``orderStatus``: order,
    status), lower-case, SQL's own words left out: what auto-matching compares."""
    out: list[str] = []
    for name in names:
        if sql and name.lower() in _SQL_WORDS:
            continue
        spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
        for word in re.findall(r"[A-Za-z]+", spaced):
            word = word.lower()
            if len(word) > 2 and word not in _SHORT and word not in out:
                out.append(word)
    return tuple(out)
