"""Channel ``web``, the chat widget's conversations (docs/widget.md), means the same
everywhere: a customer's channel where questions are asked and conversations recorded,
which workflows follow and live-data actions run on, answered by the customer-facing
roles; but no messaging platform (no webhook, no sender) and no place for the owner to
approve held actions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ragcore.actions.autonomy import APPROVAL_CHANNELS, AutonomyConfig, check_update
from ragcore.actions.kinds import ChatopsAction
from ragcore.actions.records import ActionRecord
from ragcore.api import live_actions
from ragcore.api.conversations import ConversationsQuery
from ragcore.channel_names import (
    ASKING_CHANNELS,
    CONVERSATION_CHANNELS,
    CUSTOMER_CHANNELS,
    TEXT_CHANNELS,
    WEB,
)
from ragcore.channels import CHANNELS as PLATFORMS
from ragcore.channels.routing import INTERNAL_ROLES, customer_roles, default_role
from ragcore.employees.builtin import BUILT_IN
from ragcore.errors import InvalidInput
from ragcore.live.extraction import caller_value
from ragcore.workflows import definitions as workflows
from ragcore.workflows.matching import firing

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


def test_web_is_asked_on_and_recorded_but_is_no_messaging_platform():
    assert WEB == "web"
    assert WEB in ASKING_CHANNELS and WEB in CONVERSATION_CHANNELS and WEB in CUSTOMER_CHANNELS
    assert WEB not in TEXT_CHANNELS and WEB not in PLATFORMS  # no webhook, no sender
    assert WEB not in APPROVAL_CHANNELS


def test_conversations_may_be_listed_on_web_alone():
    assert ConversationsQuery(channel="web").filters()["channel"] == "web"
    with pytest.raises(InvalidInput) as refused:
        ConversationsQuery(channel="widget").filters()
    assert refused.value.field == "channel" and "web" in refused.value.message


def test_a_workflow_may_follow_web_and_fires_for_a_widget_reply():
    made = workflows.check_new(
        {"name": "Leads", "webhook_url": "https://hooks.example.com/1", "channels": ["Web"]}
    )
    assert made.channels == ("web",)
    assert workflows.check_filters([("channel", "web")]).channel == "web"
    stored = [
        workflows.Workflow(1, "Leads", "https://hooks.example.com/1", ("web",)),
        workflows.Workflow(2, "Chats", "https://hooks.example.com/2", ("telegram",)),
    ]
    assert [w.id for w in firing(stored, "web")] == [1]
    with pytest.raises(InvalidInput) as refused:
        workflows.check_new(
            {**{"name": "x", "webhook_url": "https://h.example.com"}, "channels": ["slack"]}
        )
    assert "web" in refused.value.message


def test_a_live_action_may_run_on_web_with_the_verified_visitor_as_caller():
    assert live_actions.check_asking_channels(["web", "chat"]) == ("web", "chat")
    assert live_actions.check_channel("web") == "web"
    assert caller_value("web", " cust_1042 ") == "cust_1042"  # as given, not a phone number
    assert caller_value("web", None) is None  # a visitor not verified: no {caller}


def test_an_action_proposed_in_a_widget_conversation_is_a_customers():
    record = ActionRecord("a1", ChatopsAction("Call Ann back"), "web", "pending", NOW)
    assert record.public


def test_the_owner_cannot_approve_on_web():
    with pytest.raises(InvalidInput) as refused:
        check_update({"approval_channel": "web", "approval_target": "1"}, AutonomyConfig())
    assert refused.value.field == "approval_channel"


def test_the_customer_facing_built_in_roles_answer_on_web_and_the_internal_ones_never():
    roles = list(BUILT_IN.values())
    on_web = [r.identifier for r in roles if WEB in r.channels]
    assert on_web == ["secretary", "sales", "support"]
    assert [r.identifier for r in customer_roles(roles, WEB)] == on_web
    assert not INTERNAL_ROLES & set(on_web)
    assert default_role(roles, WEB) == BUILT_IN["support"]
    # every built-in role on a messaging platform is on the widget too
    assert on_web == [r.identifier for r in roles if set(TEXT_CHANNELS) & set(r.channels)]


def test_a_sites_chosen_role_answers_while_it_may_else_the_webs_default():
    from ragcore.channels.routing import chosen_role

    roles = list(BUILT_IN.values())
    assert chosen_role(roles, "sales", WEB) == BUILT_IN["sales"]
    assert chosen_role(roles, None, WEB) == BUILT_IN["support"]
    assert chosen_role(roles, "finance", WEB) == BUILT_IN["support"]  # never a customer's
    assert chosen_role(roles, "deleted", WEB) == BUILT_IN["support"]
