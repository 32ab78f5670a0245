"""/employees through the real HTTP API: seeding, reading, editing and creating roles,
sensitivity as the API reports it, and /chat answering as a stored role."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
import trio

from ragcore.chat.grounding import CHECK_INSTRUCTIONS
from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.layering import REASONING_INSTRUCTIONS
from ragcore.employees.roles import BUILT_IN_ROLES
from ragcore.generation import GROUNDING_INSTRUCTIONS
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.test_http_errors import assert_problem

FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."
TAX_LAWYER = {
    "display_name": "Tax Lawyer Bot",
    "personality": "You explain our filing checklist in plain words. Speak like a patient "
    "clerk who double-checks every date.",
    "skill_tags": ["filing", "deadlines"],
    "autonomy": "full",
}


def role_count(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT count(*) FROM roles").fetchone()[0]


async def test_the_first_listing_seeds_the_nine_built_in_roles(api):
    response = await api.get("/employees")
    assert response.status_code == 200
    employees = response.json()["employees"]
    assert [e["identifier"] for e in employees] == list(BUILT_IN_ROLES)
    support = employees[BUILT_IN_ROLES.index("support")]
    assert support["personality"] == BUILT_IN["support"].personality
    assert support["built_in"] is True
    assert {e["identifier"] for e in employees if e["sensitive"]} == {"finance", "hr"}


async def test_two_first_listings_at_the_same_moment_still_give_exactly_nine(api, database_url):
    results: list[Any] = []

    async def listing() -> None:
        results.append(await api.get("/employees"))

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(listing)
    assert all(r.status_code == 200 for r in results)
    assert all(len(r.json()["employees"]) == 9 for r in results)
    assert role_count(database_url) == 9


async def test_one_role_and_a_404_problem_for_an_unknown_one(api):
    response = await api.get("/employees/finance")
    assert response.status_code == 200
    finance = response.json()
    assert finance["display_name"] == BUILT_IN["finance"].display_name
    assert finance["sensitive"] is True
    assert finance["sensitivity"]["reason"] == "built-in"
    assert finance["effective_autonomy"] in ("off", "semi")
    assert_problem(await api.get("/employees/pirate"), 404, "pirate")


async def test_patch_updates_fields_and_they_persist(api, database_url):
    response = await api.patch("/employees/support", json={"channels": ["api", "telegram"]})
    assert response.status_code == 200, response.text
    assert response.json()["channels"] == ["api", "telegram"]
    again = (await api.get("/employees/support")).json()
    assert again["channels"] == ["api", "telegram"]
    assert again["personality"] == BUILT_IN["support"].personality  # untouched fields stay
    # seeding again never overwrites an edit, nor adds a role
    listed = (await api.get("/employees")).json()["employees"]
    assert listed[BUILT_IN_ROLES.index("support")]["channels"] == ["api", "telegram"]
    assert role_count(database_url) == 9


async def test_unknown_and_read_only_fields_are_refused_by_name(api):
    body = assert_problem(
        await api.patch("/employees/support", json={"mood": "grumpy", "channels": ["api"]}),
        422,
        "mood",
    )
    assert "channels" in body["detail"]  # the fields you can change are listed
    assert_problem(
        await api.patch("/employees/support", json={"sensitive": False}), 422, "read-only"
    )
    # nothing half-written: the valid field in the refused body was not applied
    assert (await api.get("/employees/support")).json()["channels"] != ["api"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"autonomy": "sometimes"}, "autonomy"),
        ({"channels": "api"}, "channels"),
        ({"skill_tags": ["Tax Law"]}, "skill_tags"),
        ({"personality": "   "}, "personality"),
    ],
)
async def test_badly_typed_fields_are_422_naming_them(api, body, field):
    assert assert_problem(await api.patch("/employees/sales", json=body), 422)["field"] == field


async def test_a_bad_identifier_is_422_with_the_rule(api):
    body = assert_problem(await api.patch("/employees/Tax%20Bot", json=TAX_LAWYER), 422)
    assert "lowercase letters, digits, _ and -, at most 64 characters" in body["detail"]
    body = assert_problem(await api.patch("/employees/" + "a" * 65, json=TAX_LAWYER), 422)
    assert "at most 64 characters" in body["detail"]


async def test_a_new_role_needs_a_display_name_and_personality(api, database_url):
    body = assert_problem(
        await api.patch("/employees/bakery-helper", json={"channels": ["api"]}), 422
    )
    assert "display_name" in body["detail"] and "personality" in body["detail"]
    assert_problem(await api.get("/employees/bakery-helper"), 404)


async def test_a_runtime_tax_lawyer_role_is_created_sensitive_with_autonomy_capped(api):
    response = await api.patch("/employees/tax_lawyer_bot", json=TAX_LAWYER)
    assert response.status_code == 201, response.text
    assert response.headers["location"] == "/employees/tax_lawyer_bot"
    role = response.json()
    assert role["built_in"] is False
    assert role["sensitive"] is True
    assert role["sensitivity"]["reason"] == "marker"
    assert role["sensitivity"]["marker"] in ("tax", "lawyer")
    assert role["autonomy"] == "full" and role["effective_autonomy"] == "semi"
    listed = (await api.get("/employees")).json()["employees"]
    assert listed[-1]["identifier"] == "tax_lawyer_bot" and len(listed) == 10
    # patching it again edits it, with 200
    again = await api.patch("/employees/tax_lawyer_bot", json={"autonomy": "off"})
    assert again.status_code == 200
    assert again.json()["effective_autonomy"] == "off"


class TestSettingsDecideSensitivity:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {
            "sensitive_roles_extra": "sales",
            "sensitive_roles_reviewed_safe": "tax_lawyer_bot,hr",
        }

    async def test_the_response_names_the_setting(self, api):
        sales = (await api.get("/employees/sales")).json()
        assert sales["sensitive"] is True
        assert sales["sensitivity"]["setting"] == "SENSITIVE_ROLES_EXTRA"
        created = (await api.patch("/employees/tax_lawyer_bot", json=TAX_LAWYER)).json()
        assert created["sensitive"] is False
        assert created["sensitivity"]["setting"] == "SENSITIVE_ROLES_REVIEWED_SAFE"
        assert created["effective_autonomy"] == "full"
        hr = (await api.get("/employees/hr")).json()  # built-in: never exempted
        assert hr["sensitive"] is True and hr["sensitivity"]["reason"] == "built-in"


@pytest.fixture
async def fake(serve_fake) -> FakeOpenAI:
    return await serve_fake(FakeOpenAI(api_key="sk-test", reply="It opens at 9 am [1]."))


class TestChatAsARole:
    @pytest.fixture
    async def settings_overrides(self, fake: FakeOpenAI) -> dict[str, Any]:
        return on_openai(fake)

    def system_messages(self, fake: FakeOpenAI) -> list[str]:
        return [
            chat.body["messages"][0]["content"] for chat in fake.requests_to("/v1/chat/completions")
        ]

    async def test_a_runtime_role_answers_with_its_personality_on_top_of_the_rules(self, api, fake):
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        created = await api.patch("/employees/tax_lawyer_bot", json=TAX_LAWYER)
        assert created.status_code == 201
        response = await api.post(
            "/chat", params={"question": "When does the shop open?", "role": "tax_lawyer_bot"}
        )
        assert response.status_code == 200, response.text
        assert response.json()["role"] == "tax_lawyer_bot"
        system, check = self.system_messages(fake)  # sensitive: the answer, then its check
        assert check == CHECK_INSTRUCTIONS
        assert system.startswith(GROUNDING_INSTRUCTIONS + "\n- Write the answer in English.")
        assert system.count(GROUNDING_INSTRUCTIONS) == 1
        rest = system[len(GROUNDING_INSTRUCTIONS) :]
        assert TAX_LAWYER["personality"] in rest
        assert "Tax Lawyer Bot" in rest
        assert REASONING_INSTRUCTIONS in rest  # sensitive: reasoning mode is asked for

    async def test_an_edited_built_in_personality_is_the_one_used(self, api, fake):
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        edited = "You are the shop's cheerful greeter. Keep every answer to one line."
        await api.patch("/employees/secretary", json={"personality": edited})
        response = await api.post(
            "/chat/stream", params={"question": "When does the shop open?", "role": "secretary"}
        )
        assert response.status_code == 200
        [system] = self.system_messages(fake)
        assert system.startswith(GROUNDING_INSTRUCTIONS)
        assert edited in system and BUILT_IN["secretary"].personality not in system
        assert REASONING_INSTRUCTIONS not in system

    async def test_without_a_role_the_grounding_instructions_apply_alone(self, api, fake):
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        response = await api.post("/chat", params={"question": "When does the shop open?"})
        assert response.status_code == 200, response.text
        [system] = self.system_messages(fake)
        assert system == GROUNDING_INSTRUCTIONS + "\n- Write the answer in English."
        assert not any(role.personality in system for role in BUILT_IN.values())

    async def test_an_unknown_role_is_404_and_no_provider_is_asked(self, api, fake):
        await api.post("/documents", json={"name": "faq.md", "text": FAQ})
        assert_problem(
            await api.post("/chat", params={"question": "When?", "role": "tax_lawyer_bot"}),
            404,
            "unknown role 'tax_lawyer_bot'",
        )
        assert self.system_messages(fake) == []


async def test_a_new_version_updates_the_built_in_fields_the_owner_did_not_edit(
    api, service, nursery, database_url
):
    from tests.io.channels import restarted

    assert (await api.patch("/employees/sales", json={"personality": "Our own words."})).is_success
    await api.get("/employees")
    with psycopg.connect(database_url, autocommit=True) as conn:
        # as a database seeded by an older version would hold them
        conn.execute("UPDATE roles SET channels = '{api}' WHERE identifier IN ('support', 'sales')")
    async with restarted(service, nursery) as again:
        support = (await again.get("/employees/support")).json()
        sales = (await again.get("/employees/sales")).json()
    assert support["channels"] == list(BUILT_IN["support"].channels)  # not edited: follows
    assert sales["channels"] == list(BUILT_IN["sales"].channels)
    assert sales["personality"] == "Our own words."  # the owner's edit stays
    edited = await api.patch("/employees/support", json={"channels": ["api", "telegram"]})
    assert edited.is_success
    async with restarted(service, nursery) as again:
        assert (await again.get("/employees/support")).json()["channels"] == ["api", "telegram"]
