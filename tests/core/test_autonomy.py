"""Autonomy, pure: the setting, the gate in every mode with the sensitive-role override,
owner approvals, and the submit/decide pipelines driven with recorded results."""

from datetime import UTC, datetime, timedelta

import attrs
import pytest

from ragcore.actions.approvals import (
    ALPHABET,
    ID_LENGTH,
    AlreadyDecided,
    Approve,
    Expired,
    OwnerCommand,
    Reject,
    Unknown,
    approval_id,
    decision_reply,
    normalize_id,
    owner_message,
    parse_command,
    same_sender,
)
from ragcore.actions.autonomy import (
    ActingRole,
    AskOwner,
    AutonomyConfig,
    Execute,
    Refuse,
    check_update,
    gate_action,
)
from ragcore.actions.effects import (
    ClaimAction,
    FinishAction,
    LoadAction,
    LoadAutonomy,
    NewTicket,
    NoteAction,
    NotifyOwner,
    PerformAction,
    SaveAction,
    Sent,
    Ticket,
)
from ragcore.actions.flow import ActionPolicy, Submission, decide_action, submit_action
from ragcore.actions.kinds import Catalog, ChatopsAction, EmailAction, WebhookAction
from ragcore.actions.records import ActionRecord
from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.roles import Role
from ragcore.errors import InvalidInput
from tests.core.drive import drive

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
CHATOPS = ChatopsAction("New lead: Ann, call back at 5pm")
SUPPORT = ActingRole.of(BUILT_IN["support"])
FINANCE = ActingRole.of(BUILT_IN["finance"])  # built-in sensitive (tag tax)
OWNER = {"approval_channel": "telegram", "approval_target": "4242"}


def config(mode, **changes):
    return AutonomyConfig(mode=mode, **changes)


# ---------------------------------------------------------------- the setting


def test_the_default_is_off_with_no_owner():
    default = AutonomyConfig()
    assert default.mode == "off" and not default.owner_set
    assert default.allowed_kinds == ("webhook", "email", "chatops")


def test_an_update_merges_and_normalizes():
    updated = check_update(
        {
            "mode": "semi",
            "approval_channel": "whatsapp",
            "approval_target": "whatsapp:+1 415 555 0100",
        },
        AutonomyConfig(),
    )
    assert (updated.mode, updated.approval_channel, updated.approval_target) == (
        "semi",
        "whatsapp",
        "+14155550100",
    )
    kinds = check_update({"allowed_kinds": ["chatops", "email"]}, updated)
    assert kinds.allowed_kinds == ("email", "chatops") and kinds.approval_target == "+14155550100"
    cleared = check_update({"approval_channel": None}, updated)
    assert not cleared.owner_set and cleared.approval_target is None


@pytest.mark.parametrize(
    "body, field, names",
    [
        ({"mode": "auto"}, "mode", "off, semi, full"),
        ({"mode": "FULL"}, "mode", "off, semi, full"),
        ({"approval_channel": "sms", "approval_target": "1"}, "approval_channel", "telegram"),
        ({"approval_channel": "telegram", "approval_target": "@owner"}, "approval_target", ""),
        ({"approval_channel": "discord"}, "approval_target", "Discord user id"),
        ({"approval_target": "4242"}, "approval_channel", "telegram, whatsapp, discord"),
        ({"allowed_kinds": ["webhook", "sms"]}, "allowed_kinds", "webhook, email, chatops"),
        ({"sensitive_roles": "full"}, "sensitive_roles", "semi, off"),
        ({"mood": "happy"}, "mood", "mode, approval_channel"),
    ],
)
def test_unknown_values_are_refused_naming_the_allowed_ones(body, field, names):
    with pytest.raises(InvalidInput) as refused:
        check_update(body, AutonomyConfig())
    assert refused.value.field == field
    assert names in refused.value.message


# ---------------------------------------------------------------- the gate


def test_the_gate_in_all_three_modes():
    assert isinstance(gate_action(CHATOPS, None, config("off")), Refuse)
    assert isinstance(gate_action(CHATOPS, None, config("semi")), AskOwner)
    assert isinstance(gate_action(CHATOPS, None, config("full")), Execute)
    assert gate_action(CHATOPS, None, config("off")).why == "autonomy is off"


def test_a_kind_the_owner_did_not_allow_is_refused_in_any_mode():
    only_email = config("full", allowed_kinds=("email",))
    decision = gate_action(CHATOPS, None, only_email)
    assert isinstance(decision, Refuse) and "chatops actions are not allowed" in decision.why


def test_a_role_acts_at_most_at_its_own_autonomy():
    ceo = ActingRole.of(BUILT_IN["ceo"])  # autonomy off
    decision = gate_action(CHATOPS, ceo, config("full"))
    assert isinstance(decision, Refuse) and "role ceo's autonomy is off" in decision.why
    eager = ActingRole.of(attrs.evolve(BUILT_IN["support"], autonomy="full"))
    assert isinstance(gate_action(CHATOPS, eager, config("full")), Execute)
    assert isinstance(gate_action(CHATOPS, eager, config("semi")), AskOwner)


def test_a_sensitive_role_is_forced_to_semi_whatever_the_mode():
    finance = ActingRole.of(attrs.evolve(BUILT_IN["finance"], autonomy="full"))
    assert finance.sensitivity.sensitive
    decision = gate_action(CHATOPS, finance, config("full"))
    assert isinstance(decision, AskOwner) and "sensitive role" in decision.why
    lawyer = Role("contract_lawyer", "Contract Lawyer", "…", autonomy="full")
    assert isinstance(gate_action(CHATOPS, ActingRole.of(lawyer), config("full")), AskOwner)
    assert isinstance(gate_action(CHATOPS, finance, config("off")), Refuse)


def test_sensitive_roles_can_be_held_to_off():
    finance = ActingRole.of(attrs.evolve(BUILT_IN["finance"], autonomy="full"))
    strict = config("full", sensitive_roles="off")
    decision = gate_action(CHATOPS, finance, strict)
    assert isinstance(decision, Refuse) and "held to off" in decision.why
    assert isinstance(
        gate_action(CHATOPS, SUPPORT, config("semi", sensitive_roles="off")), AskOwner
    )


def test_settings_can_make_a_role_sensitive_but_never_exempt_a_built_in_one():
    sales = attrs.evolve(BUILT_IN["sales"], autonomy="full")
    extra = ActingRole.of(sales, extra=("sales",))
    assert isinstance(gate_action(CHATOPS, extra, config("full")), AskOwner)
    finance = ActingRole.of(attrs.evolve(BUILT_IN["finance"], autonomy="full"),
                            reviewed_safe=("finance",))  # fmt: skip
    assert isinstance(gate_action(CHATOPS, finance, config("full")), AskOwner)


# ---------------------------------------------------------------- approvals


def test_ids_carry_50_random_bits_typeable_and_case_insensitive():
    ids = {approval_id(bytes([i, 7, 3, 200, 9, 1, i])) for i in range(256)}
    assert len(ids) == 256
    assert all(len(i) == ID_LENGTH and set(i) <= set(ALPHABET) for i in ids)
    assert ID_LENGTH * 5 >= 40
    assert not set("ILOU") & set(ALPHABET)
    some = approval_id(b"\xff" * 7)
    assert normalize_id(some.lower()) == some
    assert normalize_id("0o1i-l2345 6") == "0011123456"
    assert normalize_id("too-short") is None and normalize_id("ABCDEFGHJKU") is None
    with pytest.raises(ValueError):
        approval_id(b"\x00" * 4)


def test_owner_commands_are_read_and_other_text_is_not():
    assert parse_command("YES 7K3M9QXA4B") == OwnerCommand("approve", "7K3M9QXA4B")
    assert parse_command("  no 7k3m9qxa4b. ") == OwnerCommand("reject", "7K3M9QXA4B")
    assert parse_command("/yes 7K3M9-QXA4B") == OwnerCommand("approve", "7K3M9QXA4B")
    assert parse_command("Approve: 7K3M9QXA4B") == OwnerCommand("approve", "7K3M9QXA4B")
    assert parse_command("yes 7K3M9QXA4U") == OwnerCommand("approve", None)  # a typo
    for text in ("yes please", "no thanks", "Yes, when do you open?", "hello", ""):
        assert parse_command(text) is None, text


def test_only_the_configured_owner_is_the_sender():
    owner = config("semi", **OWNER)
    assert same_sender(owner, "telegram", "4242")
    assert not same_sender(owner, "telegram", "4243")
    assert not same_sender(owner, "discord", "4242")  # same id, another channel
    assert not same_sender(owner, "telegram", "")
    assert not same_sender(config("semi"), "telegram", "4242")  # no owner set
    whatsapp = config("semi", approval_channel="whatsapp", approval_target="+14155550100")
    assert same_sender(whatsapp, "whatsapp", "14155550100")  # the webhook's WaId
    assert same_sender(whatsapp, "whatsapp", "whatsapp:+14155550100")
    assert not same_sender(whatsapp, "whatsapp", "14155550199")


def test_the_owner_message_says_what_to_whom_a_preview_and_how_to_answer():
    record = held(EmailAction("owner@shop.example", "Callback for Ann", "Call Ann at 5pm."))
    text = owner_message(record)
    assert "e-mail to owner@shop.example" in text
    assert "Subject: Callback for Ann\nCall Ann at 5pm." in text
    assert f"YES {record.id}" in text and f"NO {record.id}" in text
    assert "customer conversation on telegram" in text and "support role" in text
    assert "2025-03-02 09:00 UTC" in text


def test_replies_to_each_outcome():
    assert "no action" in decision_reply("X", Unknown())
    assert "already decided (executed)" in decision_reply("X", AlreadyDecided("executed"))
    assert "expired" in decision_reply("X", Expired(NOW))
    assert "Rejected" in decision_reply("X", Reject())
    assert decision_reply("X", Approve(), "was sent.") == "Approved: action X was sent."


# ---------------------------------------------------------------- the pipelines

POLICY = ActionPolicy(Catalog(webhook_targets=(("crm", "https://crm.example.com"),), chatops=True))
ID = "7K3M9QXA4B"


def held(action=CHATOPS, **changes):
    record = ActionRecord(
        ID, action, "telegram", "pending", NOW, role="support",
        expires_at=NOW + timedelta(hours=24),
    )  # fmt: skip
    return attrs.evolve(record, **changes)


class World:
    """Recorded results for the action effects: a store of one record, a sender."""

    def __init__(self, autonomy, record=None, send_ok=True, notify_ok=True):
        self.autonomy = autonomy
        self.record = record
        self.send_ok = send_ok
        self.notify_ok = notify_ok
        self.sent = []
        self.notified = []
        self.events = []

    def __call__(self, effect):
        match effect:
            case LoadAutonomy():
                return self.autonomy
            case NewTicket():
                return Ticket(ID, NOW)
            case SaveAction(record=record, event=event):
                self.record = record
                self.events.append(event)
                return None
            case LoadAction():
                return self.record
            case ClaimAction(move=move, now=now, by=by, before_expiry=before_expiry):
                if self.record.status != move.before or (
                    before_expiry and now >= self.record.expires_at
                ):
                    return None
                self.record = attrs.evolve(self.record, status=move.after, decided_by=by)
                self.events.append(move.event)
                return self.record
            case FinishAction(move=move, detail=detail):
                assert self.record.status == move.before
                self.record = attrs.evolve(self.record, status=move.after, reason=detail)
                self.events.append(move.event)
                return self.record
            case NoteAction(event=event):
                self.events.append(event)
                return None
            case PerformAction(record=record):
                self.sent.append(record.action)
                return Sent(self.send_ok, "HTTP 200" if self.send_ok else "HTTP 500")
            case NotifyOwner() as notify:
                self.notified.append(notify)
                return Sent(self.notify_ok, "" if self.notify_ok else "telegram: Forbidden")
        raise AssertionError(effect)


def submit(world, action=CHATOPS, role=SUPPORT, origin="telegram"):
    return drive(submit_action(Submission(action, origin, role), POLICY), world)[0]


def test_off_refuses_and_logs_without_sending():
    world = World(config("off"))
    record = submit(world)
    assert record.status == "refused" and record.decided_by == "autonomy"
    assert world.events == ["refused"] and world.sent == [] and world.notified == []


def test_semi_holds_the_action_and_messages_the_owner():
    world = World(config("semi", **OWNER))
    record = submit(world)
    assert record.status == "pending" and record.expires_at == NOW + timedelta(hours=24)
    assert world.sent == []
    [notify] = world.notified
    assert (notify.channel, notify.target) == ("telegram", "4242")
    assert f"YES {ID}" in notify.text
    assert world.events == ["held", "notified"]


def test_semi_without_an_owner_is_decided_through_the_api():
    world = World(config("semi"))
    assert submit(world).status == "pending"
    assert world.notified == [] and world.events == ["held", "not_notified"]


def test_full_executes_and_reports_executed_only_when_the_send_succeeded():
    eager = ActingRole.of(attrs.evolve(BUILT_IN["support"], autonomy="full"))
    world = World(config("full"))
    assert submit(world, role=eager).status == "executed"
    assert world.sent == [CHATOPS] and world.events == ["allowed", "executed"]
    failing = World(config("full"), send_ok=False)
    record = submit(failing, role=eager)
    assert record.status == "failed" and record.reason == "HTTP 500"


def test_the_sensitive_override_holds_even_in_full():
    finance = ActingRole.of(attrs.evolve(BUILT_IN["finance"], autonomy="full"))
    world = World(config("full", **OWNER))
    record = submit(world, role=finance, origin="api")
    assert record.status == "pending" and world.sent == []
    assert "sensitive role" in record.reason


def test_what_the_settings_cannot_reach_is_refused_before_the_gate():
    world = World(config("full"))
    record = submit(world, action=WebhookAction("erp"), role=None, origin="api")
    assert record.status == "refused" and record.decided_by == "settings"
    assert "no webhook target named 'erp'" in record.reason and world.sent == []
    email = submit(World(config("full")), action=EmailAction("a@b.example", "s", "b"), role=None)
    assert "SMTP_HOST and EMAIL_FROM" in email.reason


def decide(world, text, verdict="approve", now=NOW + timedelta(hours=1)):
    return drive(decide_action(text, verdict, "telegram owner", now), world)[0]


def test_yes_sends_once_and_a_second_yes_does_nothing():
    world = World(config("semi", **OWNER), record=held())
    first = decide(world, ID.lower())
    assert isinstance(first.judgement, Approve) and first.record.status == "executed"
    assert world.sent == [CHATOPS] and world.events == ["approved", "executed"]
    second = decide(world, ID)
    assert second.judgement == AlreadyDecided("executed") and world.sent == [CHATOPS]


def test_no_drops_the_action():
    world = World(config("semi", **OWNER), record=held())
    decision = decide(world, ID, verdict="reject")
    assert isinstance(decision.judgement, Reject) and decision.record.status == "rejected"
    assert world.sent == []
    assert decide(world, ID).judgement == AlreadyDecided("rejected") and world.sent == []


def test_an_expired_id_is_refused_and_marked_expired():
    world = World(config("semi", **OWNER), record=held())
    late = NOW + timedelta(hours=24, seconds=1)
    decision = decide(world, ID, now=late)
    assert isinstance(decision.judgement, Expired) and world.sent == []
    assert world.record.status == "expired" and world.events == ["expired"]
    assert decide(world, ID, now=late).judgement == AlreadyDecided("expired")


def test_a_yes_just_before_expiry_still_counts():
    world = World(config("semi", **OWNER), record=held())
    decision = decide(world, ID, now=NOW + timedelta(hours=23, minutes=59))
    assert decision.record.status == "executed"


def test_unknown_ids():
    assert isinstance(decide(World(config("semi")), ID).judgement, Unknown)
    assert isinstance(decide(World(config("semi")), "not-an-id!").judgement, Unknown)
    refused = World(config("semi"), record=held(status="refused", expires_at=None))
    assert isinstance(decide(refused, ID).judgement, Unknown)


def test_a_lost_race_is_reported_as_already_decided():
    world = World(config("semi", **OWNER), record=held())

    def racing(effect):
        if isinstance(effect, ClaimAction):  # another YES got there first
            world.record = attrs.evolve(world.record, status="executing")
            return None
        return world(effect)

    decision = drive(decide_action(ID, "approve", "api", NOW), racing)[0]
    assert decision.judgement == AlreadyDecided("executing") and world.sent == []
