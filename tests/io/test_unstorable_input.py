"""Text the database cannot hold (NUL, a lone surrogate) and JSON nested without end are
refused with a 4xx problem naming where they are, on every route and webhook, and
nothing is stored: before, each of these was a 500 (PostgreSQL refuses NUL, UTF-8
cannot encode a surrogate, and the json module recursed into a RecursionError)."""

from __future__ import annotations

import json
import time
from urllib.parse import quote, urlencode

import psycopg
import pytest
from nacl.encoding import HexEncoder
from nacl.signing import SigningKey
from twilio.request_validator import RequestValidator

from tests.io.test_http_errors import assert_problem

NUL = "refund\u0000policy"
SURROGATE = "refund\ud800policy"
TELEGRAM_SECRET = "s3cret-token"
DISCORD_KEY = SigningKey.generate()
TELCO_SID = "AC" + "0123456789abcdef" * 2
TELCO_TOKEN = "f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8"
PUBLIC = "https://shop.example.com"


@pytest.fixture
def settings_overrides():
    return {
        "telegram_webhook_secret": TELEGRAM_SECRET,
        "telegram_bot_token": "123456:" + "A" * 35,
        "discord_public_key": DISCORD_KEY.verify_key.encode(HexEncoder).decode(),
        "telco_account_sid": TELCO_SID,
        "telco_auth_token": TELCO_TOKEN,
        "public_base_url": PUBLIC,
        "webhook_targets": "crm=https://crm.example.com/in",
        "chatops_webhook_url": "https://chat.example.com/hook",
    }


def rows(database_url: str) -> dict[str, int]:
    """Rows in every table of the service's database: what a request may have stored."""
    with psycopg.connect(database_url) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        ]
        return {
            table: conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] for table in tables
        }


@pytest.fixture
async def stored(api, database_url) -> dict[str, int]:
    """What is stored before the request: the roles seeded (the first look at them seeds
    the nine, which is not the request's doing), every table counted."""
    assert (await api.get("/employees")).status_code == 200
    return rows(database_url)


# (method, path, body with BAD where the text goes, the field the problem names)
JSON_ROUTES = [
    ("POST", "/chat", {"question": "BAD"}, "question"),
    ("POST", "/chat", {"question": "When?", "user": "BAD"}, "user"),
    ("POST", "/chat/stream", {"question": "BAD"}, "question"),
    ("POST", "/documents", {"name": "a.md", "text": "BAD"}, "text"),
    ("POST", "/documents", {"name": "BAD", "text": "Refunds take 5 days."}, "name"),
    ("PATCH", "/employees/support", {"personality": "BAD"}, "personality"),
    (
        "PATCH",
        "/employees/new_bot",
        {"display_name": "BAD", "personality": "Kind."},
        "display_name",
    ),
    ("POST", "/employees/support/memory", {"text": "BAD"}, "text"),
    ("POST", "/employees/support/memory", {"text": "Be kind.", "tags": ["a", "BAD"]}, "tags[1]"),
    ("PATCH", "/profile", {"description": "BAD"}, "description"),
    (
        "POST",
        "/automation-workflows",
        {"name": "BAD", "webhook_url": "https://hooks.example.com/x", "channels": ["telegram"]},
        "name",
    ),
    ("PATCH", "/automation-workflows/1", {"name": "BAD"}, "name"),
    (
        "POST",
        "/autonomy",
        {"approval_channel": "telegram", "approval_target": "BAD"},
        "approval_target",
    ),
    ("POST", "/actions", {"kind": "chatops", "text": "BAD"}, "text"),
    (
        "POST",
        "/actions",
        {"kind": "webhook", "target": "crm", "data": {"lead": "BAD"}},
        "data.lead",
    ),
    ("POST", "/actions", {"kind": "chatops", "text": "hi", "BAD": 1}, "body"),
]
QUERY_ROUTES = [
    ("POST", "/chat", "question"),
    ("POST", "/chat/stream", "question"),
    ("GET", "/employees/support/memory", "tags"),
    ("GET", "/employees/support/memory", "query"),
    ("GET", "/employees/support/context", "query"),
    ("GET", "/automation-workflows", "channel"),
    ("GET", "/autonomy/log", "action"),
]
PATH_ROUTES = [
    ("GET", "/employees/{}", "role"),
    ("PATCH", "/employees/{}", "role"),
    ("GET", "/employees/{}/memory", "role"),
    ("GET", "/actions/{}", "id"),
    ("POST", "/autonomy/pending/{}/approve", "id"),
    ("GET", "/automation-workflows/{}", "id"),
    ("DELETE", "/documents/{}", "id"),
]


def with_text(body: object, text: str) -> object:
    """``body`` with every "BAD" (value or key) replaced by ``text``."""
    if isinstance(body, dict):
        return {with_text(k, text): with_text(v, text) for k, v in body.items()}
    if isinstance(body, list):
        return [with_text(item, text) for item in body]
    return text if body == "BAD" else body


def as_json(body: object) -> bytes:
    # ensure_ascii: a lone surrogate travels as the escape \ud800, as a client sends it
    return json.dumps(body).encode("ascii")


@pytest.mark.parametrize("text", [NUL, SURROGATE], ids=["nul", "surrogate"])
@pytest.mark.parametrize(("method", "path", "body", "field"), JSON_ROUTES)
async def test_unstorable_text_in_a_json_body_is_422_naming_the_field(
    api, database_url, stored, method, path, body, field, text
):
    response = await api.request(
        method,
        path,
        content=as_json(with_text(body, text)),
        headers={"content-type": "application/json"},
    )
    problem = assert_problem(response, 422)
    assert problem["field"] == field
    assert "NUL" in problem["detail"] or "surrogate" in problem["detail"]
    assert rows(database_url) == stored


@pytest.mark.parametrize(("method", "path", "field"), QUERY_ROUTES)
async def test_nul_in_a_query_parameter_is_422_naming_it(
    api, database_url, stored, method, path, field
):
    response = await api.request(method, f"{path}?{field}={quote(NUL)}")
    problem = assert_problem(response, 422, "NUL")
    assert problem["field"] == field
    assert rows(database_url) == stored


async def test_nul_in_a_query_parameter_name_is_422(api):
    response = await api.post(f"/chat?question=When%3F&{quote(NUL)}=1")
    assert_problem(response, 422, "NUL")


@pytest.mark.parametrize(("method", "path", "field"), PATH_ROUTES)
async def test_nul_in_a_path_segment_is_422_naming_it(
    api, database_url, stored, method, path, field
):
    response = await api.request(
        method, path.format(quote(NUL)), json={} if method in ("PATCH",) else None
    )
    problem = assert_problem(response, 422, "NUL")
    assert problem["field"] == field
    assert rows(database_url) == stored


@pytest.mark.parametrize("depth", [40, 983, 100_000])
@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/chat"), ("POST", "/documents"), ("PATCH", "/profile"), ("POST", "/actions")],
)
async def test_json_nested_too_deep_is_413_quickly(api, database_url, stored, method, path, depth):
    body = b'{"question": ' + b"[" * depth + b"]" * depth + b"}"
    started = time.monotonic()
    response = await api.request(
        method, path, content=body, headers={"content-type": "application/json"}
    )
    assert_problem(response, 413, "nested more than 32 levels")
    assert time.monotonic() - started < 5
    assert rows(database_url) == stored


async def test_a_json_body_nested_within_the_limit_is_read(api):
    """A fair body nested a few levels still works: the limit is far above any need."""
    response = await api.post(
        "/actions", json={"kind": "webhook", "target": "crm", "data": {"a": {"b": {"c": [1]}}}}
    )
    assert response.status_code == 403  # autonomy is off: refused by the gate, not the reader


async def test_nan_is_not_json(api):
    response = await api.post(
        "/employees/support/memory",
        content=b'{"text": "Be kind.", "importance": NaN}',
        headers={"content-type": "application/json"},
    )
    assert_problem(response, 400, "NaN")


async def test_unstorable_text_in_an_uploaded_file_name_is_422(api, database_url, stored):
    response = await api.post(
        "/documents",
        files={"file": ("refunds.md", b"# Refunds\n\nRefunds take 5 days.\n", "text/markdown")},
        data={"name": NUL},
    )
    problem = assert_problem(response, 422, "NUL")
    assert problem["field"] == "name"
    assert rows(database_url) == stored


async def test_a_utf16_file_holding_nul_is_422(api, database_url, stored):
    data = "Refunds take 5\u0000 days.".encode("utf-16")
    response = await api.post("/documents", files={"file": ("refunds.txt", data, "text/plain")})
    problem = assert_problem(response, 422, "NUL")
    assert problem["field"] == "file"
    assert rows(database_url) == stored


# ---------------------------------------------------------------- the three webhooks


def telegram_update(text: str) -> dict:
    return {
        "update_id": 501,
        "message": {
            "message_id": 7,
            "date": 1_700_000_000,
            "chat": {"id": 42, "type": "private"},
            "from": {"id": 42, "is_bot": False, "first_name": "Ada"},
            "text": text,
        },
    }


def discord_ask(text: str) -> dict:
    return {
        "id": "1100",
        "application_id": "1234567890123456789",
        "type": 2,
        "token": "interaction-token",
        "version": 1,
        "channel_id": "666",
        "member": {"user": {"id": "777", "username": "ada"}},
        "data": {
            "id": "888",
            "name": "ask",
            "type": 1,
            "options": [{"name": "question", "type": 3, "value": text}],
        },
    }


def discord_headers(body: bytes) -> dict[str, str]:
    timestamp = str(int(time.time()))
    signature = DISCORD_KEY.sign(timestamp.encode() + body).signature.hex()
    return {
        "content-type": "application/json",
        "X-Signature-Ed25519": signature,
        "X-Signature-Timestamp": timestamp,
    }


@pytest.mark.parametrize("text", [NUL, SURROGATE], ids=["nul", "surrogate"])
async def test_unstorable_text_from_telegram_is_422_and_not_taken(api, database_url, stored, text):
    response = await api.post(
        "/webhook/telegram",
        content=as_json(telegram_update(text)),
        headers={
            "content-type": "application/json",
            "X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET,
        },
    )
    problem = assert_problem(response, 422)
    assert problem["field"] == "message.text"
    assert rows(database_url) == stored


@pytest.mark.parametrize("text", [NUL, SURROGATE], ids=["nul", "surrogate"])
async def test_unstorable_text_from_discord_is_422_and_not_taken(api, database_url, stored, text):
    body = as_json(discord_ask(text))
    response = await api.post("/webhook/discord", content=body, headers=discord_headers(body))
    problem = assert_problem(response, 422)
    assert problem["field"] == "data.options[0].value"
    assert rows(database_url) == stored


async def test_nul_from_whatsapp_is_422_and_not_taken(api, database_url, stored):
    form = {
        "MessageSid": "SM" + "a" * 32,
        "From": "whatsapp:+4915112345678",
        "To": "whatsapp:+14155238886",
        "Body": NUL,
        "NumMedia": "0",
    }
    signature = RequestValidator(TELCO_TOKEN).compute_signature(PUBLIC + "/webhook/whatsapp", form)
    response = await api.post(
        "/webhook/whatsapp",
        content=urlencode(form),
        headers={
            "content-type": "application/x-www-form-urlencoded",
            "X-Twilio-Signature": signature,
        },
    )
    problem = assert_problem(response, 422, "NUL")
    assert problem["field"] == "Body"
    assert rows(database_url) == stored


@pytest.mark.parametrize("path", ["/webhook/telegram", "/webhook/discord"])
async def test_a_webhook_nested_too_deep_is_413_once_verified(api, path):
    body = b'{"update_id": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    headers = (
        discord_headers(body)
        if path.endswith("discord")
        else {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
    )
    response = await api.post(
        path, content=body, headers={"content-type": "application/json", **headers}
    )
    assert_problem(response, 413, "nested")


async def test_an_unverified_webhook_is_refused_before_its_body_is_read(api):
    """The signature comes first: a stranger's NUL gets the 403, not a hint about the body."""
    response = await api.post(
        "/webhook/telegram",
        content=as_json(telegram_update(NUL)),
        headers={"content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": "no"},
    )
    assert_problem(response, 403)
