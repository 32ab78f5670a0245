"""Which role answers a customer, and what is answered at all."""

from __future__ import annotations

import attrs
import pytest

from ragcore.channels.messages import InboundMessage
from ragcore.channels.routing import INTERNAL_ROLES, AnswerAs, ReplyWith, plan_reply
from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.roles import Role

ROLES = list(BUILT_IN.values())


def message(text: str, channel: str = "telegram", **fields) -> InboundMessage:
    return InboundMessage(channel, "1", "42", text, **fields)


def answering(plan) -> str:
    assert isinstance(plan, AnswerAs), plan
    return plan.role.identifier


@pytest.mark.parametrize("channel", ["telegram", "whatsapp", "discord"])
def test_support_answers_by_default_on_every_customer_channel(channel):
    plan = plan_reply(message("Can I return shoes?", channel), ROLES)
    assert answering(plan) == "support"
    assert plan.question == "Can I return shoes?"


@pytest.mark.parametrize("prefix", ["/sales", "@sales", "/sales@shop_bot", "/SALES"])
def test_a_customer_reaches_a_customer_facing_role_by_asking(prefix):
    plan = plan_reply(message(f"{prefix} How much is the blue kettle?"), ROLES)
    assert answering(plan) == "sales"
    assert plan.question == "How much is the blue kettle?"


@pytest.mark.parametrize("internal", sorted(INTERNAL_ROLES))
def test_internal_roles_cannot_be_reached_by_asking(internal):
    plan = plan_reply(message(f"/{internal} What is everyone paid?"), ROLES)
    assert answering(plan) == "support"
    assert plan.question == "What is everyone paid?"
    discord = message("What is everyone paid?", "discord", requested_role=internal)
    assert answering(plan_reply(discord, ROLES)) == "support"


def test_internal_roles_stay_off_customer_channels_even_when_tied_to_them():
    roles = [
        attrs.evolve(r, channels=(*r.channels, "telegram")) if r.identifier == "finance" else r
        for r in ROLES
    ]
    assert answering(plan_reply(message("/finance payroll?"), roles)) == "support"


def test_without_support_on_the_channel_the_first_role_tied_to_it_answers():
    roles = [
        attrs.evolve(r, channels=("api",)) if r.identifier in ("support", "secretary") else r
        for r in ROLES
    ]
    assert answering(plan_reply(message("Hello?", "whatsapp"), roles)) == "sales"


def test_a_runtime_role_tied_to_the_channel_is_reachable():
    bookings = Role("bookings", "Bookings", "You take bookings.", channels=("telegram",))
    plan = plan_reply(message("/bookings a table for two"), [*ROLES, bookings])
    assert answering(plan) == "bookings"


def test_a_role_not_on_the_channel_is_not_reachable():
    # marketing is a role, but not on telegram: support answers, the prefix removed
    plan = plan_reply(message("/marketing write me a post"), ROLES)
    assert answering(plan) == "support"
    assert plan.question == "write me a post"


def test_a_slash_that_names_no_role_is_part_of_the_question():
    plan = plan_reply(message("/etc/hosts is what?"), ROLES)
    assert plan.question == "/etc/hosts is what?"


@pytest.mark.parametrize("text", ["/start", "/help", "/help@shop_bot"])
def test_start_and_help_say_what_the_bot_does_without_the_pipeline(text):
    plan = plan_reply(message(text), ROLES)
    assert isinstance(plan, ReplyWith) and plan.reason == "help"
    assert "/sales (Sales)" in plan.text and "/secretary" in plan.text
    assert not any(f"/{r}" in plan.text for r in INTERNAL_ROLES)


def test_start_with_a_question_answers_the_question():
    assert plan_reply(message("/start When do you open?"), ROLES).question == "When do you open?"


def test_a_role_with_no_question_gets_the_help():
    plan = plan_reply(message("/sales"), ROLES)
    assert isinstance(plan, ReplyWith) and plan.reason == "empty"


def test_an_unreadable_kind_gets_a_polite_reply_naming_it():
    plan = plan_reply(message("", kind="sticker"), ROLES)
    assert isinstance(plan, ReplyWith) and plan.reason == "unreadable"
    assert "stickers" in plan.text and "text" in plan.text


def test_an_empty_message_gets_the_help():
    plan = plan_reply(message("", kind="empty"), ROLES)
    assert isinstance(plan, ReplyWith) and plan.reason == "empty"
    assert "answer from our documents" in plan.text
