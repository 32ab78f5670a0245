"""The database data sources' pure rules: names split and checked, where to connect, rows
as JSON-shaped records, reasons without secrets."""

from __future__ import annotations

import datetime
import decimal
import json

import pytest

from ragcore.integrations.databases import (
    BadAddress,
    address_of,
    json_shaped,
    secrets_of,
    server_name,
    without_secrets,
)
from ragcore.integrations.identifiers import (
    MYSQL,
    POSTGRESQL,
    BadIdentifier,
    TableName,
    column_name,
    mysql_quoted,
    split_table,
)

# --- names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("customers", TableName(None, "customers")),
        ("crm.customers", TableName("crm", "customers")),
        ("my table", TableName(None, "my table")),
        ("we`ird\"na'me", TableName(None, "we`ird\"na'me")),
        ('"my.table"', TableName(None, "my.table")),
        ('crm."a.b"', TableName("crm", "a.b")),
        ("`a.b`.`c``d`", TableName("a.b", "c`d")),
        ('"say ""hi"""', TableName(None, 'say "hi"')),
        (
            "customers; DROP TABLE customers; --",
            TableName(None, "customers; DROP TABLE customers; --"),
        ),
    ],
)
def test_table_names_split_into_their_parts(text: str, expected: TableName) -> None:
    assert split_table(text, POSTGRESQL) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty name"),
        ("crm.", "empty name"),
        (".customers", "empty name"),
        ("a.b.c", "a table or schema.table"),
        ('"unclosed', "not closed"),
        ('"a"b', "unexpected text after the quoted name"),
        ("nul\0here", "NUL"),
        ("x" * 64, "longer than the server takes"),
        ("é" * 32, "longer than the server takes"),  # 64 bytes in UTF-8
    ],
)
def test_a_table_name_that_cannot_be_one_is_refused(text: str, says: str) -> None:
    with pytest.raises(BadIdentifier) as refused:
        split_table(text, POSTGRESQL)
    assert says in refused.value.reason
    assert refused.value.reason.startswith("table")


def test_mysql_takes_64_characters() -> None:
    assert split_table("x" * 64, MYSQL).table == "x" * 64
    with pytest.raises(BadIdentifier):
        split_table("x" * 65, MYSQL)


def test_a_key_column_is_one_name() -> None:
    assert column_name("id", MYSQL) == "id"
    assert column_name('"a.b"', MYSQL) == "a.b"
    with pytest.raises(BadIdentifier) as refused:
        column_name("t.id", MYSQL)
    assert refused.value.reason.startswith("key_column must be one column's name")


def test_mysql_quoting_doubles_backticks() -> None:
    assert mysql_quoted("plain") == "`plain`"
    assert mysql_quoted("a`b") == "`a``b`"
    assert mysql_quoted("x` ; DROP TABLE t; --") == "`x`` ; DROP TABLE t; --`"


# --- where to connect ---------------------------------------------------------------------


def test_an_address_from_fields() -> None:
    address = address_of(
        {"host": "db", "port": "3307", "user": "u", "password": "hunter2", "database": "crm"},
        ("mysql",),
    )
    assert (address.host, address.port, address.user, address.password, address.database) == (
        "db",
        3307,
        "u",
        "hunter2",
        "crm",
    )
    assert "hunter2" not in repr(address)


def test_an_address_from_a_url_decodes_its_user_and_password() -> None:
    address = address_of(
        {"url": "mysql://sh%40p:pa%2Fss%25@db.example:3307/my%20db", "port": "3306"},
        ("mysql", "mariadb"),
    )
    assert (address.host, address.port, address.user, address.password, address.database) == (
        "db.example",
        3307,
        "sh@p",
        "pa/ss%",
        "my db",
    )
    assert (
        address_of({"url": "mariadb://u:p@db/crm", "port": "3306"}, ("mysql", "mariadb")).port
        == 3306
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://u:p@db/crm", "url must begin with mysql://"),
        ("mysql://u:p@db/crm?ssl-mode=REQUIRED", "url options"),
        ("mysql://u:p@db:99999/crm", "port"),
        ("mysql://u:p@db", "must name a host and a database"),
    ],
)
def test_a_url_that_cannot_be_used_is_refused_without_its_password(url: str, says: str) -> None:
    with pytest.raises(BadAddress) as refused:
        address_of({"url": url, "port": "3306"}, ("mysql",))
    assert says in refused.value.reason
    assert "p@db" not in refused.value.reason


# --- reasons ------------------------------------------------------------------------------


def test_every_form_of_a_secret_is_masked() -> None:
    credentials = {
        "url": "mysql://shop:S3cret%2Fpw@db/crm",
        "password": "other-pw",
        "user": "shop",
    }
    secrets = secrets_of(credentials, ["url", "password"])
    reason = "failed for mysql://shop:S3cret%2Fpw@db/crm with S3cret/pw,\n S3cret%2Fpw and other-pw"
    shown = without_secrets(reason, secrets)
    assert shown == "failed for ******** with ********, ******** and ********"
    assert "shop" in without_secrets("user shop", secrets)  # not a secret


def test_server_names() -> None:
    assert server_name("10.11.6-MariaDB-0+deb12u1", "MySQL") == "MariaDB 10.11.6"
    assert server_name("5.5.5-10.11.6-MariaDB", "MySQL") == "MariaDB 10.11.6"
    assert server_name("8.0.36", "MySQL") == "MySQL 8.0.36"
    assert server_name("8.0.36-0ubuntu0.22.04.1", "MySQL") == "MySQL 8.0.36"


# --- records ------------------------------------------------------------------------------


def test_rows_become_json_shaped() -> None:
    row = {
        "id": 7,
        "ok": True,
        "price": decimal.Decimal("12345678901234567.89"),
        "at": datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC),
        "day": datetime.date(2024, 5, 6),
        "time": datetime.time(7, 8),
        "took": datetime.timedelta(minutes=1, seconds=30),
        "blob": b"\x00\xff",
        "view": memoryview(b"ab"),
        "ratio": float("nan"),
        "tags": ("a", "b"),
        "nested": {1: [decimal.Decimal("1.5"), None]},
        "other": complex(1, 2),
    }
    shaped = json_shaped(row)
    assert shaped == {
        "id": 7,
        "ok": True,
        "price": "12345678901234567.89",
        "at": "2024-05-06T07:08:09+00:00",
        "day": "2024-05-06",
        "time": "07:08:00",
        "took": 90.0,
        "blob": "AP8=",
        "view": "YWI=",
        "ratio": "nan",
        "tags": ["a", "b"],
        "nested": {"1": ["1.5", None]},
        "other": "(1+2j)",
    }
    json.dumps(shaped, allow_nan=False)


def test_a_caller_shapes_its_own_types() -> None:
    class Token:
        def __init__(self, hex_text: str):
            self.hex = hex_text

    def other(value: object) -> object:
        return value.hex if isinstance(value, Token) else value

    assert json_shaped({"_id": Token("abc"), "list": [Token("d")]}, other) == {
        "_id": "abc",
        "list": ["d"],
    }
    assert json_shaped({"x": object.__new__(Token)}, lambda v: v)["x"].startswith("<")
