"""The business profile through the real HTTP API: reading it empty, setting the owner's
fields, refusing the summary and unknown fields, learning the summary offline and through
an LLM, and every role's context showing it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

from ragio.http import profile as profile_routes
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.test_http_errors import assert_problem

OWNER = {
    "description": "Velo Corner is a family bike shop in Ghent.",
    "products": "City bikes, e-bikes, repairs and rentals.",
    "tone": "Friendly and brief.",
    "language": "nl",
}
FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."
RETURNS = "Returns policy for bikes bought in store.\n\nReturn unused bikes within 30 days."


async def test_get_is_empty_when_never_set(api):
    response = await api.get("/profile")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "description": "",
        "products": "",
        "tone": "",
        "language": "",
        "name": "",
        "opening_hours": "",
        "timezone": "",
        "learned_summary": "",
        "learned_at": None,
        "updated_at": None,
    }


async def test_patch_then_get_back(api):
    response = await api.patch("/profile", json=OWNER)
    assert response.status_code == 200, response.text
    again = (await api.get("/profile")).json()
    assert {field: again[field] for field in OWNER} == OWNER
    assert again["updated_at"] is not None
    # a later patch changes only what it names; null clears a field
    await api.patch("/profile", json={"tone": None, "language": "EN"})
    after = (await api.get("/profile")).json()
    assert (after["tone"], after["language"], after["products"]) == ("", "en", OWNER["products"])


async def test_the_summary_is_not_writable(api):
    response = await api.patch("/profile", json={"learned_summary": "We sell boats."})
    body = assert_problem(response, 422, "learned_summary")
    assert "POST /profile/learn" in body["detail"]
    assert (await api.get("/profile")).json()["learned_summary"] == ""


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"description": "x", "colour": "red"}, "colour"),
        ({"language": "english"}, "language"),
        ({"tone": "x" * 201}, "tone"),
        ({"products": ["bikes"]}, "products"),
    ],
)
async def test_bad_fields_are_422_and_nothing_is_written(api, body, named):
    assert_problem(await api.patch("/profile", json=body), 422, named)
    assert (await api.get("/profile")).json()["description"] == ""


async def test_learn_offline_summarises_the_documents(api):
    for name, text in [("faq.md", FAQ), ("returns.txt", RETURNS)]:
        assert (await api.post("/documents", json={"name": name, "text": text})).status_code == 201
    response = await api.post("/profile/learn")
    assert response.status_code == 200, response.text
    learned = response.json()
    assert learned["learned_by"] == "extractive"
    summary = learned["learned_summary"]
    assert "faq.md (Opening hours)" in summary
    assert "returns.txt (Returns policy for bikes bought in store.)" in summary
    assert learned["learned_at"] is not None
    again = (await api.post("/profile/learn")).json()
    assert again["learned_summary"] == summary  # deterministic
    assert (await api.get("/profile")).json()["learned_summary"] == summary


async def test_every_role_context_shows_the_profile(api):
    assert (await api.get("/employees")).status_code == 200  # seeds the roles
    await api.patch("/profile", json=OWNER)
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    await api.post("/profile/learn")
    for role in ("support", "sales"):
        response = await api.get(f"/employees/{role}/context", params={"query": "Opening?"})
        assert response.status_code == 200, response.text
        context = response.json()
        text = context["text"]
        assert "Business profile:" in text
        assert f"- About the business: {OWNER['description']}" in text
        assert f"- Products and services: {OWNER['products']}" in text
        assert "- Language: Dutch (nl)" in text
        assert "- Recent activity: Documents (1): faq.md (Opening hours)." in text
        assert text.index("Owner instructions:") < text.index("Business profile:")


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    return await serve_fake(
        FakeOpenAI(api_key="sk-test", reply="Velo Corner sells and repairs bikes in Ghent.")
    )


class TestLearnWithAnLLM:
    @pytest.fixture
    async def settings_overrides(self, fake: FakeOpenAI) -> dict[str, Any]:
        return on_openai(fake)

    async def test_learn_asks_the_model_with_the_activity(self, api, fake):
        await api.patch("/profile", json=OWNER)
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        response = await api.post("/profile/learn")
        assert response.status_code == 200, response.text
        learned = response.json()
        assert learned["learned_by"] == "llm"
        assert learned["learned_summary"] == "Velo Corner sells and repairs bikes in Ghent."
        [chat] = fake.requests_to("/v1/chat/completions")
        user = chat.body["messages"][-1]["content"]
        assert "Document: faq.md: Opening hours" in user
        assert OWNER["description"] in user


class TestLearningIsMetered:
    """Rule 14: the summary's model call is held to the budgets and recorded like a chat."""

    @pytest.fixture
    async def settings_overrides(self, fake: FakeOpenAI, request) -> dict[str, Any]:
        cap = getattr(request, "param", "0")
        return on_openai(fake, usage_ledger="true", budget_daily_tokens=cap)

    async def test_the_call_is_recorded_in_the_ledger(self, api, fake):
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        assert (await api.get("/usage")).json()["today"]["tokens"] == 0
        learned = (await api.post("/profile/learn")).json()
        assert learned["learned_by"] == "llm"
        [chat] = fake.requests_to("/v1/chat/completions")
        prompt_tokens = sum(len(m["content"].split()) for m in chat.body["messages"])
        reply_tokens = len(learned["learned_summary"].split())
        usage = (await api.get("/usage")).json()
        assert usage["today"]["tokens"] == prompt_tokens + reply_tokens

    @pytest.mark.parametrize("settings_overrides", ["50"], indirect=True)
    async def test_a_summary_that_does_not_fit_under_the_cap_is_made_offline(self, api, fake):
        """The call would pass the cap: it is not made, and the summary is made offline."""
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        learned = (await api.post("/profile/learn")).json()
        assert learned["learned_by"] == "extractive"
        assert "faq.md" in learned["learned_summary"]
        assert fake.requests_to("/v1/chat/completions") == []
        assert (await api.get("/usage")).json()["today"]["tokens"] == 0


async def test_learning_runs_as_one_job_however_many_ask_at_once(api):
    await api.post("/documents", json={"name": "faq.md", "text": FAQ})
    answers: list[httpx.Response] = []

    async def learn() -> None:
        answers.append(await api.post("/profile/learn"))

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(learn)
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert len({a.json()["learned_summary"] for a in answers}) == 1
    jobs = (await api.get("/jobs", params={"kind": "learn"})).json()["jobs"][::-1]
    assert 1 <= len(jobs) <= 3 and all(job["status"] == "done" for job in jobs)
    for earlier, later in zip(jobs, jobs[1:], strict=False):  # never two at once
        assert later["created_at"] >= earlier["finished_at"]


class TestWithoutAProcessRunningJobs:
    @pytest.fixture
    def settings_overrides(self):
        return {"run_jobs": False}

    async def test_learning_answers_202_with_its_job_when_it_waits_too_long(self, api, monkeypatch):
        monkeypatch.setattr(profile_routes, "LEARN_WAIT_SECONDS", 0.3)
        response = await api.post("/profile/learn")
        assert response.status_code == 202, response.text
        job = response.json()
        assert (job["kind"], job["status"]) == ("learn", "queued")
        assert response.headers["location"] == f"/jobs/{job['id']}"
        again = await api.post("/profile/learn")  # the same job, not a second one
        assert again.json()["id"] == job["id"]
