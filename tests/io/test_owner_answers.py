"""The owner's answers through the real service (docs/answers.md): written, edited,
withdrawn and imported over HTTP; a question close to one is answered with it with no
provider call and no token (counted at the fake provider and in the usage ledger), a
less close one gives it to the model as its first source; two services on one database
(replicas) see each edit at once."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest
import trio

from ragio.startup import open_service
from tests.conftest import make_settings
from tests.io.conftest import serve_service
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.test_chat_stream import events

HOURS = ["What are your opening hours?", "When does the shop open?"]
HOURS_ANSWER = "We are open Monday to Saturday, 9 am to 6 pm."
CHAT = "/v1/chat/completions"


async def write(api: httpx.AsyncClient, questions: list[str], answer: str) -> dict[str, Any]:
    response = await api.post("/answers", json={"questions": questions, "answer": answer})
    assert response.status_code == 201, response.text
    return response.json()


async def ask(api: httpx.AsyncClient, question: str) -> dict[str, Any]:
    response = await api.post("/chat", json={"question": question})
    assert response.status_code == 200, response.text
    return response.json()


async def owner_answers_metric(api: httpx.AsyncClient, how: str) -> float:
    series = f'ragchat_owner_answers_total{{channel="chat",how="{how}"}} '
    lines = (await api.get("/metrics")).text.splitlines()
    return next((float(line.split()[-1]) for line in lines if line.startswith(series)), 0.0)


def served(body: dict[str, Any], answer_id: int) -> bool:
    """Answered with the owner's answer as it is: citing it, no provider asked."""
    return (
        body["provider"] is None
        and [c.get("owner_answer_id") for c in body["citations"]] == [answer_id]
        and body["citations"][0]["document_name"] == "the owner's answer"
    )


class TestWritingAnswers:
    async def test_an_answer_is_written_read_edited_and_withdrawn_with_its_history(self, api):
        written = await write(api, HOURS, HOURS_ANSWER)
        assert written["questions"] == HOURS and written["version"] == 1
        assert written["answer"] == HOURS_ANSWER and written["served"] == 0
        one = f"/answers/{written['id']}"

        edited = await api.patch(one, json={"answer": "Open 9 am to 7 pm, Monday to Saturday."})
        assert edited.status_code == 200 and edited.json()["version"] == 2
        again = await api.patch(one, json={"answer": "Open 9 am to 7 pm, Monday to Saturday."})
        assert again.json()["version"] == 2  # nothing changed: no new version

        got = (await api.get(one)).json()
        assert [(v["version"], v["change"]) for v in got["versions"]] == [
            (2, "edited"),
            (1, "created"),
        ]
        assert got["versions"][1]["answer"] == HOURS_ANSWER
        listed = (await api.get("/answers")).json()
        assert [a["id"] for a in listed["answers"]] == [written["id"]]
        assert "versions" not in listed["answers"][0]

        assert (await api.delete(one)).status_code == 204
        assert (await api.get(one)).status_code == 404
        assert (await api.delete(one)).status_code == 404
        assert (await api.get("/answers")).json()["answers"] == []

    async def test_a_question_another_answer_covers_is_a_conflict(self, api):
        first = await write(api, HOURS, HOURS_ANSWER)
        response = await api.post(
            "/answers", json={"questions": ["when does the SHOP open"], "answer": "Never."}
        )
        assert response.status_code == 409
        assert response.json()["existing_id"] == first["id"]
        other = await write(api, ["Do you deliver?"], "Yes, in town.")
        clash = await api.patch(f"/answers/{other['id']}", json={"questions": HOURS[:1]})
        assert clash.status_code == 409

    @pytest.mark.parametrize(
        "body, field",
        [
            ({"answer": "x"}, "questions"),
            ({"questions": [], "answer": "x"}, "questions"),
            ({"questions": ["  "], "answer": "x"}, "questions[0]"),
            ({"questions": ["a?", "A?"], "answer": "x"}, "questions[1]"),
            ({"questions": ["a?"], "answer": " "}, "answer"),
            ({"questions": ["a?"], "answer": "x" * 4001}, "answer"),
            ({"questions": ["a?"], "answer": "x", "title": "t"}, "title"),
        ],
    )
    async def test_a_bad_answer_is_a_422_naming_the_field(self, api, body, field):
        response = await api.post("/answers", json=body)
        assert response.status_code == 422
        assert response.json()["field"] == field, response.json()
        assert (await api.get("/answers")).json()["answers"] == []


CSV = """question,answer,notes
What are your opening hours?,"We are open Monday to Saturday, 9 am to 6 pm.",hours
"Do you deliver?
Can you bring it to my house?",We deliver within 10 km for 5 euros.,
"""


class TestImport:
    async def test_a_csv_faq_is_imported_and_imported_again_as_new_versions(self, api):
        response = await api.post("/answers/import", json={"format": "csv", "text": CSV})
        assert response.status_code == 201, response.text
        assert response.json() | {"answers": []} == {
            "created": 2,
            "updated": 0,
            "unchanged": 0,
            "answers": [],
        }
        listed = (await api.get("/answers")).json()["answers"]
        assert sorted(a["questions"][0] for a in listed) == [
            "Do you deliver?",
            "What are your opening hours?",
        ]
        changed = CSV.replace("5 euros", "4 euros")
        again = await api.post("/answers/import", json={"format": "csv", "text": changed})
        assert (again.json()["created"], again.json()["updated"]) == (0, 1)
        assert again.json()["unchanged"] == 1
        delivery = (await api.get(f"/answers/{again.json()['answers'][1]}")).json()
        assert delivery["answer"] == "We deliver within 10 km for 4 euros."
        assert [v["change"] for v in delivery["versions"]] == ["imported", "imported"]

    async def test_a_json_faq_with_malformed_entries_is_refused_by_line_and_nothing_is_kept(
        self, api
    ):
        text = """[
  {"question": "Do you deliver?", "answer": "Yes."},
  {"questions": "not a list", "answer": "x"},
  {"question": "Can I pay by card?"},
  {"question": "Do you deliver?", "answer": "Twice."}
]"""
        response = await api.post("/answers/import", json={"format": "json", "text": text})
        assert response.status_code == 422
        problems = response.json()["problems"]
        assert [p["line"] for p in problems] == [3, 4, 5]
        assert "answer" in problems[1]["detail"] and "line 2" in problems[2]["detail"]
        assert (await api.get("/answers")).json()["answers"] == []

    async def test_a_csv_without_the_columns_is_refused(self, api):
        response = await api.post(
            "/answers/import", json={"format": "csv", "text": "q,a\nDo you deliver?,Yes\n"}
        )
        assert response.status_code == 422
        assert response.json()["problems"] == [
            {"line": 1, "detail": 'needs a header row with a "question" and an "answer" column'}
        ]


class TestServingAnswers:
    """On a fake OpenAI server with the local embedder and the usage ledger on."""

    @pytest.fixture
    async def fake(self, serve_fake) -> FakeOpenAI:
        return await serve_fake(FakeOpenAI(reply="From the documents [1]."))

    @pytest.fixture
    def settings_overrides(self, fake: FakeOpenAI) -> dict[str, Any]:
        return {
            "openai_api_key": fake.api_key,
            "openai_base_url": fake.base_url,
            "embedding_provider": "local",
            "usage_ledger": "true",
        }

    async def test_a_close_question_is_answered_by_the_owner_with_no_model_and_no_token(
        self, api, fake
    ):
        await api.post("/documents", json={"name": "shop.md", "text": "The shop sells shoes."})
        written = await write(api, HOURS, HOURS_ANSWER)
        tokens = (await api.get("/usage")).json()["today"]["tokens"]
        before = await owner_answers_metric(api, "served")

        body = await ask(api, "What are the opening hours?")

        assert body["answer"] == HOURS_ANSWER
        assert served(body, written["id"])
        assert fake.requests_to(CHAT) == []
        assert (await api.get("/usage")).json()["today"]["tokens"] == tokens
        assert (await api.get(f"/answers/{written['id']}")).json()["served"] == 1
        assert await owner_answers_metric(api, "served") - before == 1
        turn = (await api.get(f"/conversations/{body['conversation_id']}")).json()["turns"][0]
        assert turn["outcome"] == "answered" and turn["citations"][0]["owner_answer_id"]

    async def test_an_edit_counts_at_once_and_a_withdrawn_answer_is_not_served(self, api, fake):
        written = await write(api, HOURS, HOURS_ANSWER)
        await api.patch(f"/answers/{written['id']}", json={"answer": "Closed for holidays."})
        assert (await ask(api, HOURS[0]))["answer"] == "Closed for holidays."
        await api.delete(f"/answers/{written['id']}")
        body = await ask(api, HOURS[0])
        assert body["citations"] == [] and "Closed" not in body["answer"]

    async def test_a_less_close_question_gets_the_owner_answer_as_the_first_source(self, api, fake):
        await api.post(
            "/documents", json={"name": "shop.md", "text": "The shop is in the old town."}
        )
        await write(api, HOURS, HOURS_ANSWER)
        before = await owner_answers_metric(api, "cited")

        body = await ask(api, "Are you open late on Fridays?")

        [call] = fake.requests_to(CHAT)
        prompt = call.body["messages"][-1]["content"]
        assert f"[1] (the owner's answer)\n{HOURS_ANSWER}" in prompt
        assert body["provider"] == "openai"
        assert body["citations"][0]["document_name"] == "the owner's answer"
        assert await owner_answers_metric(api, "cited") - before == 1


async def test_offline_the_owner_answer_is_served_too(api):
    written = await write(api, HOURS, HOURS_ANSWER)
    body = await ask(api, "what are the opening hours")
    assert body["answer"] == HOURS_ANSWER and served(body, written["id"])


async def test_replicas_on_one_database_see_each_edit_at_once(api, database_url, tmp_path):
    settings = make_settings(database_url=database_url, data_dir=tmp_path / "other")
    async with open_service(settings) as other, trio.open_nursery() as nursery:
        url, stop = await serve_service(other, nursery)
        replica = httpx.AsyncClient(base_url=url, timeout=30)
        written = await write(api, HOURS, HOURS_ANSWER)
        assert (await ask(replica, HOURS[1]))["answer"] == HOURS_ANSWER
        await api.patch(f"/answers/{written['id']}", json={"answer": "Open all day."})
        assert (await ask(replica, HOURS[1]))["answer"] == "Open all day."
        await api.delete(f"/answers/{written['id']}")
        assert (await ask(replica, HOURS[1]))["citations"] == []
        await replica.aclose()
        stop.set()


async def test_a_change_of_embedding_space_embeds_the_owner_questions_again(
    api, service, database_url
):
    written = await write(api, HOURS, HOURS_ANSWER)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE owner_answer_questions SET embedding = NULL")
    body = await ask(api, "What are the opening hours?")  # not word for word
    assert served(body, written["id"])
    with psycopg.connect(database_url) as conn:
        empty = conn.execute(
            "SELECT count(*) FROM owner_answer_questions WHERE embedding IS NULL"
        ).fetchone()
    assert empty == (0,)


async def test_a_streamed_question_gets_the_owner_answer_too(api):
    written = await write(api, HOURS, HOURS_ANSWER)
    response, received = await events(api, question="What are the opening hours?")
    assert response.status_code == 200
    [(kind, done)] = [event for event in received if event[0] == "done"]
    assert done["answer"] == HOURS_ANSWER and served(done, written["id"])
