"""The HTTP data sources against fakes of their vendors on 127.0.0.1 speaking the
documented wire format: each kind's ``test`` answering or failing with the vendor's own
reason (no secret in it), every record read across several pages, 429/503 waited out,
plain http refused unless allowed, and next-page links to another origin refused."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from ragcore.integrations.addresses import targets
from ragcore.integrations.kinds import KINDS, with_defaults
from ragio.integrations.connectors import (
    FACTORIES,
    hubspot,
    rest,
    salesforce,
    sheets,
    shopify,
    stripe,
)
from ragio.integrations.connectors.addresses import source_client
from ragio.integrations.connectors.base import Connector, Reach, Record, SourceFailed
from tests.io.fakes.clock import FakeClock
from tests.io.fakes.google_sheets_server import FakeGoogleSheets, key_file, key_pair
from tests.io.fakes.hubspot_server import FakeHubSpot
from tests.io.fakes.rest_server import FakeRestApi
from tests.io.fakes.salesforce_server import FakeSalesforce
from tests.io.fakes.shopify_server import FakeShopify
from tests.io.fakes.stripe_server import FakeStripe

HUBSPOT_TOKEN = "pat-na1-11111111-2222-3333-4444-555555555555"
STRIPE_KEY = "sk_test_51Hfake0123456789abcdefKEY1234"
SHOPIFY_TOKEN = "shpat_0123456789abcdef0123456789abcdef"
SF_ID, SF_SECRET = "3MVG9fakeConsumerKey", "F4K3CONSUMERSECRET0123456789"
REST_TOKEN = "Bearer rest-token-0123456789"


#: the fakes are on 127.0.0.1: loopback addresses allowed (INTEGRATIONS_ALLOW_PRIVATE_TARGETS)
PRIVATE = targets(allow_private=True)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """The service's client for data sources: each connection judged and pinned."""
    async with source_client(Reach(5.0, True, targets=PRIVATE)) as http:
        yield http


@pytest.fixture
def reach(client: httpx.AsyncClient) -> Reach:
    return Reach(timeout=5.0, allow_http_loopback=True, client=client, targets=PRIVATE)


def creds(kind: str, **given: str) -> dict[str, str]:
    return with_defaults(KINDS[kind], given)


async def read_all(connector: Connector) -> list[list[Record]]:
    return [page async for page in connector.pages()]


async def failure(call: Any) -> str:
    with pytest.raises(SourceFailed) as failed:
        await call()
    return failed.value.reason


def no_secret(reason: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in reason


# ---------------------------------------------------------------- HubSpot


def on_hubspot(fake: FakeHubSpot, **more: str) -> dict[str, str]:
    return creds("hubspot", access_token=HUBSPOT_TOKEN, api_base=fake.base_url, **more)


async def test_hubspot_test_reads_one_contact_with_the_token(serve_fake, reach) -> None:
    fake = await serve_fake(FakeHubSpot(HUBSPOT_TOKEN, contacts=3))
    assert await hubspot.connect(on_hubspot(fake), reach).test() == "HubSpot: contacts readable"
    [sent] = fake.requests
    assert sent.path == "/crm/v3/objects/contacts" and sent.query["limit"] == ["1"]
    assert sent.headers["authorization"] == f"Bearer {HUBSPOT_TOKEN}"


async def test_hubspot_wrong_or_revoked_token_fails_with_hubspots_reason(serve_fake, reach) -> None:
    fake = await serve_fake(FakeHubSpot(HUBSPOT_TOKEN, contacts=1))
    wrong = creds("hubspot", access_token="pat-na1-99999999-0000", api_base=fake.base_url)
    reason = await failure(hubspot.connect(wrong, reach).test)
    assert reason.startswith("HubSpot: HTTP 401: Authentication credentials not found.")
    no_secret(reason, "pat-na1-99999999-0000")
    fake.revoked.add(HUBSPOT_TOKEN)
    assert "HTTP 401" in await failure(hubspot.connect(on_hubspot(fake), reach).test)


async def test_hubspot_reads_every_page_and_waits_out_a_429(serve_fake, reach) -> None:
    fake = await serve_fake(FakeHubSpot(HUBSPOT_TOKEN, contacts=250))
    fake.fail_next(429, retry_after="0")
    pages = await read_all(hubspot.connect(on_hubspot(fake), reach))
    assert [len(p) for p in pages] == [100, 100, 50]
    ids = [r["id"] for p in pages for r in p]
    assert len(set(ids)) == 250 and pages[0][0]["properties"]["email"] == "contact0@example.org"
    assert len(fake.requests) == 4  # the 429, then three pages


async def test_hubspot_unknown_object_and_plain_http(serve_fake, client) -> None:
    fake = await serve_fake(FakeHubSpot(HUBSPOT_TOKEN))
    loopback = Reach(5.0, True, client, targets=PRIVATE)
    reason = await failure(hubspot.connect(on_hubspot(fake, object_type="widgets"), loopback).test)
    assert reason == "HubSpot: HTTP 400: Unable to infer object type from: widgets"
    reason = await failure(
        hubspot.connect(on_hubspot(fake), Reach(5.0, False, client, targets=PRIVATE)).test
    )
    assert reason == "api_base must be an https:// URL, not http scheme"
    assert not fake.requests[1:]


# ---------------------------------------------------------------- Salesforce


def on_salesforce(fake: FakeSalesforce, **more: str) -> dict[str, str]:
    return creds(
        "salesforce", login_url=fake.base_url, client_id=SF_ID, client_secret=SF_SECRET, **more
    )


async def test_salesforce_client_credentials_then_one_row(serve_fake, reach) -> None:
    fake = await serve_fake(FakeSalesforce(SF_ID, SF_SECRET, contacts=3))
    assert (
        await salesforce.connect(on_salesforce(fake), reach).test()
        == "Salesforce: Contact readable"
    )
    assert fake.grants == ["client_credentials"]
    query = fake.requests[-1]
    assert query.path == "/services/data/v62.0/query"
    assert query.query["q"] == ["SELECT Id, Name, Email, Phone FROM Contact LIMIT 1"]


async def test_salesforce_username_password_flow_appends_the_security_token(
    serve_fake, reach
) -> None:
    fake = await serve_fake(
        FakeSalesforce(
            SF_ID, SF_SECRET, username="ops@example.org", password="pw", security_token="TOKEN1"
        )
    )
    given = on_salesforce(fake, username="ops@example.org", password="pw", security_token="TOKEN1")
    assert (await salesforce.connect(given, reach).test()).startswith(
        "Salesforce: Contact readable"
    )
    assert fake.grants == ["password"]
    wrong = {**given, "security_token": "OLD"}
    reason = await failure(salesforce.connect(wrong, reach).test)
    assert reason == "Salesforce: HTTP 400: authentication failure (invalid_grant)"


async def test_salesforce_wrong_secret_and_bad_field(serve_fake, reach) -> None:
    fake = await serve_fake(FakeSalesforce(SF_ID, SF_SECRET, contacts=1))
    reason = await failure(
        salesforce.connect({**on_salesforce(fake), "client_secret": "nope-secret"}, reach).test
    )
    assert reason == "Salesforce: HTTP 400: invalid client credentials (invalid_client)"
    reason = await failure(
        salesforce.connect(on_salesforce(fake, fields="Id, Shoe_Size"), reach).test
    )
    assert (
        reason
        == "Salesforce: HTTP 400: INVALID_FIELD: No such column 'Shoe_Size' on entity 'Contact'."
    )


async def test_salesforce_follows_next_records_url_until_done(serve_fake, reach) -> None:
    fake = await serve_fake(FakeSalesforce(SF_ID, SF_SECRET, contacts=20, batch=7))
    fake.fail_next(503, retry_after="0")
    pages = await read_all(salesforce.connect(on_salesforce(fake), reach))
    assert [len(p) for p in pages] == [7, 7, 6]
    assert pages[2][-1] == {
        "Id": "003000000000000019",
        "Name": "Contact 19",
        "Email": "contact19@example.org",
        "Phone": "+15550000019",
    }


async def test_salesforce_renews_a_session_that_expires_during_a_read(serve_fake, reach) -> None:
    fake = await serve_fake(FakeSalesforce(SF_ID, SF_SECRET, contacts=6, batch=2))
    pages = salesforce.connect(on_salesforce(fake), reach).pages()
    first = await pages.__anext__()
    fake.tokens.clear()  # the session expired
    rest_of_them = [page async for page in pages]
    assert [len(p) for p in [first, *rest_of_them]] == [2, 2, 2]
    assert fake.grants == ["client_credentials", "client_credentials"]


async def test_salesforce_refuses_a_next_page_or_instance_elsewhere(serve_fake, reach) -> None:
    fake = await serve_fake(FakeSalesforce(SF_ID, SF_SECRET, contacts=5, batch=2))
    fake.next_origin = "https://evil.example"
    reason = await failure(lambda: read_all(salesforce.connect(on_salesforce(fake), reach)))
    assert (
        reason == "Salesforce: the next page is on another origin (https://evil.example); refused"
    )
    fake.instance_url = "http://example.com"
    reason = await failure(salesforce.connect(on_salesforce(fake), reach).test)
    assert reason == "instance_url must be an https:// URL, not http scheme"


# ---------------------------------------------------------------- Shopify


def on_shopify(fake: FakeShopify, **more: str) -> dict[str, str]:
    return creds("shopify", shop_domain=fake.base_url, access_token=SHOPIFY_TOKEN, **more)


async def test_shopify_test_and_a_wrong_token(serve_fake, reach) -> None:
    fake = await serve_fake(FakeShopify(SHOPIFY_TOKEN, customers=2))
    assert await shopify.connect(on_shopify(fake), reach).test() == "Shopify: customers readable"
    [sent] = fake.requests
    assert sent.path == "/admin/api/2025-07/graphql.json"
    assert sent.headers["x-shopify-access-token"] == SHOPIFY_TOKEN
    assert sent.body["variables"] == {"first": 1, "after": None}
    wrong = {**on_shopify(fake), "access_token": "shpat_ffffffffffffffffffffffffffffffff"}
    reason = await failure(shopify.connect(wrong, reach).test)
    assert reason == (
        "Shopify: HTTP 401: [API] Invalid API key or access token (unrecognized login or "
        "wrong password)"
    )


async def test_shopify_reads_every_page_through_throttling(serve_fake, reach) -> None:
    fake = await serve_fake(FakeShopify(SHOPIFY_TOKEN, customers=230, orders=3))
    fake.throttle_next(2)
    pages = await read_all(shopify.connect(on_shopify(fake), reach))
    assert [len(p) for p in pages] == [100, 100, 30]
    assert len({r["id"] for p in pages for r in p}) == 230
    orders = await read_all(shopify.connect(on_shopify(fake, resource="orders"), reach))
    assert [o["name"] for o in orders[0]] == ["#1000", "#1001", "#1002"]


async def test_shopify_domain_and_plain_http(serve_fake, client) -> None:
    fake = await serve_fake(FakeShopify(SHOPIFY_TOKEN))
    reason = await failure(
        shopify.connect(on_shopify(fake), Reach(5.0, False, client, targets=PRIVATE)).test
    )
    assert reason == "shop_domain must be an https:// URL, not http scheme"
    odd = {**on_shopify(fake), "shop_domain": "shop.example/admin?x"}
    assert "must be a domain" in await failure(
        shopify.connect(odd, Reach(5.0, True, client, targets=PRIVATE)).test
    )
    bad = on_shopify(fake, resource="products")
    assert "customers, orders" in await failure(
        shopify.connect(bad, Reach(5.0, True, client, targets=PRIVATE)).test
    )


# ---------------------------------------------------------------- Google Sheets

HEADER = ["email", "name", "plan"]


@pytest.fixture
async def google(serve_fake) -> tuple[FakeGoogleSheets, Any]:
    key = key_pair()
    fake = await serve_fake(FakeGoogleSheets(key.public_key()))
    rows = [HEADER] + [[f"u{n}@example.org", f"User {n}", "pro"] for n in range(1201)]
    fake.add("sheet-1", {"Customers": rows, "Other": [["x"], ["1"]]})
    fake.add("private", {"Sheet1": [HEADER]}, shared=False)
    return fake, key


def on_sheets(fake: FakeGoogleSheets, key: Any, **more: str) -> dict[str, str]:
    return creds(
        "google_sheets",
        service_account_json=key_file(key, fake.token_uri),
        sheet_id="sheet-1",
        api_base=fake.base_url,
        **more,
    )


async def test_sheets_signs_in_with_the_jwt_and_reads_the_first_rows(google, reach) -> None:
    fake, key = google
    answer = await sheets.connect(on_sheets(fake, key), reach).test()
    assert answer == "Google Sheets: 'Customers' readable (3 columns)"
    [claims] = fake.assertions
    assert claims["aud"] == fake.token_uri
    assert claims["scope"] == "https://www.googleapis.com/auth/spreadsheets.readonly"
    assert fake.requests[-1].path == "/v4/spreadsheets/sheet-1/values/'Customers'!1:2"


async def test_sheets_reads_every_row_as_a_record(google, reach) -> None:
    fake, key = google
    pages = await read_all(sheets.connect(on_sheets(fake, key), reach))
    assert [len(p) for p in pages] == [500, 500, 201]
    assert pages[0][0] == {"email": "u0@example.org", "name": "User 0", "plan": "pro"}
    ranged = await read_all(sheets.connect(on_sheets(fake, key, range="Customers!A1:B3"), reach))
    assert ranged == [
        [
            {"email": "u0@example.org", "name": "User 0"},
            {"email": "u1@example.org", "name": "User 1"},
        ]
    ]


async def test_sheets_unknown_unshared_sheet_and_a_bad_signature(google, reach) -> None:
    fake, key = google
    unknown = {**on_sheets(fake, key), "sheet_id": "no-such-sheet"}
    reason = await failure(sheets.connect(unknown, reach).test)
    assert reason == "Google Sheets: HTTP 404: Requested entity was not found. (NOT_FOUND)"
    private = {**on_sheets(fake, key), "sheet_id": "private"}
    reason = await failure(sheets.connect(private, reach).test)
    assert (
        reason == "Google Sheets: HTTP 403: The caller does not have permission (PERMISSION_DENIED)"
    )
    forged = on_sheets(fake, key_pair())  # a key Google does not hold for this account
    reason = await failure(sheets.connect(forged, reach).test)
    assert reason == "Google Sheets: HTTP 400: Invalid JWT Signature. (invalid_grant)"


async def test_sheets_a_stale_clock_and_plain_http(google, client) -> None:
    fake, key = google
    stale = FakeClock(datetime.now(UTC) - timedelta(hours=2))
    reason = await failure(
        sheets.connect(on_sheets(fake, key), Reach(5.0, True, client, stale, targets=PRIVATE)).test
    )
    assert "Token must be a short-lived token" in reason
    reason = await failure(
        sheets.connect(on_sheets(fake, key), Reach(5.0, False, client, targets=PRIVATE)).test
    )
    assert reason == "token_uri must be an https:// URL, not http scheme"
    assert not fake.requests[1:]


# ---------------------------------------------------------------- Stripe


def on_stripe(fake: FakeStripe, key: str = STRIPE_KEY) -> dict[str, str]:
    return creds("stripe", secret_key=key, api_base=fake.base_url)


async def test_stripe_test_wrong_and_revoked_keys(serve_fake, reach) -> None:
    fake = await serve_fake(FakeStripe(STRIPE_KEY, customers=1))
    assert await stripe.connect(on_stripe(fake), reach).test() == "Stripe: customers readable"
    assert fake.requests[0].query["limit"] == ["1"]
    wrong = "sk_test_51Hfake0000000000000000WRONG9876"
    reason = await failure(stripe.connect(on_stripe(fake, wrong), reach).test)
    assert reason == "Stripe: HTTP 401: Invalid API Key provided: sk_test_****9876"
    no_secret(reason, wrong)
    fake.revoked.add(STRIPE_KEY)
    reason = await failure(stripe.connect(on_stripe(fake), reach).test)
    assert reason == "Stripe: HTTP 401: Expired API Key provided: sk_test_****1234"


async def test_stripe_pages_with_starting_after_and_rate_limits(serve_fake, reach) -> None:
    fake = await serve_fake(FakeStripe(STRIPE_KEY, customers=250))
    fake.fail_next(429, retry_after="0", times=2)
    pages = await read_all(stripe.connect(on_stripe(fake), reach))
    assert [len(p) for p in pages] == [100, 100, 50]
    assert len({c["id"] for p in pages for c in p}) == 250
    assert [r.query.get("starting_after") for r in fake.requests[2:]] == [
        None,
        ["cus_00000000000099"],
        ["cus_00000000000199"],
    ]


async def test_stripe_other_failures_are_not_retried(serve_fake, reach) -> None:
    fake = await serve_fake(FakeStripe(STRIPE_KEY, customers=1))
    fake.fail_next(500)
    reason = await failure(stripe.connect(on_stripe(fake), reach).test)
    assert reason == "Stripe: HTTP 500: Something went wrong on Stripe's end."
    assert len(fake.requests) == 1
    fake.fail_next(429, retry_after="3600")  # beyond the bound: given up, not waited
    assert "Too many requests" in await failure(stripe.connect(on_stripe(fake), reach).test)


# ---------------------------------------------------------------- any JSON API


def on_rest(fake: FakeRestApi, **more: str) -> dict[str, str]:
    return creds(
        "rest_api",
        base_url=fake.base_url,
        records_path="/v1/customers",
        auth_header=f"Authorization: {REST_TOKEN}",
        **more,
    )


@pytest.mark.parametrize("style", ["link", "next", "cursor", "nested"])
async def test_rest_follows_each_pagination_style_to_the_end(serve_fake, reach, style) -> None:
    fake = await serve_fake(FakeRestApi("Authorization", REST_TOKEN, 25, style=style))
    given = on_rest(fake, records_key="result.rows") if style == "nested" else on_rest(fake)
    pages = await read_all(rest.connect(given, reach))
    assert [len(p) for p in pages] == [10, 10, 5]
    assert [r["id"] for p in pages for r in p] == list(range(25))


async def test_rest_test_and_a_wrong_header_masked(serve_fake, reach) -> None:
    fake = await serve_fake(FakeRestApi("X-Api-Key", "k-0123456789", 3))
    given = {**on_rest(fake), "auth_header": "X-Api-Key: k-0123456789"}
    answer = await rest.connect(given, reach).test()
    assert answer == "REST API: /v1/customers readable (3 records on its first page)"
    wrong = {**given, "auth_header": "X-Api-Key: k-wrong-987654"}
    reason = await failure(rest.connect(wrong, reach).test)
    assert reason == "REST API: HTTP 401: Bad credentials: ****"


@pytest.mark.parametrize("style", ["link", "next", "nested"])
async def test_rest_refuses_a_next_page_on_another_origin(serve_fake, reach, style) -> None:
    fake = await serve_fake(FakeRestApi("Authorization", REST_TOKEN, 25, style=style))
    fake.next_origin = "http://127.0.0.2:9"
    given = on_rest(fake, records_key="result.rows") if style == "nested" else on_rest(fake)
    reason = await failure(lambda: read_all(rest.connect(given, reach)))
    assert reason == "REST API: the next page is on another origin (http://127.0.0.2:9); refused"
    assert len(fake.requests) == 1


async def test_rest_plain_http_and_waits(serve_fake, client) -> None:
    fake = await serve_fake(FakeRestApi("Authorization", REST_TOKEN, 5, style="next"))
    reason = await failure(
        rest.connect(on_rest(fake), Reach(5.0, False, client, targets=PRIVATE)).test
    )
    assert reason == "base_url must be an https:// URL, not http scheme"
    fake.fail_next(503, retry_after="0")
    pages = await read_all(rest.connect(on_rest(fake), Reach(5.0, True, client, targets=PRIVATE)))
    assert [len(p) for p in pages] == [5]
    unlisted = {**on_rest(fake), "records_key": "rows"}
    reason = await failure(rest.connect(unlisted, Reach(5.0, True, client, targets=PRIVATE)).test)
    assert reason == "REST API: the answer has no list in 'rows'"


async def test_rest_a_slow_page_a_captive_portal_and_a_redirect(serve_fake, client) -> None:
    fake = await serve_fake(FakeRestApi("Authorization", REST_TOKEN, 5, delay=2.0))
    reason = await failure(
        rest.connect(on_rest(fake), Reach(0.3, True, client, targets=PRIVATE)).test
    )
    assert reason == "REST API: no answer within 0.3 s"
    fake.delay = 0.0
    fake.garbage = "html"
    reason = await failure(
        rest.connect(on_rest(fake), Reach(5.0, True, client, targets=PRIVATE)).test
    )
    assert reason == "REST API: HTTP 200: the answer is not JSON"
    fake.garbage = None
    fake.redirect_to = "https://elsewhere.example/v1/customers"
    reason = await failure(
        rest.connect(on_rest(fake), Reach(5.0, True, client, targets=PRIVATE)).test
    )
    assert reason == (
        "REST API: HTTP 302: a redirect, which is not followed (is the base URL right?)"
    )
    assert len(fake.requests) == 3


# ---------------------------------------------------------------- where a source may be

HINT = "set INTEGRATIONS_ALLOW_PRIVATE_TARGETS=true to reach a data source on this host or LAN"


async def test_every_host_follows_the_address_rules(serve_fake) -> None:
    fake = await serve_fake(FakeRestApi("Authorization", REST_TOKEN, 5))
    strict = Reach(5.0, True)  # the settings' defaults, but plain http to 127.0.0.1
    reason = await failure(rest.connect(on_rest(fake), strict).test)
    assert reason == f"base_url: 127.0.0.1 is a loopback address; {HINT}"
    # a name is judged by what it resolves to, when connected to: this host's own name
    # (/etc/hosts) is loopback or private
    name, port = socket.gethostname(), urlsplit(fake.base_url).port
    named = {**on_rest(fake), "base_url": f"https://{name}:{port}"}
    reason = await failure(rest.connect(named, strict).test)
    assert reason.startswith(f"REST API: {name.lower()}: ") and reason.endswith(HINT), reason
    for metadata in ("https://169.254.169.254", "https://[fd00:ec2::254]", "https://metadata"):
        given = {**on_rest(fake), "base_url": metadata}
        reason = await failure(rest.connect(given, Reach(5.0, True, targets=PRIVATE)).test)
        assert reason.startswith("base_url: ") and "never go there" in reason, reason
    assert fake.requests == []


async def test_plain_http_is_logged_once_a_request(serve_fake, reach, caplog) -> None:
    fake = await serve_fake(FakeRestApi("Authorization", REST_TOKEN, 5))
    caplog.set_level("WARNING")
    await rest.connect(on_rest(fake), reach).test()
    warned = [r for r in caplog.records if "INTEGRATIONS_ALLOW_HTTP_LOOPBACK" in r.getMessage()]
    assert len(warned) == len(fake.requests) == 1


def test_every_kind_has_its_connector() -> None:
    assert set(FACTORIES) == set(KINDS)
