"""Rule 13 through HTTP: a sensitive role answers in reasoning mode (only the final
answer is shown, streamed or not) and its answer passes a grounding check, a second
low-temperature call; an answer judged not grounded carries a plain caveat."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragcore.chat.grounding import CAVEATS, CHECK_INSTRUCTIONS
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import ApiError, FakeOpenAI

FAQ = "# Filing\n\nTax returns for the shop are filed every year by the end of May."
ANSWER = "Returns are filed by the end of May [1]."
REASONED = (
    "<reasoning>The question is about the filing deadline. Source 1 says end of May."
    "</reasoning>\n<answer>" + ANSWER + "</answer>"
)
TAX_HELPER = {
    "display_name": "Tax Helper",
    "personality": "You answer the team's questions about our filing checklist.",
}
QUESTION = {"question": "When are the tax returns filed?"}


class Model:
    """The fake's model: the answer with its reasoning, and the judge's ``verdict``."""

    def __init__(self, verdict: str | Exception = "GROUNDED"):
        self.verdict = verdict

    def __call__(self, body: dict[str, Any]) -> str:
        if body["messages"][0]["content"] != CHECK_INSTRUCTIONS:
            return REASONED
        if isinstance(self.verdict, Exception):
            raise self.verdict
        return self.verdict


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    fake = await serve_fake(FakeOpenAI(api_key="sk-test"))
    fake.respond = Model()
    return fake


@pytest.fixture
def settings_overrides(fake: FakeOpenAI) -> dict[str, Any]:
    return on_openai(fake, usage_ledger="true")


@pytest.fixture
async def tax_helper(api) -> str:
    await api.post("/documents", json={"name": "filing.md", "text": FAQ})
    created = await api.patch("/employees/tax_helper", json=TAX_HELPER)
    assert created.status_code == 201 and created.json()["sensitive"] is True
    return "tax_helper"


def chat_calls(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests_to("/v1/chat/completions")]


async def test_only_the_final_answer_is_returned_and_it_is_checked(api, fake, tax_helper):
    response = await api.post("/chat", params={**QUESTION, "role": tax_helper})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == ANSWER  # no reasoning, no caveat
    assert body["grounded"] is True
    assert [c["document_name"] for c in body["citations"]] == ["filing.md"]
    answer, check = chat_calls(fake)
    assert answer["temperature"] != 0 and check["temperature"] == 0
    judged = check["messages"][1]["content"]
    assert ANSWER in judged and "<reasoning>" not in judged and FAQ.split("\n\n")[1] in judged


@pytest.mark.parametrize("verdict", ["NOT_GROUNDED", "I am not sure."])
async def test_an_answer_not_judged_grounded_gets_a_caveat(api, fake, tax_helper, verdict):
    fake.respond = Model(verdict)
    body = (await api.post("/chat", params={**QUESTION, "role": tax_helper})).json()
    assert body["answer"] == f"{ANSWER}\n\n{CAVEATS['en']}"
    assert body["grounded"] is False


async def test_a_judge_that_fails_leaves_the_caveat(api, fake, tax_helper):
    fake.respond = Model(ApiError(503, "The engine is currently overloaded.", "server_error"))
    body = (await api.post("/chat", params={**QUESTION, "role": tax_helper})).json()
    assert body["answer"].endswith(CAVEATS["en"]) and body["grounded"] is False


async def test_the_stream_shows_no_reasoning(api, fake, tax_helper):
    response = await api.post("/chat/stream", params={**QUESTION, "role": tax_helper})
    assert response.status_code == 200
    events = [
        (block.split("\n")[0].removeprefix("event: "), json.loads(block.split("data: ", 1)[1]))
        for block in response.text.strip().split("\n\n")
    ]
    tokens = "".join(data["text"] for kind, data in events if kind == "token")
    assert tokens == ANSWER
    kind, done = events[-1]
    assert kind == "done" and done["answer"] == ANSWER and done["grounded"] is True


async def test_both_calls_are_recorded_in_the_usage_ledger(api, fake, tax_helper):
    body = (await api.post("/chat", params={**QUESTION, "role": tax_helper})).json()
    answer_prompt = sum(len(str(m["content"]).split()) for m in chat_calls(fake)[0]["messages"])
    judge_prompt = sum(len(str(m["content"]).split()) for m in chat_calls(fake)[1]["messages"])
    answer = {"prompt_tokens": answer_prompt, "completion_tokens": len(REASONED.split())}
    judge = {"prompt_tokens": judge_prompt, "completion_tokens": 1}  # "GROUNDED"
    assert body["usage"] == {**answer, "estimated": False}
    assert body["check_usage"] == {**judge, "estimated": False}
    usage = (await api.get("/usage")).json()
    assert usage["today"]["tokens"] == sum(answer.values()) + sum(judge.values())
    [role] = [r for r in usage["this_month_by_role"] if r["role"] == tax_helper]
    assert role["calls"] == 2  # each call is a row of its own


async def test_a_built_in_sensitive_role_is_checked_and_others_are_not(api, fake, tax_helper):
    finance = (await api.post("/chat", params={**QUESTION, "role": "finance"})).json()
    assert finance["grounded"] is True and len(chat_calls(fake)) == 2
    fake.respond = None
    fake.reply = ANSWER
    support = (await api.post("/chat", params={**QUESTION, "role": "support"})).json()
    assert support["grounded"] is None and support["answer"] == ANSWER
    assert len(chat_calls(fake)) == 3  # one call, no check


class TestOffline:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {}  # local embeddings, extractive answers

    async def test_the_extractive_answer_quotes_its_sources_and_needs_no_judge(self, api):
        await api.post("/documents", json={"name": "filing.md", "text": FAQ})
        await api.patch("/employees/tax_helper", json=TAX_HELPER)
        body = (await api.post("/chat", params={**QUESTION, "role": "tax_helper"})).json()
        assert "end of May" in body["answer"] and CAVEATS["en"] not in body["answer"]
        assert body["grounded"] is True and body["provider"] == "extractive"
