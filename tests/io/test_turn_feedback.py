"""The owner (and, through the widget, the visitor) rates a turn's answer: the rating is
stored on the turn, shown by GET /conversations/{id}, replaced, taken back with null;
an unknown conversation or turn is 404 and a rating other than up, down or null is 422."""

from __future__ import annotations

from datetime import datetime

import httpx

from tests.io.test_conversations import POLICIES, add


async def two_turns(api: httpx.AsyncClient) -> int:
    await add(api, "policies.md", POLICIES)
    first = await api.post("/chat", json={"question": "When does the shop open?"})
    conversation = first.json()["conversation_id"]
    again = await api.post(
        "/chat", json={"question": "and close?", "conversation_id": conversation}
    )
    assert again.status_code == 200, again.text
    return conversation


async def turns(api: httpx.AsyncClient, conversation: int) -> list[tuple[str | None, bool]]:
    """Each turn's rating, and whether it says when it was rated."""
    found = await api.get(f"/conversations/{conversation}")
    assert found.status_code == 200, found.text
    return [(t["feedback"], t["feedback_at"] is not None) for t in found.json()["turns"]]


async def test_a_rating_is_stored_on_its_turn_replaced_and_taken_back(api):
    conversation = await two_turns(api)
    assert await turns(api, conversation) == [(None, False), (None, False)]

    rated = await api.post(f"/conversations/{conversation}/turns/2/feedback", json={"rating": "up"})
    assert rated.status_code == 204, rated.text
    assert rated.content == b""
    assert await turns(api, conversation) == [(None, False), ("up", True)]
    shown = (await api.get(f"/conversations/{conversation}")).json()["turns"][1]
    assert datetime.fromisoformat(shown["feedback_at"]).tzinfo is not None

    changed = await api.post(
        f"/conversations/{conversation}/turns/2/feedback", json={"rating": "down"}
    )
    assert changed.status_code == 204, changed.text
    await api.post(f"/conversations/{conversation}/turns/1/feedback", json={"rating": "up"})
    assert await turns(api, conversation) == [("up", True), ("down", True)]

    taken_back = await api.post(
        f"/conversations/{conversation}/turns/2/feedback", json={"rating": None}
    )
    assert taken_back.status_code == 204, taken_back.text
    assert await turns(api, conversation) == [("up", True), (None, False)]


async def test_an_unknown_conversation_or_turn_is_404(api):
    conversation = await two_turns(api)
    for path, names in (
        (f"/conversations/{conversation}/turns/3/feedback", "turn '3'"),
        (f"/conversations/{conversation}/turns/0/feedback", "turn '0'"),
        (f"/conversations/{conversation}/turns/abc/feedback", "turn 'abc'"),
        (f"/conversations/{conversation}/turns/99999999999/feedback", "turn"),
        ("/conversations/987654/turns/1/feedback", "conversation '987654'"),
        ("/conversations/x/turns/1/feedback", "conversation 'x'"),
    ):
        response = await api.post(path, json={"rating": "up"})
        assert response.status_code == 404, (path, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert names in response.json()["detail"], (path, response.text)
    assert await turns(api, conversation) == [(None, False), (None, False)]


async def test_a_rating_other_than_up_down_or_null_is_422_and_changes_nothing(api):
    conversation = await two_turns(api)
    path = f"/conversations/{conversation}/turns/1/feedback"
    await api.post(path, json={"rating": "down"})
    for body in ({"rating": "sideways"}, {"rating": "UP"}, {"rating": 1}, {}, {"rate": "up"}):
        response = await api.post(path, json=body)
        assert response.status_code == 422, (body, response.text)
        assert response.headers["content-type"] == "application/problem+json"
    refused = await api.post(path, json={"rating": "meh"})
    assert refused.json()["field"] == "rating"
    assert '"up", "down" or null' in refused.json()["detail"]
    assert await turns(api, conversation) == [("down", True), (None, False)]
