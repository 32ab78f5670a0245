"""The autonomy setting and approvals over HTTP on the served app: the gate in all three
modes, the sensitive-role override, the owner messaged on Telegram (a fake Bot API on
127.0.0.1), approve and reject once each, expiry with time passed in, and the log."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.io.actions import log_of, set_autonomy
from tests.io.fakes.telegram_server import FakeTelegram

TOKEN = "123456789:AAHfakeTokenForTests_0123456789abc"
OWNER_CHAT = "4242"
NOTE = {"kind": "chatops", "text": "New lead: Ann, call back at 5pm"}


@pytest.fixture
async def telegram(serve_fake):
    return await serve_fake(FakeTelegram(TOKEN))


@pytest.fixture
def settings_overrides(chatops, telegram, authority):
    return {
        "chatops_webhook_url": f"{chatops.base_url}/hook/secret",
        "actions_ca_bundle": str(authority.bundle),
        "actions_allow_private_targets": "true",
        "telegram_bot_token": TOKEN,
        "telegram_api_base_url": telegram.base_url,
        "webhook_targets": "crm=https://crm.example.test/in",
    }


@pytest.fixture
async def semi(api):
    await set_autonomy(api, mode="semi", approval_channel="telegram", approval_target=OWNER_CHAT)
    return api


async def test_the_default_setting_is_off_and_shows_what_is_configured(api):
    response = await api.get("/autonomy")
    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "off" and body["approval_channel"] is None
    assert body["allowed_kinds"] == ["webhook", "email", "chatops"]
    assert body["approval_ttl_hours"] == 24
    assert body["kinds"]["webhook"] == {"configured": True, "targets": ["crm"]}
    assert body["kinds"]["chatops"] == {"configured": True}
    assert body["kinds"]["email"]["configured"] is False
    assert "https://" not in response.text  # target URLs and the chat-ops URL stay secret


async def test_setting_the_autonomy(api):
    body = await set_autonomy(
        api, mode="semi", approval_channel="whatsapp", approval_target="+1 415 555 0100"
    )
    assert (body["mode"], body["approval_channel"], body["approval_target"]) == (
        "semi",
        "whatsapp",
        "+14155550100",
    )
    body = await set_autonomy(api, allowed_kinds=["chatops"], sensitive_roles="off")
    assert body["mode"] == "semi" and body["allowed_kinds"] == ["chatops"]
    assert body["approval_target"] == "+14155550100" and body["sensitive_roles"] == "off"
    assert (await api.get("/autonomy")).json() == body


@pytest.mark.parametrize(
    "body, names",
    [
        ({"mode": "yolo"}, "off, semi, full"),
        ({"approval_channel": "sms", "approval_target": "1"}, "telegram, whatsapp, discord"),
        ({"allowed_kinds": ["fax"]}, "webhook, email, chatops"),
        ({"autonomy": "full"}, "mode, approval_channel, approval_target"),
    ],
)
async def test_unknown_values_are_422_naming_the_allowed_ones(api, body, names):
    response = await api.post("/autonomy", json=body)
    assert response.status_code == 422
    assert names in response.json()["detail"]
    assert (await api.get("/autonomy")).json()["mode"] == "off"  # nothing half-written


async def test_off_refuses_and_logs(api, chatops):
    response = await api.post("/actions", json=NOTE)
    assert response.status_code == 403
    problem = response.json()
    assert problem["detail"] == "the action was refused: autonomy is off"
    assert await log_of(api, problem["action_id"]) == [("refused", "autonomy is off")]
    assert chatops.requests == []


async def test_full_executes_at_once(api, chatops):
    await set_autonomy(api, mode="full")
    response = await api.post("/actions", json=NOTE)
    assert response.status_code == 200 and response.json()["status"] == "executed"
    assert chatops.requests[0].body == {"text": NOTE["text"]}


async def test_semi_holds_the_action_and_messages_the_owner(semi, chatops, telegram):
    response = await semi.post("/actions", json=NOTE)
    assert response.status_code == 202
    held = response.json()
    assert held["status"] == "pending" and response.headers["location"] == f"/actions/{held['id']}"
    assert chatops.requests == []
    [message] = telegram.sent
    assert message["chat_id"] == int(OWNER_CHAT)
    assert f"YES {held['id']}" in message["text"] and f"NO {held['id']}" in message["text"]
    assert "chat-ops message" in message["text"] and NOTE["text"] in message["text"]
    pending = (await semi.get("/autonomy/pending")).json()["pending"]
    assert [p["id"] for p in pending] == [held["id"]]
    assert [e for e, _ in await log_of(semi, held["id"])] == ["held", "notified"]


async def test_approve_sends_once_and_a_second_approve_changes_nothing(semi, chatops):
    held = (await semi.post("/actions", json=NOTE)).json()
    approved = await semi.post(f"/autonomy/pending/{held['id'].lower()}/approve")
    assert approved.status_code == 200, approved.text
    assert approved.json()["status"] == "executed" and approved.json()["decided_by"] == "api"
    assert len(chatops.requests) == 1
    again = await semi.post(f"/autonomy/pending/{held['id']}/approve")
    assert again.status_code == 409 and "already decided (executed)" in again.json()["detail"]
    rejected = await semi.post(f"/autonomy/pending/{held['id']}/reject")
    assert rejected.status_code == 409
    assert len(chatops.requests) == 1
    assert (await semi.get("/autonomy/pending")).json()["pending"] == []
    events = [e for e, _ in await log_of(semi, held["id"])]
    assert events == ["held", "notified", "approved", "executed"]


async def test_reject_drops_the_action(semi, chatops):
    held = (await semi.post("/actions", json=NOTE)).json()
    response = await semi.post(f"/autonomy/pending/{held['id']}/reject")
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert (await semi.post(f"/autonomy/pending/{held['id']}/approve")).status_code == 409
    assert chatops.requests == []


async def test_an_expired_action_cannot_be_approved(semi, chatops, fake_clock):
    held = (await semi.post("/actions", json=NOTE)).json()
    fake_clock.advance(timedelta(hours=24, minutes=1))
    assert (await semi.get("/autonomy/pending")).json()["pending"] == []
    response = await semi.post(f"/autonomy/pending/{held['id']}/approve")
    assert response.status_code == 409  # marked expired when the pending list was read
    assert "already decided (expired)" in response.json()["detail"]
    assert chatops.requests == []
    assert (await semi.get(f"/actions/{held['id']}")).json()["status"] == "expired"


async def test_an_expired_action_is_410_when_decided_first(semi, chatops, fake_clock):
    held = (await semi.post("/actions", json=NOTE)).json()
    fake_clock.advance(timedelta(hours=25))
    response = await semi.post(f"/autonomy/pending/{held['id']}/approve")
    assert response.status_code == 410 and "expired" in response.json()["detail"]
    assert chatops.requests == []
    assert (await semi.post(f"/autonomy/pending/{held['id']}/approve")).status_code == 409


async def test_unknown_ids_are_404(semi):
    for raw in ("ZZZZZZZZZZ", "not-an-id", "x" * 300):
        response = await semi.post(f"/autonomy/pending/{raw}/approve")
        assert response.status_code == 404, raw
    assert (await semi.get("/actions/ZZZZZZZZZZ")).status_code == 404


async def test_a_sensitive_role_waits_for_the_owner_even_in_full(api, chatops, telegram):
    await set_autonomy(api, mode="full", approval_channel="telegram", approval_target=OWNER_CHAT)
    await api.get("/employees")  # seeds the built-in roles
    patch = await api.patch("/employees/finance", json={"autonomy": "full"})
    assert patch.status_code == 200, patch.text
    response = await api.post("/actions", json={**NOTE, "role": "finance"})
    assert response.status_code == 202
    held = response.json()
    assert held["role"] == "finance" and "sensitive role" in held["reason"]
    assert chatops.requests == [] and len(telegram.sent) == 1
    await set_autonomy(api, sensitive_roles="off")
    refused = await api.post("/actions", json={**NOTE, "role": "finance"})
    assert refused.status_code == 403 and "held to off" in refused.json()["detail"]
    support = await api.patch("/employees/support", json={"autonomy": "full"})
    assert support.status_code == 200
    done = await api.post("/actions", json={**NOTE, "role": "support"})
    assert done.status_code == 200 and len(chatops.requests) == 1


async def test_a_kind_the_owner_did_not_allow_is_refused(api, chatops):
    await set_autonomy(api, mode="full", allowed_kinds=["email"])
    response = await api.post("/actions", json=NOTE)
    assert response.status_code == 403
    assert "chatops actions are not allowed" in response.json()["detail"]
    assert chatops.requests == []


async def test_the_owner_not_reachable_keeps_the_action_for_the_api(api, chatops, telegram):
    await set_autonomy(api, mode="semi", approval_channel="telegram", approval_target="99")
    telegram.fail_next(403)
    held = (await api.post("/actions", json=NOTE)).json()
    [*_, (event, detail)] = await log_of(api, held["id"])
    assert event == "not_notified" and "telegram" in detail
    assert TOKEN not in detail
    approved = await api.post(f"/autonomy/pending/{held['id']}/approve")
    assert approved.status_code == 200 and len(chatops.requests) == 1


async def test_the_log_pages_newest_first(semi):
    ids = [(await semi.post("/actions", json=NOTE)).json()["id"] for _ in range(3)]
    first = (await semi.get("/autonomy/log", params={"limit": 4})).json()
    assert len(first["entries"]) == 4 and first["next_before"] is not None
    assert first["entries"][0]["action_id"] == ids[-1]
    rest = (await semi.get("/autonomy/log", params={"before": first["next_before"]})).json()
    assert len(rest["entries"]) == 2 and rest["next_before"] is None
    assert {e["summary"] for e in first["entries"] + rest["entries"]} == {"chat-ops message"}
    bad = await semi.get("/autonomy/log", params={"limit": "lots"})
    assert bad.status_code == 422 and bad.json()["field"] == "limit"
