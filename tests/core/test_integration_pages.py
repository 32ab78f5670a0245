"""The HTTP data sources' pages, errors, retries and next-page rules, without a server."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from ragcore.integrations import google_auth
from ragcore.integrations.pages import (
    Page,
    Throttled,
    Unusable,
    header_range,
    hubspot_error,
    hubspot_page,
    link_next,
    masked,
    reason,
    rest_error,
    rest_page,
    retry_wait,
    salesforce_error,
    salesforce_page,
    salesforce_token_form,
    same_origin,
    sheet_records,
    shopify_error,
    shopify_page,
    soql,
    stripe_error,
    stripe_page,
)


def test_hubspot_page_and_its_cursor() -> None:
    body = {
        "results": [{"id": "1", "properties": {"email": "a@x.org"}}],
        "paging": {"next": {"after": "NTI1Cg%3D%3D", "link": "https://api.hubapi.com/…"}},
    }
    assert hubspot_page(body) == Page([body["results"][0]], "NTI1Cg%3D%3D")
    assert hubspot_page({"results": []}).next is None
    with pytest.raises(Unusable):
        hubspot_page({"status": "error"})
    assert hubspot_error({"status": "error", "message": "Authentication credentials not found."})


def test_salesforce_pages_end_when_done_and_lose_their_attributes() -> None:
    row = {"attributes": {"type": "Contact", "url": "/x"}, "Id": "003", "Email": "a@x.org"}
    more = {
        "done": False,
        "nextRecordsUrl": "/services/data/v62.0/query/01g-2000",
        "records": [row],
    }
    assert salesforce_page(more) == Page(
        [{"Id": "003", "Email": "a@x.org"}], more["nextRecordsUrl"]
    )
    assert salesforce_page({**more, "done": True}).next is None
    assert (
        salesforce_error(
            {"error": "invalid_client", "error_description": "invalid client credentials"}
        )
        == "invalid client credentials (invalid_client)"
    )
    assert (
        salesforce_error(
            [{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]
        )
        == "INVALID_SESSION_ID: Session expired or invalid"
    )


def test_salesforce_flows_and_soql() -> None:
    both = {"client_id": "id", "client_secret": "s"}
    assert salesforce_token_form(both)["grant_type"] == "client_credentials"
    form = salesforce_token_form(
        {**both, "username": "u@x", "password": "pw", "security_token": "TK"}
    )
    assert form == {
        "grant_type": "password",
        "client_id": "id",
        "client_secret": "s",
        "username": "u@x",
        "password": "pwTK",
    }
    assert soql("Contact", "Id, Name , Account.Name", 1) == (
        "SELECT Id, Name, Account.Name FROM Contact LIMIT 1"
    )
    with pytest.raises(Unusable, match="not a field"):
        soql("Contact", "Id FROM User --", None)


def test_shopify_pages_errors_and_throttling() -> None:
    body = {
        "data": {
            "customers": {
                "nodes": [{"id": "gid://shopify/Customer/1"}],
                "pageInfo": {"hasNextPage": True, "endCursor": "eyJsYXN0X2lkIjoxfQ"},
            }
        }
    }
    assert shopify_page(body, "customers") == Page(
        [{"id": "gid://shopify/Customer/1"}], "eyJsYXN0X2lkIjoxfQ"
    )
    throttled = {
        "errors": [{"message": "Throttled", "extensions": {"code": "THROTTLED"}}],
        "extensions": {
            "cost": {
                "requestedQueryCost": 202,
                "actualQueryCost": None,
                "throttleStatus": {
                    "maximumAvailable": 2000,
                    "currentlyAvailable": 2,
                    "restoreRate": 100,
                },
            }
        },
    }
    assert shopify_page(throttled, "customers") == Throttled(2.0)
    with pytest.raises(Unusable, match="Field 'nope' doesn't exist"):
        shopify_page(
            {"errors": [{"message": "Field 'nope' doesn't exist on type 'Customer'"}]}, "customers"
        )
    assert shopify_error({"errors": "[API] Invalid API key or access token"}) == (
        "[API] Invalid API key or access token"
    )


def test_stripe_pages_continue_after_the_last_id() -> None:
    body = {"object": "list", "data": [{"id": "cus_1"}, {"id": "cus_2"}], "has_more": True}
    assert stripe_page(body).next == "cus_2"
    assert stripe_page({**body, "has_more": False}).next is None
    error = {
        "error": {
            "type": "invalid_request_error",
            "message": "Invalid API Key provided: sk_test_****1234",
        }
    }
    assert stripe_error(error) == "Invalid API Key provided: sk_test_****1234"


def test_sheet_rows_become_records_named_by_the_first_row() -> None:
    values = [["email", "name", ""], ["a@x.org", "Ann"], [], ["b@x.org", "Bo", "vip", "extra"]]
    assert sheet_records(values) == [
        {"email": "a@x.org", "name": "Ann", "column_3": ""},
        {"email": "b@x.org", "name": "Bo", "column_3": "vip", "column_4": "extra"},
    ]
    assert sheet_records(None) == []
    assert header_range("Sheet1!A1:D100") == "Sheet1!A1:D2"
    assert header_range("'My sheet'!B5:C") == "'My sheet'!B5:C6"
    assert header_range("A:D") == "A1:D2"
    assert header_range("Sheet1") == "Sheet1!1:2"


def test_rest_pages_by_link_body_url_or_cursor() -> None:
    link = '<https://api.x.org/c?page=3>; rel="last", <https://api.x.org/c?page=2>; rel="next"'
    assert link_next(link) == "https://api.x.org/c?page=2"
    assert rest_page([{"id": 1}], None, link).next_url == "https://api.x.org/c?page=2"
    assert (
        rest_page({"results": [{"id": 1}], "next": "/c?page=2"}, None, None).next_url == "/c?page=2"
    )
    assert rest_page({"items": [1], "links": {"next": "/c?p=2"}}, None, None).records == [
        {"value": 1}
    ]
    page = rest_page({"data": {"rows": [{"id": 1}]}, "next_cursor": "abc"}, "data.rows", None)
    assert (page.records, page.cursor) == ([{"id": 1}], "abc")
    assert rest_page({"records": [], "next_cursor": None}, None, None).cursor is None
    with pytest.raises(Unusable, match="records_key"):
        rest_page({"total": 3}, None, None)
    assert rest_error({"error": {"message": "bad token"}}) == "bad token"
    assert rest_error({"detail": "Not found"}) == "Not found"


def test_next_pages_stay_on_the_base_origin() -> None:
    base = "https://api.x.org"
    assert same_origin(base, "/c?page=2", "X") == "https://api.x.org/c?page=2"
    assert same_origin(base, "https://api.x.org/c", "X") == "https://api.x.org/c"
    for elsewhere in (
        "https://evil.example/c",
        "http://api.x.org/c",
        "https://api.x.org:444/c",
        "//evil.example/c",
    ):
        with pytest.raises(Unusable, match="another origin"):
            same_origin(base, elsewhere, "X")


def test_only_429_and_503_are_waited_out_a_bounded_number_of_times() -> None:
    assert retry_wait(1, 429, "2", None) == 2.0
    assert retry_wait(1, 503, None, None) == 1.0
    assert retry_wait(4, 429, "0", None) is None
    assert retry_wait(1, 500, "0", None) is None
    assert retry_wait(1, 401, None, None) is None
    assert retry_wait(1, 429, "120", None) is None  # beyond the bound: given up
    date = "Wed, 21 Oct 2026 07:28:00 GMT"
    assert retry_wait(1, 503, "Wed, 21 Oct 2026 07:28:05 GMT", date) == 5.0


def test_reasons_never_carry_a_credential() -> None:
    secret = "sk_test_51HfakeKEYabcdef1234"
    text = reason("Stripe", 401, f"Invalid API Key provided: {secret}", [secret])
    assert secret not in text and text == "Stripe: HTTP 401: Invalid API Key provided: ****"
    assert "pat-na1-" not in masked("token pat-na1-11111111-2222-3333 refused")
    assert (
        masked("Invalid API Key provided: sk_test_****1234")
        == "Invalid API Key provided: sk_test_****1234"
    )
    assert "shpat_" not in masked("bad shpat_0123456789abcdef0123")
    assert len(reason("X", 500, "y" * 1000)) == 300


def _key_file(key: rsa.RSAPrivateKey) -> str:
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return json.dumps(
        {
            "type": "service_account",
            "client_email": "reader@p.iam.gserviceaccount.com",
            "private_key_id": "k1",
            "private_key": pem,
            "token_uri": "https://oauth2.googleapis.com/token",
        }
    )


def _b64decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def test_service_account_assertion_is_an_rs256_jwt_the_public_key_verifies() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    account = google_auth.service_account(_key_file(key))
    now = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
    token = google_auth.assertion(account, now)
    header, claims, signature = token.split(".")
    key.public_key().verify(
        _b64decode(signature), f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256()
    )
    assert json.loads(_b64decode(header)) == {"alg": "RS256", "typ": "JWT", "kid": "k1"}
    assert json.loads(_b64decode(claims)) == {
        "iss": "reader@p.iam.gserviceaccount.com",
        "scope": "https://www.googleapis.com/auth/spreadsheets.readonly",
        "aud": "https://oauth2.googleapis.com/token",
        "iat": int(now.timestamp()),
        "exp": int(now.timestamp()) + 3600,
    }
    with pytest.raises(Unusable, match="no private_key"):
        google_auth.service_account('{"client_email": "a", "token_uri": "https://t"}')
