"""The voice channel over HTTP, on the served app: the phone number's voice webhook
(signed by the telephony provider's own RequestValidator) answers with the markup that
opens the media stream, from each source of its URL, and every way it is refused; and
GET /voice/calls lists the calls written by ragio.voice.calls, each with its conversation's
turns as the call finishes them (ragio.chat.conversations.finish_turn)."""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from twilio.request_validator import RequestValidator

from ragcore.chat import history
from ragcore.chat.citations import Citation
from ragcore.chat.pipeline import ChatAnswer, ChatRequest
from ragcore.employees.learning import asker_hash
from ragcore.voice.call import TurnFinished
from ragio.chat.conversations import finish_turn, load_history
from ragio.chat.conversations import record_turn as record_conversation_turn
from ragio.voice.calls import RETENTION, begin_call, end_call

SID = "AC" + "0123456789abcdef" * 2
AUTH_TOKEN = "f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8"
# behind a reverse proxy that strips /ragchat: the provider calls this URL
PUBLIC = "https://shop.example.com/ragchat"
PUBLIC_URL = PUBLIC + "/webhook/voice"
CALLER = "+4915112345678"
BUSINESS = "+14155238886"
CALL_SID = "CA" + "a" * 32
API_KEY = "k" * 32


@pytest.fixture
def settings_overrides(request) -> dict[str, Any]:
    settings = {
        "telco_account_sid": SID,
        "telco_auth_token": AUTH_TOKEN,
        "public_base_url": PUBLIC,
        "voiceai_api_key": "dg-test-key",
    }
    return {**settings, **getattr(request, "param", {})}


def incoming_call(sid: str = CALL_SID, **fields: str | None) -> dict[str, str]:
    """The form the provider posts to the number's voice URL when a call comes in."""
    form: dict[str, str | None] = {
        "Called": BUSINESS,
        "ToState": "CA",
        "CallerCountry": "DE",
        "Direction": "inbound",
        "CallerState": "",
        "ToZip": "94105",
        "CallSid": sid,
        "To": BUSINESS,
        "CallerZip": "",
        "ToCountry": "US",
        "CallToken": "%7B%22parentCallInfoToken%22%3A%22eyJ%22%7D",
        "CalledZip": "94105",
        "ApiVersion": "2010-04-01",
        "CalledCity": "SAN FRANCISCO",
        "CallStatus": "ringing",
        "From": CALLER,
        "AccountSid": SID,
        "CalledCountry": "US",
        "CallerCity": "",
        "ToCity": "SAN FRANCISCO",
        "FromCountry": "DE",
        "Caller": CALLER,
        "FromCity": "",
        "CalledState": "CA",
        "FromZip": "",
        "FromState": "",
    }
    form.update(fields)
    return {k: v for k, v in form.items() if v is not None}


async def post(api, form, *, url=PUBLIC_URL, token=AUTH_TOKEN, header="X-Twilio-Signature"):
    """POST ``form`` signed as the provider signs it (token None: unsigned)."""
    headers = {}
    if token is not None:
        headers[header] = RequestValidator(token).compute_signature(url, form)
    return await api.post("/webhook/voice", data=form, headers=headers)


def stream_of(response) -> tuple[str, dict[str, str]]:
    """The stream URL and the Parameters of the connect-stream markup."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/xml")
    root = ET.fromstring(response.text)  # noqa: S314 (the service's own markup)
    assert root.tag == "Response"
    [connect] = list(root)
    assert connect.tag == "Connect"
    [stream] = list(connect)
    assert stream.tag == "Stream"
    return stream.get("url"), {p.get("name"): p.get("value") for p in stream}


# ---------------------------------------------------------------- POST /webhook/voice


async def test_a_signed_call_is_connected_to_the_stream_on_the_public_host(api):
    url, parameters = stream_of(await post(api, incoming_call()))
    assert url == "wss://shop.example.com:8765"  # PUBLIC_BASE_URL's host, on VOICE_PORT
    assert parameters == {"caller": CALLER, "call_sid": CALL_SID}


@pytest.mark.parametrize(
    "settings_overrides",
    [{"voice_public_url": "wss://voice.example.com/media", "voice_port": "9000"}],
    indirect=True,
)
async def test_voice_public_url_is_the_stream_url_when_set(api):
    url, _ = stream_of(await post(api, incoming_call()))
    assert url == "wss://voice.example.com/media"


@pytest.mark.parametrize(
    "settings_overrides",
    [{"public_base_url": "http://shop.example.com", "voice_port": "9000"}],
    indirect=True,
)
async def test_an_http_public_base_url_gives_a_ws_stream(api):
    url, _ = stream_of(
        await post(api, incoming_call(), url="http://shop.example.com/webhook/voice")
    )
    assert url == "ws://shop.example.com:9000"


@pytest.mark.parametrize(
    "settings_overrides", [{"public_base_url": "", "voice_port": "9000"}], indirect=True
)
async def test_without_public_urls_the_stream_is_on_the_requests_own_host(api):
    own = f"{api.base_url}/webhook/voice"  # http://127.0.0.1:<port>/webhook/voice
    url, parameters = stream_of(await post(api, incoming_call(), url=own))
    assert url == "ws://127.0.0.1:9000"
    assert parameters == {"caller": CALLER, "call_sid": CALL_SID}


async def test_markup_characters_in_the_form_are_escaped(api):
    caller = 'client:"a"<b>&c'
    _, parameters = stream_of(await post(api, incoming_call(From=caller)))
    assert parameters["caller"] == caller


@pytest.mark.parametrize("caller", ["+1555\x00", "+1555\x01", "+1555\n<x/>", "+1555\u2028"])
async def test_a_control_character_in_the_caller_is_422_as_on_other_routes(api, caller):
    """A signed form (the provider's, or one made with a leaked token) whose caller holds
    a character the markup's XML cannot carry is refused, naming the field."""
    response = await post(api, incoming_call(From=caller))
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["field"] == "From"
    assert "Stream" not in response.text


async def test_a_nul_in_any_field_of_the_form_is_422(api):
    response = await post(api, incoming_call(CallerCity="Berlin\x00"))
    assert response.status_code == 422
    assert response.json()["field"] == "CallerCity"


async def test_the_x_telco_signature_header_name_is_accepted(api):
    stream_of(await post(api, incoming_call(), header="X-Telco-Signature"))


@pytest.mark.parametrize(
    "signing",
    [
        {"token": None},  # unsigned
        {"token": "another-accounts-token"},
        # signed for the URL this process sees: the provider signs the public one
        {"url": "http://127.0.0.1/webhook/voice"},
        {"url": "https://shop.example.com/webhook/voice"},  # the proxy prefix left out
    ],
)
async def test_a_missing_or_wrong_signature_is_403(api, signing):
    response = await post(api, incoming_call(), **signing)
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/problem+json"
    assert "the voice request is not verified" in response.json()["detail"]
    assert AUTH_TOKEN not in response.text and "Stream" not in response.text


async def test_a_tampered_form_is_403(api):
    form = incoming_call()
    signature = RequestValidator(AUTH_TOKEN).compute_signature(PUBLIC_URL, form)
    form["From"] = "+15550000000"
    response = await api.post(
        "/webhook/voice", data=form, headers={"X-Twilio-Signature": signature}
    )
    assert response.status_code == 403


@pytest.mark.parametrize("settings_overrides", [{"telco_auth_token": ""}], indirect=True)
async def test_without_an_auth_token_nothing_is_verified(api):
    assert (await post(api, incoming_call())).status_code == 403


@pytest.mark.parametrize("settings_overrides", [{"voice_allow_unsigned": "true"}], indirect=True)
async def test_unsigned_mode_lets_calls_in_and_warns_every_time(api, caplog):
    caplog.set_level(logging.WARNING)
    stream_of(await post(api, incoming_call("CA1"), token=None))
    stream_of(await post(api, incoming_call("CA2"), token="wrong"))
    stream_of(await post(api, incoming_call("CA3")))  # signed: no warning
    warnings = [r for r in caplog.records if "VOICE_ALLOW_UNSIGNED=true" in r.getMessage()]
    assert len(warnings) == 2
    assert all(r.levelno == logging.WARNING for r in warnings)
    assert AUTH_TOKEN not in caplog.text


@pytest.mark.parametrize("settings_overrides", [{"voiceai_api_key": ""}], indirect=True)
async def test_without_the_speech_key_a_verified_call_is_503(api, caplog):
    response = await post(api, incoming_call())
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["detail"] == (
        "the voice channel is not configured: it needs VOICEAI_API_KEY (the speech "
        "provider's key) to answer"
    )
    # the signature is checked first: a stranger learns nothing about the setup, and the
    # owner trying it unsigned reads both missing pieces in one log line
    caplog.set_level(logging.INFO, logger="ragio.http.webhooks")
    refused = await post(api, incoming_call(), token=None)
    assert refused.status_code == 403 and "VOICEAI" not in refused.text
    [line] = [r.getMessage() for r in caplog.records if "refused a voice" in r.getMessage()]
    assert "X-Twilio-Signature" in line and "needs VOICEAI_API_KEY" in line


async def test_with_the_speech_key_a_refusal_names_only_the_signature(api, caplog):
    caplog.set_level(logging.INFO, logger="ragio.http.webhooks")
    assert (await post(api, incoming_call(), token=None)).status_code == 403
    [line] = [r.getMessage() for r in caplog.records if "refused a voice" in r.getMessage()]
    assert "VOICEAI_API_KEY" not in line


@pytest.mark.parametrize(
    "form",
    [
        incoming_call(CallSid=None),
        incoming_call(From=None),
        incoming_call(CallSid=""),
        {},
    ],
)
async def test_a_signed_form_that_is_no_call_is_400(api, form):
    response = await post(api, form)
    assert response.status_code == 400
    assert "not a voice call" in response.json()["detail"]


@pytest.mark.parametrize("settings_overrides", [{"service_api_key": API_KEY}], indirect=True)
async def test_the_webhook_needs_no_api_key(api):
    stream_of(await post(api, incoming_call()))


# ---------------------------------------------------------------- GET /voice/calls

START = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)


def record_turn(conn: Any, call_sid: str, record: TurnFinished, now: datetime) -> int:
    """The call's end of a turn, as voiceio carries it out (``FinishTurn``)."""
    kept = record.in_conversation(call_sid, CALLER)
    return finish_turn(conn, kept, record.stages, now, retention_days=90)


def answered(turn: int, question: str, answer: str, outcome: str = "answered") -> TurnFinished:
    detail = ChatAnswer(
        answer=answer,
        citations=(Citation(1, 7, "refunds.md", 11, "Customers can return…", 0.5, ("Returns",)),),
        role="support",
        provider="openai",
        model="gpt-test",
        language="en",
    )
    times = {"speech_ended": 10.0, "transcribed": 10.25, "first_sentence": 11.0}
    times |= {"first_audio": 11.2, "first_frame": 11.21, "answered": 12.5}
    return TurnFinished(turn, question, answer, outcome, detail, times)


async def served_schema(api, pointer: str) -> Draft202012Validator:
    """A validator for the schema at ``pointer`` in the served /openapi.json."""
    spec = (await api.get("/openapi.json")).json()
    registry = Registry().with_resource("urn:spec", DRAFT202012.create_resource(spec))
    return Draft202012Validator({"$ref": f"urn:spec#{pointer}"}, registry=registry)


async def test_calls_are_listed_newest_first_with_their_turns(api, service):
    run = service.database.run
    await run(begin_call, "CA-old", "MZ-old", "+15551230000", None, START)
    await run(end_call, "CA-old", "the caller hung up", START + timedelta(minutes=1))
    await run(begin_call, "CA-new", "MZ-1", CALLER, "support", START + timedelta(hours=1))
    # the greeting (turn 1) is not recorded; a turn whose answer failed has no answer
    times = {"speech_ended": 5.0, "transcribed": 5.3}
    failed = TurnFinished(2, "Do you ship to Mars?", "", "failed", None, times)
    await run(record_turn, "CA-new", failed, START + timedelta(hours=1, seconds=6))
    # recorded out of order, then turn 4 recorded again: replaced, not doubled
    later = answered(4, "And exchanges?", "Within 30 days too [1].", "interrupted")
    await run(record_turn, "CA-new", later, START + timedelta(hours=1, seconds=40))
    first = answered(3, "How long do I have?", "30 days from delivery [1].")
    await run(record_turn, "CA-new", first, START + timedelta(hours=1, seconds=20))
    again = answered(4, "And exchanges?", "Within 30 days too [1].")
    await run(record_turn, "CA-new", again, START + timedelta(hours=1, seconds=45))

    response = await api.get("/voice/calls")

    assert response.status_code == 200
    assert CALLER not in response.text and "15551230000" not in response.text
    body = response.json()
    assert [c["call_sid"] for c in body["calls"]] == ["CA-new", "CA-old"]
    assert body["next_before"] is None
    new, old = body["calls"]
    assert new["caller_hash"] == asker_hash(f"voice:{CALLER}")
    assert new["role"] == "support"
    assert new["started_at"] == "2026-03-02T10:30:00+00:00"
    assert new["ended_at"] is None and new["end_reason"] is None
    assert old["ended_at"] == "2026-03-02T09:31:00+00:00"
    assert old["end_reason"] == "the caller hung up" and old["turns"] == []
    assert [t["turn"] for t in new["turns"]] == [2, 3, 4]
    no_answer, one, two = new["turns"]
    assert no_answer == {
        "turn": 2,
        "question": "Do you ship to Mars?",
        "answer": "",
        "outcome": "failed",
        "citations": [],
        "role": None,
        "provider": None,
        "model": None,
        "language": None,
        "stages": {"transcript_ms": 300},
        "created_at": "2026-03-02T10:30:06+00:00",
    }
    assert one["question"] == "How long do I have?"
    assert one["answer"] == "30 days from delivery [1]."
    assert one["citations"] == [
        {"number": 1, "document_id": 7, "document_name": "refunds.md", "live_action_id": None}
    ]
    assert (one["role"], one["provider"], one["model"], one["language"]) == (
        "support",
        "openai",
        "gpt-test",
        "en",
    )
    assert one["stages"] == {
        "transcript_ms": 250,
        "first_sentence_ms": 750,
        "first_audio_ms": 200,
        "first_frame_ms": 10,
        "voice_to_voice_ms": 1210,
        "answer_ms": 2250,
        "stalled_ms": 0,
    }
    assert two["outcome"] == "answered"  # the second record of turn 4
    assert two["created_at"] == "2026-03-02T10:30:40+00:00"  # when first recorded
    listing = await served_schema(
        api, "/paths/~1voice~1calls/get/responses/200/content/application~1json/schema"
    )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in listing.iter_errors(body)]
    assert not errors, errors


async def test_a_reconnecting_stream_keeps_its_call(api, service):
    run = service.database.run
    await run(begin_call, CALL_SID, "MZ-1", CALLER, "support", START)
    await run(record_turn, CALL_SID, answered(1, "Hours?", "9 to 5 [1]."), START)
    await run(end_call, CALL_SID, "the stream stopped", START + timedelta(seconds=30))
    await run(begin_call, CALL_SID, "MZ-2", CALLER, None, START + timedelta(seconds=31))
    await run(end_call, CALL_SID, "the caller hung up", START + timedelta(seconds=60))
    await run(end_call, CALL_SID, "closed", START + timedelta(seconds=61))  # the first end stands

    [call] = (await api.get("/voice/calls")).json()["calls"]
    assert call["call_sid"] == CALL_SID and call["role"] == "support"
    assert call["started_at"] == START.isoformat()
    assert call["end_reason"] == "the caller hung up"
    assert call["ended_at"] == (START + timedelta(seconds=60)).isoformat()
    assert [t["question"] for t in call["turns"]] == ["Hours?"]


async def test_a_turn_of_a_call_never_begun_is_not_listed(api, service):
    await service.database.run(record_turn, "CA-unknown", answered(1, "Hi?", "Hello."), START)
    assert (await api.get("/voice/calls")).json() == {"calls": [], "next_before": None}


async def test_calls_older_than_the_retention_go_when_a_call_begins(api, service):
    run = service.database.run
    await run(begin_call, "CA-1", "MZ-1", CALLER, None, START)
    await run(record_turn, "CA-1", answered(1, "Hours?", "9 to 5."), START)
    await run(begin_call, "CA-2", "MZ-2", CALLER, None, START + RETENTION - timedelta(hours=1))
    calls = (await api.get("/voice/calls")).json()["calls"]
    assert [c["call_sid"] for c in calls] == ["CA-2", "CA-1"]
    await run(begin_call, "CA-3", "MZ-3", CALLER, None, START + RETENTION + timedelta(hours=1))
    calls = (await api.get("/voice/calls")).json()["calls"]
    assert [c["call_sid"] for c in calls] == ["CA-3", "CA-2"]


async def test_limit_and_before_page_through_the_calls(api, service):
    for i in range(5):
        sid = f"CA-{i}"
        await service.database.run(begin_call, sid, "MZ", CALLER, None, START + timedelta(i))
    pages, before = [], None
    while True:
        params = {"limit": 2} | ({"before": before} if before else {})
        body = (await api.get("/voice/calls", params=params)).json()
        pages.append([c["call_sid"] for c in body["calls"]])
        before = body["next_before"]
        if before is None:
            break
    assert pages == [["CA-4", "CA-3"], ["CA-2", "CA-1"], ["CA-0"]]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"limit": "²"}, "limit"),
        ({"limit": "9" * 5000}, "limit"),
        ({"before": "x"}, "before"),
    ],
)
async def test_a_bad_limit_is_422_naming_it(api, params, field):
    response = await api.get("/voice/calls", params=params)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["field"] == field


async def test_limit_100_is_taken(api):
    assert (await api.get("/voice/calls", params={"limit": "100"})).status_code == 200


@pytest.mark.parametrize("settings_overrides", [{"service_api_key": API_KEY}], indirect=True)
async def test_the_calls_need_the_api_key_when_one_is_set(api):
    assert (await api.get("/voice/calls")).status_code == 401
    assert (await api.get("/voice/calls", headers={"X-API-Key": "wrong"})).status_code == 401
    response = await api.get("/voice/calls", headers={"X-API-Key": API_KEY})
    assert response.status_code == 200
    assert response.json() == {"calls": [], "next_before": None}


async def test_a_calls_turn_is_one_row_whichever_of_its_writers_comes_first(api, service):
    """A question is recorded by its answer (the turn pipeline's RecordTurn, at the call's
    question number) and finished by the call (FinishTurn): in either order, one row of
    the call's conversation; a question never answered is one row too. GET /voice/calls
    and GET /conversations/{id} read the same rows."""
    run = service.database.run
    await run(begin_call, CALL_SID, "MZ-1", CALLER, "support", START)

    def answer_recorded(conn: Any, turn: int, question: str, at: datetime) -> int:
        said = answered(turn, question, "30 days from delivery [1].").answer_detail
        record = history.turn_record(
            "voice",
            None,
            ChatRequest(question),
            said,
            participant=CALLER,
            key=history.place_key("voice", CALL_SID),
            started=at - timedelta(seconds=2),
            turn=turn,
        )
        return record_conversation_turn(conn, record, at, 90)

    # 1: answered, then finished; 2: finished (interrupted before its answer came back),
    # then its answer recorded after all; 3: the caller hung up before any answer
    at = START + timedelta(seconds=10)
    await run(answer_recorded, 1, "How long do I have?", at)
    await run(
        record_turn,
        CALL_SID,
        answered(1, "How long do I have?", "30 days from delivery [1]."),
        at + timedelta(seconds=5),
    )
    interrupted = TurnFinished(2, "And exchanges?", "", "interrupted", None, {"transcribed": 1.0})
    await run(record_turn, CALL_SID, interrupted, at + timedelta(seconds=20))
    await run(answer_recorded, 2, "And exchanges?", at + timedelta(seconds=21))
    hung_up = TurnFinished(
        3, "Can I", "", "hung up", None, {"speech_ended": 1.0, "transcribed": 1.5}
    )
    await run(record_turn, CALL_SID, hung_up, at + timedelta(seconds=30))

    [call] = (await api.get("/voice/calls")).json()["calls"]
    assert [(t["turn"], t["outcome"], t["answer"]) for t in call["turns"]] == [
        (1, "answered", "30 days from delivery [1]."),
        (2, "interrupted", "30 days from delivery [1]."),
        (3, "hung up", ""),
    ]
    assert call["turns"][0]["stages"]["answer_ms"] == 2250  # the call's, not the answer's
    assert call["turns"][1]["stages"] == {}  # the call's: it reached no stage's end
    assert call["turns"][2]["stages"] == {"transcript_ms": 500}
    [listed] = (await api.get("/conversations", params={"channel": "voice"})).json()[
        "conversations"
    ]
    assert listed["turn_count"] == 3 and listed["participant_hash"] == call["caller_hash"]
    kept = (await api.get(f"/conversations/{listed['id']}")).json()
    told = [{k: t[k] for k in ("turn", "question", "answer", "outcome")} for t in call["turns"]]
    assert told == [
        {k: t[k] for k in ("turn", "question", "answer", "outcome")} for t in kept["turns"]
    ]
    assert [t["stages"] for t in call["turns"]] == [t["timings"] for t in kept["turns"]]
    assert kept["turns"][1]["citations"][0]["snippet"] == "Customers can return…"
    count = "SELECT count(*) FROM conversation_turns"
    assert await run(lambda conn: conn.execute(count).fetchone()[0]) == 3
    # a follow-up is read with what the caller was answered: not the question never answered
    history_read = await run(load_history, listed["id"])
    assert [exchange.question for exchange in history_read] == [
        "How long do I have?",
        "And exchanges?",
    ]
