"""The owner (and, through the widget, the visitor) rates a turn's answer: the rating is
stored on the turn, shown by GET /conversations/{id}, replaced, taken back with null;
an unknown conversation or turn is 404 and a rating other than up, down or null is 422.
A rating may come with a comment, shown on the turn and taken back with it; a comment
without a rating, or too long, is 422. Each rating given is counted in
ragchat_feedback_total by channel."""

from __future__ import annotations

from datetime import datetime

import httpx

from tests.io.test_conversations import POLICIES, add
from tests.io.test_metrics import scrape, value


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


async def commented(api: httpx.AsyncClient, conversation: int) -> list[tuple[str | None, ...]]:
    """Each turn's rating and comment."""
    found = (await api.get(f"/conversations/{conversation}")).json()
    return [(t["feedback"], t["feedback_comment"]) for t in found["turns"]]


async def test_a_comment_is_stored_with_its_rating_shown_replaced_and_taken_back_with_it(api):
    conversation = await two_turns(api)
    assert await commented(api, conversation) == [(None, None), (None, None)]
    path = f"/conversations/{conversation}/turns/1/feedback"

    given = {"rating": "down", "comment": "  The shop opens at 8 on Saturdays.\n"}
    assert (await api.post(path, json=given)).status_code == 204
    assert await commented(api, conversation) == [
        ("down", "The shop opens at 8 on Saturdays."),
        (None, None),
    ]
    # a blank comment is none; rating again replaces the comment too
    assert (await api.post(path, json={"rating": "up", "comment": "   "})).status_code == 204
    assert await commented(api, conversation) == [("up", None), (None, None)]
    longest = {"rating": "down", "comment": "x" * 1000}
    assert (await api.post(path, json=longest)).status_code == 204
    assert await commented(api, conversation) == [("down", "x" * 1000), (None, None)]

    taken_back = await api.post(path, json={"rating": None})
    assert taken_back.status_code == 204, taken_back.text
    assert await commented(api, conversation) == [(None, None), (None, None)]


async def test_a_comment_without_a_rating_or_too_long_is_422_naming_it_and_changes_nothing(api):
    conversation = await two_turns(api)
    path = f"/conversations/{conversation}/turns/2/feedback"
    await api.post(path, json={"rating": "down", "comment": "wrong hours"})
    for body, words in (
        ({"rating": None, "comment": "never mind"}, 'goes with a rating ("up" or "down")'),
        ({"comment": "no rating at all"}, "rating"),
        ({"rating": "up", "comment": "x" * 1001}, "has 1001 characters; the limit is 1000"),
        ({"rating": "up", "comment": ["a list"]}, "must be text"),
    ):
        response = await api.post(path, json=body)
        assert response.status_code == 422, (body, response.text)
        problem = response.json()
        assert words in problem["detail"], (body, problem)
        assert problem["field"] == ("rating" if "rating" not in body else "comment")
    assert await commented(api, conversation) == [(None, None), ("down", "wrong hours")]


async def test_each_rating_given_is_counted_by_channel_and_rating_a_take_back_is_not(api):
    conversation = await two_turns(api)
    path = f"/conversations/{conversation}/turns/1/feedback"
    before = await scrape(api)
    for rating in ("up", "down", "down", None):
        assert (await api.post(path, json={"rating": rating})).status_code == 204
    await api.post(path, json={"rating": None, "comment": "refused"})  # 422: not counted
    await api.post(f"/conversations/{conversation}/turns/7/feedback", json={"rating": "up"})
    after = await scrape(api)

    def given(samples, rating):
        return value(samples, "ragchat_feedback_total", channel="chat", rating=rating)

    assert given(after, "up") - given(before, "up") == 1
    assert given(after, "down") - given(before, "down") == 2
    assert await turns(api, conversation) == [(None, False), (None, False)]
