"""Query templates, checked when saved: what is kept is the bound query; every refusal
names the template and says what to change."""

from __future__ import annotations

import pytest

from ragcore.errors import InvalidInput
from ragcore.live.templates import (
    MongoTemplate,
    RestTemplate,
    SearchTemplate,
    Slot,
    SqlTemplate,
    bind_filter,
    check_template,
    rest_target,
)


def sql(text: str, kind: str = "postgresql") -> SqlTemplate:
    template = check_template(kind, text)
    assert isinstance(template, SqlTemplate)
    return template


def refused(kind: str, value: object) -> str:
    with pytest.raises(InvalidInput) as error:
        check_template(kind, value)
    assert error.value.field == "template"
    return error.value.message


def test_a_select_becomes_named_driver_parameters() -> None:
    template = sql("SELECT status FROM orders WHERE id = {order_id} AND email = {email};")
    assert template.text == (
        "SELECT status FROM orders WHERE id = %(order_id)s AND email = %(email)s"
    )
    assert template.params == ("order_id", "email")
    assert template.verb == "SELECT"
    assert not template.writes


def test_a_placeholder_used_twice_is_one_parameter() -> None:
    template = sql("SELECT * FROM t WHERE a = {email} OR b = {email}", "mysql")
    assert template.params == ("email",)
    assert template.text.count("%(email)s") == 2


@pytest.mark.parametrize("verb", ["UPDATE", "INSERT", "DELETE"])
def test_writes_are_accepted(verb: str) -> None:
    text = {
        "UPDATE": "UPDATE orders SET status = 'cancelled' WHERE id = {order_id}",
        "INSERT": "INSERT INTO callbacks (phone) VALUES ({phone})",
        "DELETE": "delete from carts where email = {email}",
    }[verb]
    template = sql(text)
    assert template.verb == verb
    assert template.writes


def test_a_literal_percent_is_doubled_for_the_driver() -> None:
    template = sql("SELECT * FROM p WHERE name LIKE 'sale%' AND email = {email} AND 5 % 2 = 1")
    assert template.text == (
        "SELECT * FROM p WHERE name LIKE 'sale%%' AND email = %(email)s AND 5 %% 2 = 1"
    )


def test_a_semicolon_or_brace_inside_quotes_is_text() -> None:
    template = sql("SELECT * FROM n WHERE note = 'a; b {x}' AND email = {email}")
    assert template.params == ("email",)
    assert "'a; b {x}'" in template.text


def test_a_doubled_or_escaped_quote_does_not_end_the_string() -> None:
    assert sql("SELECT * FROM n WHERE a = 'it''s; ok' AND e = {email}").params == ("email",)
    assert sql(r"SELECT * FROM n WHERE a = 'it\'s; ok' AND e = {email}", "mysql").params == (
        "email",
    )
    assert sql(r"SELECT * FROM n WHERE a = E'it\'s; ok' AND e = {email}").params == ("email",)


def test_a_dollar_quoted_string_is_text_in_postgresql() -> None:
    assert sql("SELECT $$a;b$$ AS x FROM t WHERE e = {email}").params == ("email",)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("SELECT 1; DROP TABLE orders", "one statement"),
        ("SELECT * FROM o WHERE email = '{email}'", "write {email} bare"),
        ('SELECT * FROM o WHERE email = "{email}"', "write {email} bare"),
        ("SELECT * FROM o -- where is it", "comment"),
        ("SELECT * FROM o /* x */ WHERE id = {order_id}", "comment"),
        ("DROP TABLE orders", "SELECT, UPDATE, INSERT or DELETE"),
        ("WITH d AS (DELETE FROM o RETURNING *) SELECT * FROM d", "SELECT, UPDATE"),
        ("SELECT * FROM o WHERE id = {customer}", "unknown placeholder {customer}"),
        ("SELECT * FROM o WHERE id = { order_id }", "must be a placeholder"),
        ("SELECT * INTO backup FROM orders", "use INSERT"),
        ("SELECT * FROM o WHERE a = 'open", "not closed"),
        ("", "must be text"),
        ("x" * 10_001, "longer than"),
    ],
)
def test_a_bad_sql_template_is_refused_with_its_reason(text: str, reason: str) -> None:
    assert reason in refused("postgresql", text)


def test_a_hash_is_a_comment_in_mysql() -> None:
    assert "comment" in refused("mysql", "SELECT * FROM o # WHERE 1")


def test_the_names_a_statement_mentions_are_its_words() -> None:
    template = sql("SELECT order_status, trackingNumber FROM shop.orders WHERE id = {order_id}")
    assert template.words == ("order", "status", "tracking", "number", "shop", "orders")


def test_a_mongodb_filter_keeps_values_whole() -> None:
    template = check_template(
        "mongodb", '{"email": "{email}", "$or": [{"orderId": "{order_id}"}], "open": true}'
    )
    assert isinstance(template, MongoTemplate)
    assert template.filter == {
        "email": Slot("email"),
        "$or": [{"orderId": Slot("order_id")}],
        "open": True,
    }
    bound = bind_filter(template, {"email": '{"$ne": null}', "order_id": "4411"})
    assert bound == {"email": '{"$ne": null}', "$or": [{"orderId": "4411"}], "open": True}
    assert template.words == ("email", "order", "open")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ('{"name": "Mr {email}"}', 'must be the whole value, as "{email}"'),
        ('{"email": "{mail}"}', "unknown placeholder {mail}"),
        ('{"{email}": 1}', "field name cannot be a placeholder"),
        ('{"$where": "this.a == 1", "e": "{email}"}', "JavaScript"),
        ("[1]", "filter document"),
        ("{not json", "JSON"),
    ],
)
def test_a_bad_mongodb_filter_is_refused(value: str, reason: str) -> None:
    assert reason in refused("mongodb", value)


def test_a_rest_path_encodes_each_value() -> None:
    template = check_template("rest_api", "/orders/{order_id}?email={email}&expand=items")
    assert isinstance(template, RestTemplate)
    assert template.params == ("order_id", "email")
    target = rest_target(template, {"order_id": "../admin?x=1", "email": "a+b@x.com"})
    assert target == "/orders/..%2Fadmin%3Fx%3D1?email=a%2Bb%40x.com&expand=items"
    assert rest_target(template, {"order_id": "..", "email": "a"}).startswith("/orders/%2E%2E?")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("https://evil.example/orders/{order_id}", "starting with /"),
        ("orders/{order_id}", "starting with /"),
        ("/orders/../admin", ". or .."),
        ("/orders?{email}=1", "fixed name"),
        ("/orders/{id}", "unknown placeholder {id}"),
        ("/orders/{order_id}#top", "fragment"),
    ],
)
def test_a_bad_rest_template_is_refused(value: str, reason: str) -> None:
    assert reason in refused("rest_api", value)


@pytest.mark.parametrize("kind", ["hubspot", "salesforce", "shopify", "stripe", "csv"])
def test_a_saas_search_is_one_field_equal_to_one_placeholder(kind: str) -> None:
    template = check_template(kind, "Email = {email}")
    assert template == SearchTemplate("Email", "email", ("email",))
    assert check_template(kind, {"field": "phone", "equals": "{phone}"}).params == ("phone",)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("email", "one field"),
        ("email = x@y.com", "one placeholder"),
        ("email = {email} {phone}", "one placeholder"),
        ({"field": "email"}, '"equals"'),
        ("{email} = {email}", "no braces"),
    ],
)
def test_a_bad_saas_search_is_refused(value: object, reason: str) -> None:
    assert reason in refused("google_sheets", value)


def test_an_unknown_kind_is_refused_by_source_type() -> None:
    with pytest.raises(InvalidInput) as error:
        check_template("ftp", "x")
    assert error.value.field == "source_type"
