"""Conversations over real HTTP on the offline providers: a follow-up question read with
the one before it, each turn recorded, and the owner reading them back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import psycopg

from ragcore.chat.history import TurnRecord
from ragio.chat.conversations import record_turn
from tests.io.test_http_errors import assert_problem

POLICIES = """# Returns

Shirts can be returned within 30 days of delivery for a full refund.

Shoes can be returned within 14 days of delivery, unworn and in their box.

# Sizes

Shoes come in European sizes 36 to 47; shirts from S to XXL.

# Opening hours

The shop opens at 9 am and closes at 6 pm, Monday to Saturday.
"""


async def add(api: httpx.AsyncClient, name: str, text: str) -> None:
    response = await api.post("/documents", json={"name": name, "text": text})
    assert response.status_code == 201, response.text


async def test_a_follow_up_is_answered_with_the_question_before_it(api):
    await add(api, "policies.md", POLICIES)
    first = await api.post("/chat", json={"question": "How long do I have to return shirts?"})
    assert first.status_code == 200, first.text
    assert "30 days" in first.json()["answer"]
    conversation = first.json()["conversation_id"]
    assert isinstance(conversation, int)

    follow_up = await api.post(
        "/chat", json={"question": "and for shoes?", "conversation_id": conversation}
    )
    body = follow_up.json()
    assert follow_up.status_code == 200, body
    assert "14 days" in body["answer"], body
    assert body["conversation_id"] == conversation
    assert "return shirts" in body["search_question"] and "shoes" in body["search_question"]

    recorded = (await api.get(f"/conversations/{conversation}")).json()
    assert recorded["channel"] == "chat" and recorded["turn_count"] == 2
    questions = [(t["turn"], t["question"], t["outcome"]) for t in recorded["turns"]]
    assert questions == [
        (1, "How long do I have to return shirts?", "answered"),
        (2, "and for shoes?", "answered"),
    ]
    second = recorded["turns"][1]
    assert second["citations"][0]["document_name"] == "policies.md"
    assert "14 days" in second["answer"]
    assert second["timings"]["answer_ms"] >= 0


async def test_the_conversation_id_may_come_as_a_query_parameter(api):
    await add(api, "policies.md", POLICIES)
    first = await api.post("/chat", params={"question": "When does the shop open?"})
    conversation = first.json()["conversation_id"]
    again = await api.post(
        "/chat", params={"question": "and close?", "conversation_id": str(conversation)}
    )
    assert again.json().get("conversation_id") == conversation, again.text
    assert "6 pm" in again.json()["answer"]


async def test_an_unknown_or_malformed_conversation_is_refused(api):
    unknown = await api.post("/chat", json={"question": "hours?", "conversation_id": 999})
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    assert "conversation_id" in unknown.json()["detail"]
    for bad in ("abc", -3, 0, True, 1.5):
        response = await api.post("/chat", json={"question": "hours?", "conversation_id": bad})
        assert response.status_code == 422, (bad, response.text)
        assert response.json()["field"] == "conversation_id"


async def test_the_owner_lists_conversations_newest_first_filtered_and_paged(api):
    await add(api, "policies.md", POLICIES)
    ids = []
    for question in ("When does the shop open?", "Can I return shoes?", "What is a warranty?"):
        response = await api.post("/chat", json={"question": question, "user": "ann@example.com"})
        ids.append(response.json()["conversation_id"])
    await api.post("/chat", json={"question": "When do you close?", "role": "support"})

    listed = (await api.get("/conversations")).json()
    assert [c["id"] for c in listed["conversations"]][1:] == ids[::-1]
    assert listed["next_before"] is None
    assert all(c["channel"] == "chat" for c in listed["conversations"])
    ann = listed["conversations"][1]
    assert ann["participant_hash"] and "ann@example.com" not in str(listed)

    support = (await api.get("/conversations", params={"role": "support"})).json()
    assert [c["role"] for c in support["conversations"]] == ["support"]

    page = (await api.get("/conversations", params={"limit": 2})).json()
    assert len(page["conversations"]) == 2
    rest = (
        await api.get("/conversations", params={"limit": 2, "before": page["next_before"]})
    ).json()
    seen = [c["id"] for c in page["conversations"] + rest["conversations"]]
    assert sorted(seen) == sorted([*ids, support["conversations"][0]["id"]])

    future = (await api.get("/conversations", params={"since": "2999-01-01"})).json()
    assert future["conversations"] == []
    declined = (await api.get(f"/conversations/{ids[2]}")).json()
    assert declined["turns"][0]["outcome"] == "not_found"


async def test_a_conversation_continued_while_the_owner_pages_stays_on_its_page(api):
    await add(api, "policies.md", POLICIES)
    ids = []
    for question in ("When does the shop open?", "Can I return shoes?", "Sizes?", "Hours?"):
        ids.append((await api.post("/chat", json={"question": question})).json()["conversation_id"])
    first = (await api.get("/conversations", params={"limit": 2})).json()
    assert [c["id"] for c in first["conversations"]] == ids[:1:-1]
    later = ids[0]  # on page 2: a new turn makes it the latest active
    again = await api.post("/chat", json={"question": "and close?", "conversation_id": later})
    assert again.json()["conversation_id"] == later, again.text
    second = (
        await api.get("/conversations", params={"limit": 2, "before": first["next_before"]})
    ).json()
    seen = [c["id"] for c in first["conversations"] + second["conversations"]]
    assert sorted(seen) == sorted(ids), seen  # each once, none skipped


async def test_bad_filters_are_refused_by_name(api):
    for params, field in (
        ({"channel": "fax"}, "channel"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-02-01", "until": "2026-01-01"}, "until"),
        ({"limit": "0"}, "limit"),
    ):
        response = await api.get("/conversations", params=params)
        assert response.status_code == 422, (params, response.text)
        assert response.json()["field"] == field
    missing = await api.get("/conversations/12345")
    assert missing.status_code == 404


async def test_conversations_older_than_the_retention_are_deleted_when_one_begins(api, fake_clock):
    await add(api, "policies.md", POLICIES)
    old = (await api.post("/chat", json={"question": "When does the shop open?"})).json()
    fake_clock.advance(timedelta(days=89))
    kept = (await api.post("/chat", json={"question": "When does the shop close?"})).json()
    fake_clock.advance(timedelta(days=2))  # the first is now 91 days old, the second 2
    new = (await api.post("/chat", json={"question": "Can I return shoes?"})).json()
    listed = (await api.get("/conversations")).json()["conversations"]
    assert [c["id"] for c in listed] == [new["conversation_id"], kept["conversation_id"]]
    gone = await api.get(f"/conversations/{old['conversation_id']}")
    assert gone.status_code == 404
    follow_up = await api.post(
        "/chat", json={"question": "and shirts?", "conversation_id": old["conversation_id"]}
    )
    assert follow_up.status_code == 404  # a deleted conversation cannot be continued


# ------------------------------------------------------------------ searching and counting


async def recorded(service, *turns: tuple[str, str], channel="chat", author="ai") -> int:
    """A conversation of ``turns`` (question, answer), recorded as the channels record
    them (no provider asked: the listing is what is tested); its id."""
    conversation = None
    for question, answer in turns:
        record = TurnRecord(channel, conversation, question, answer, "answered", author=author)
        now = datetime.now(UTC)
        conversation = (await service.database.run(record_turn, record, now, 0)).conversation_id
    assert conversation is not None
    return conversation


async def listed(api, **params) -> dict:
    response = await api.get("/conversations", params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_conversations_are_found_by_what_was_asked_or_answered_and_counted(api, service):
    refund = await recorded(
        service,
        ("Can I get a REFUND for shoes?", "Yes, within 14 days."),
        ("and shirts?", "Shirts: 30 days."),
    )
    hours = await recorded(service, ("When do you open?", "We open at 9 am; refunds at the desk."))
    percent = await recorded(service, ("Is it 100% cotton?", "It is 100%_organic."))
    plain = await recorded(service, ("Do you ship to Japan?", "We ship worldwide."))

    everything = await listed(api)
    assert [c["id"] for c in everything["conversations"]] == [plain, percent, hours, refund]
    assert everything["total"] == 4
    first = everything["conversations"][-1]
    assert first["first_question"] == "Can I get a REFUND for shoes?"
    assert first["last_message"] == {"author": "ai", "text": "Shirts: 30 days."}

    found = await listed(api, q="refund")  # a question in any case, or an answer
    assert [c["id"] for c in found["conversations"]] == [hours, refund]
    assert found["total"] == 2 and found["next_before"] is None
    assert [c["id"] for c in (await listed(api, q="30 DAYS"))["conversations"]] == [refund]
    assert [c["id"] for c in (await listed(api, q="%_"))["conversations"]] == [percent]
    assert (await listed(api, q="0_o"))["conversations"] == []  # _ is no wildcard
    assert (await listed(api, q="'; DROP TABLE conversations; --"))["total"] == 0
    assert (await listed(api, q="refund", channel="web"))["total"] == 0

    page = await listed(api, q="O", limit=2)  # every one has an "o"
    assert page["total"] == 4 and len(page["conversations"]) == 2
    rest = await listed(api, q="O", limit=2, before=page["next_before"])
    assert rest["total"] == 4  # on all pages: the cursor aside
    assert [c["id"] for c in page["conversations"] + rest["conversations"]] == [
        plain,
        percent,
        hours,
        refund,
    ]


async def test_the_first_question_and_last_message_are_trimmed_and_null_without_one(
    api, service, database_url
):
    long = "Why " + "really " * 60 + "?"
    talk = await recorded(service, (long, "Because " + "so " * 100))
    with psycopg.connect(database_url) as conn:  # begun, no turn recorded yet
        [(empty,)] = conn.execute(
            """INSERT INTO conversations (channel, started_at, updated_at)
               VALUES ('web', now(), now()) RETURNING id"""
        ).fetchall()
    shown = {c["id"]: c for c in (await listed(api))["conversations"]}
    assert shown[talk]["first_question"] == long[:200]
    assert shown[talk]["last_message"]["text"] == ("Because " + "so " * 100)[:200]
    assert shown[empty]["first_question"] is None and shown[empty]["last_message"] is None


async def test_a_search_too_long_is_422_naming_q(api):
    problem = assert_problem(await api.get("/conversations", params={"q": "x" * 201}), 422)
    assert problem["field"] == "q"
    assert (await listed(api, q="x" * 200))["total"] == 0
