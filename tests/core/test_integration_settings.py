"""A data source's settings judged as they are saved (``ragcore.integrations.settings``):
what the connector would refuse at every use is a 422 naming the field, before anything is
stored; a secret's value never appears in the reason."""

from __future__ import annotations

import pytest

from ragcore.errors import InvalidInput
from ragcore.integrations.kinds import KINDS, check_new, check_patch
from ragcore.integrations.settings import settings_refusal

REST = {
    "name": "crm",
    "source_type": "rest_api",
    "base_url": "https://api.example.com",
    "records_path": "/customers",
}
SECRET = "tok-8d1f0c2e"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**REST, "auth_header": f"Bearer {SECRET}"}, "auth_header"),
        ({**REST, "auth_header": f": {SECRET}"}, "auth_header"),
        ({**REST, "base_url": "ftp://api.example.com"}, "base_url"),
        ({**REST, "base_url": "api.example.com"}, "base_url"),
        ({**REST, "base_url": "http://api.example.com"}, "base_url"),
        ({**REST, "base_url": f"https://u:{SECRET}@api.example.com"}, "base_url"),
        (
            {"name": "m", "source_type": "mysql", "url": "postgresql://u:p@h/db", "table": "t"},
            "url",
        ),
        (
            {"name": "m", "source_type": "mysql", "url": f"mysql://u:{SECRET}@h", "table": "t"},
            "url",
        ),
        ({"name": "p", "source_type": "postgresql", "url": "mysql://h/db", "table": "t"}, "url"),
        (
            {
                "name": "p",
                "source_type": "postgresql",
                "host": "h",
                "user": "u",
                "database": "d",
                "table": "a.b.c",
            },
            "table",
        ),
        (
            {
                "name": "g",
                "source_type": "mongodb",
                "url": "http://h",
                "database": "d",
                "collection": "c",
            },
            "url",
        ),
        (
            {
                "name": "h",
                "source_type": "hubspot",
                "access_token": SECRET,
                "api_base": "http://api.example.com",
            },
            "api_base",
        ),
        (
            {
                "name": "s",
                "source_type": "salesforce",
                "client_id": "c",
                "client_secret": SECRET,
                "username": "u",
            },
            "password",
        ),
        (
            {
                "name": "s",
                "source_type": "salesforce",
                "client_id": "c",
                "client_secret": SECRET,
                "password": SECRET,
            },
            "username",
        ),
        (
            {
                "name": "s",
                "source_type": "salesforce",
                "client_id": "c",
                "client_secret": SECRET,
                "sobject": "Contact; DROP",
            },
            "sobject",
        ),
        (
            {
                "name": "s",
                "source_type": "salesforce",
                "client_id": "c",
                "client_secret": SECRET,
                "login_url": "login.salesforce.com",
            },
            "login_url",
        ),
        (
            {
                "name": "y",
                "source_type": "shopify",
                "shop_domain": "not a domain",
                "access_token": SECRET,
            },
            "shop_domain",
        ),
        (
            {
                "name": "y",
                "source_type": "shopify",
                "shop_domain": "x.myshopify.com",
                "access_token": SECRET,
                "api_version": "latest",
            },
            "api_version",
        ),
        (
            {
                "name": "y",
                "source_type": "shopify",
                "shop_domain": "x.myshopify.com",
                "access_token": SECRET,
                "resource": "products",
            },
            "resource",
        ),
        (
            {
                "name": "q",
                "source_type": "google_sheets",
                "service_account_json": SECRET,
                "sheet_id": "abc",
            },
            "service_account_json",
        ),
        (
            {"name": "t", "source_type": "stripe", "secret_key": SECRET, "resource": "charges"},
            "resource",
        ),
    ],
)
def test_a_setting_the_connector_cannot_use_is_refused_naming_its_field(body, field):
    with pytest.raises(InvalidInput) as refused:
        check_new(body)
    assert refused.value.field == field
    assert refused.value.message.startswith(f"{field}: ")  # the problem's detail
    assert SECRET not in str(refused.value)


def test_usable_settings_of_every_kind_pass():
    for body in [
        {**REST, "auth_header": "Authorization: Bearer tok"},
        {**REST, "base_url": "http://127.0.0.1:8080"},  # a test server, with the setting
        {"name": "m", "source_type": "mysql", "url": "mysql://u:p@h:3306/db", "table": "s.t"},
        {
            "name": "p",
            "source_type": "postgresql",
            "url": "postgres://h/db?sslmode=require",
            "table": "t",
        },
        {
            "name": "s",
            "source_type": "salesforce",
            "client_id": "c",
            "client_secret": "s",
            "username": "u",
            "password": "p",
            "security_token": "t",
        },
        {
            "name": "y",
            "source_type": "shopify",
            "shop_domain": "x.myshopify.com",
            "access_token": "t",
            "api_version": "unstable",
            "resource": "orders",
        },
        {"name": "t", "source_type": "stripe", "secret_key": "sk_test"},
        {"name": "c", "source_type": "csv", "content": "a\n1\n"},
    ]:
        check_new(body)


def test_a_patch_is_judged_on_its_merged_result_and_only_when_it_changes_credentials():
    kind = KINDS["rest_api"]
    stored = {"base_url": "https://api.example.com", "records_path": "/c"}
    with pytest.raises(InvalidInput) as refused:
        check_patch(kind, {"auth_header": "Bearer tok"}, stored)
    assert refused.value.field == "auth_header"
    salesforce = KINDS["salesforce"]
    stored = {"client_id": "c", "client_secret": "s", "username": "u", "password": "p"}
    with pytest.raises(InvalidInput) as refused:
        check_patch(salesforce, {"password": None}, stored)
    assert refused.value.field == "password"
    # a rename leaves credentials stored earlier as they are (they are not judged again)
    old = {"base_url": "https://api.example.com", "records_path": "/c", "auth_header": "Bearer"}
    check_patch(kind, {"name": "renamed"}, old)


def test_every_kind_has_a_rule_set_and_a_reason_never_quotes_a_secret():
    assert settings_refusal("csv", {"content": "a\n"}) is None
    refused = settings_refusal("rest_api", {"auth_header": f"Bearer {SECRET}"})
    assert refused is not None and SECRET not in refused[1]
