"""The action lifecycle table, the owner's YES/NO read from a channel message, and what
time alone decides: driven with recorded effect results, no database."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ragcore.actions.effects import ExpireOverdue, FailInterrupted, LoadAction, NoteAction
from ragcore.actions.flow import OwnerReply, owner_reply, settle_stale
from ragcore.actions.lifecycle import (
    EXPIRE,
    FINAL,
    INTERRUPT,
    NEW,
    STATUSES,
    TRANSITIONS,
    IllegalTransition,
    move,
)
from ragcore.actions.records import INTERRUPTED
from tests.core.drive import drive
from tests.core.test_autonomy import CHATOPS, ID, NOW, OWNER, World, config, held

LATER = NOW + timedelta(hours=1)


# ---------------------------------------------------------------- the table


def test_every_status_is_reached_and_only_final_ones_are_left_alone():
    reached = set(TRANSITIONS.values())
    assert reached == set(STATUSES)
    assert {before for before, _ in TRANSITIONS} - {NEW} == set(STATUSES) - FINAL


@pytest.mark.parametrize(
    "before, event",
    [
        ("executed", "approved"),  # a second YES
        ("rejected", "approved"),
        ("expired", "approved"),
        ("failed", "executed"),
        ("pending", "executed"),  # sent without a decision
        ("refused", "approved"),
        (NEW, "approved"),
    ],
)
def test_an_illegal_change_is_an_error(before, event):
    with pytest.raises(IllegalTransition):
        move(before, event)


def test_the_moves_time_makes():
    assert (EXPIRE.before, EXPIRE.after, EXPIRE.final) == ("pending", "expired", True)
    assert (INTERRUPT.before, INTERRUPT.after) == ("executing", "failed")
    assert not move("pending", "approved").final


# ---------------------------------------------------------------- YES/NO on a channel


def reply(world, sender, text, now=LATER):
    return drive(owner_reply("telegram", sender, text, now), world)


def test_the_owners_yes_sends_the_action_and_says_so():
    world = World(config("semi", **OWNER), record=held())
    answer, _ = reply(world, "4242", f"yes {ID.lower()}")
    assert answer == OwnerReply(f"Approved: action {ID} was sent.")
    assert world.sent == [CHATOPS] and world.record.status == "executed"


def test_ordinary_text_is_no_command_and_nothing_is_loaded():
    answer, effects = reply(World(config("semi", **OWNER)), "4242", "what are your hours?")
    assert answer == OwnerReply() and effects == []


def test_a_strangers_yes_is_not_accepted_and_only_noted_in_the_log():
    world = World(config("semi", **OWNER), record=held())
    answer, effects = reply(world, "999", f"YES {ID}")
    assert answer == OwnerReply(stranger=True)
    assert world.sent == [] and world.record.status == "pending"
    assert world.events == ["not_accepted"]
    assert "not the approval owner" in effects[-1].detail


def test_a_failing_note_about_a_stranger_does_not_stop_the_message():
    world = World(config("semi", **OWNER), record=held())

    def broken_log(effect):
        if isinstance(effect, LoadAction | NoteAction):
            raise OSError("database gone")
        return world(effect)

    answer, _ = drive(owner_reply("telegram", "999", f"NO {ID}", LATER), broken_log)
    assert answer == OwnerReply(stranger=True)


def test_the_owners_command_with_a_mistyped_id_says_what_an_id_looks_like():
    answer, _ = reply(World(config("semi", **OWNER)), "4242", "YES 7K3M9QXA4U")
    assert answer.reply.startswith("That approval id is not valid")


# ---------------------------------------------------------------- settling on read


def test_settling_expires_overdue_actions_and_fails_those_cut_off_by_a_stop():
    _, effects = drive(settle_stale(NOW, 10), lambda effect: [])
    expire, interrupt = effects
    assert expire == ExpireOverdue(EXPIRE, NOW, "ttl", "nobody decided before it expired")
    assert isinstance(interrupt, FailInterrupted) and interrupt.move == INTERRUPT
    assert interrupt.started_before == NOW - timedelta(seconds=80)  # twice the timeout + 60
    assert interrupt.reason == INTERRUPTED
