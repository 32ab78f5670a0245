"""GET /insights/gaps and GET /insights/top-questions through the real service, offline
(the local embedder groups the questions): refused, disliked and handed-over questions
grouped by need, filtered, paged, and a group the owner answers leaves the gaps."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

REFUNDS = "Customers can return any item within 30 days of delivery for a full refund."
PARKING = [
    "Is there parking near the shop?",
    "Where can I park my car when I visit?",
    "Do you have a car park for customers?",
]
GIFT = ["Do you sell gift cards?", "Can I buy a gift voucher?"]


async def ask(api: httpx.AsyncClient, question: str) -> dict[str, Any]:
    response = await api.post("/chat", json={"question": question})
    assert response.status_code == 200, response.text
    return response.json()


async def gaps(api: httpx.AsyncClient, path: str = "/insights/gaps", **params: Any) -> Any:
    response = await api.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
async def asked(api) -> dict[str, Any]:
    """Three refused questions about parking, two about gift cards, one answered question
    rated down, one answered and liked."""
    await api.post("/documents", json={"name": "refunds.md", "text": REFUNDS})
    for question in PARKING + GIFT:
        assert (await ask(api, question))["citations"] == []
    disliked = await ask(api, "How many days do I have to return an item?")
    liked = await ask(api, "Can I return an item for a refund?")
    for body, rating in ((disliked, "down"), (liked, "up")):
        rated = await api.post(
            f"/conversations/{body['conversation_id']}/turns/{body['turn']}/feedback",
            json={"rating": rating},
        )
        assert rated.status_code == 204
    return {"disliked": disliked}


async def test_the_gaps_are_grouped_by_need_most_asked_first(api, asked):
    found = await gaps(api)
    assert found["questions"] == 6  # 5 refused, 1 disliked; the liked one is no gap
    first, second, third = found["groups"]
    assert sorted(first["examples"]) == sorted(PARKING)
    assert first["count"] == 3 and first["reasons"]["not_found"] == 3
    assert first["channels"] == ["chat"] and first["answered"] is False
    assert first["question"] in PARKING and len(first["conversations"]) == 3
    assert sorted(second["examples"]) == sorted(GIFT)
    assert third["examples"] == ["How many days do I have to return an item?"]
    assert third["reasons"] == {"not_found": 0, "disliked": 1, "handed_off": 0}
    assert found["total"] == 3 and found["next_offset"] is None


async def test_gaps_are_filtered_and_paged(api, asked):
    page = await gaps(api, limit=1)
    assert page["total"] == 3 and page["next_offset"] == 1
    assert sorted(page["groups"][0]["examples"]) == sorted(PARKING)
    last = await gaps(api, limit=2, offset=page["next_offset"])
    assert len(last["groups"]) == 2 and last["next_offset"] is None
    assert (await gaps(api, channel="telegram"))["groups"] == []
    assert (await gaps(api, until="2000-01-01"))["groups"] == []
    assert (await gaps(api, since="2000-01-01", channel="chat"))["total"] == 3


async def test_a_group_the_owner_answers_leaves_the_gaps(api, asked):
    [parking] = [g for g in (await gaps(api))["groups"] if g["count"] == 3]
    written = await api.post(
        "/answers",
        json={"questions": parking["examples"], "answer": "Yes: the car park behind the shop."},
    )
    assert written.status_code == 201

    left = await gaps(api)
    assert [g["count"] for g in left["groups"]] == [2, 1]
    [answered] = (await gaps(api, answered="true"))["groups"]
    assert answered["answer_id"] == written.json()["id"] and answered["answered"] is True
    again = await ask(api, "Is there parking near the shop?")
    assert again["answer"] == "Yes: the car park behind the shop."


async def test_the_top_questions_count_every_question_asked(api, asked):
    top = await gaps(api, "/insights/top-questions")
    assert top["questions"] == 7
    counts = sorted((g["count"] for g in top["groups"]), reverse=True)
    assert counts[:2] == [3, 2] and sum(counts) == 7
    returns = [g for g in top["groups"] if any("return" in e for e in g["examples"])]
    assert sum(g["reasons"]["disliked"] for g in returns) == 1


@pytest.mark.parametrize(
    "params, field",
    [
        ({"channel": "fax"}, "channel"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-02-01", "until": "2026-01-01"}, "until"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"answered": "maybe"}, "answered"),
    ],
)
@pytest.mark.parametrize("path", ["/insights/gaps", "/insights/top-questions"])
async def test_bad_values_are_a_422_naming_them(api, params, field, path):
    response = await api.get(path, params=params)
    assert response.status_code == 422
    assert response.json()["field"] == field
