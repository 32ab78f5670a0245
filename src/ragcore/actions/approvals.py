"""Owner approvals (SPEC section 3): the id a held action gets, the owner's YES/NO,
who may give it, and what a decision does.

- An id is 10 characters of Crockford's base32 (50 random bits): digits and capital
  letters without I, L, O and U, so it reads aloud and types without mix-ups. It is
  read case-insensitively, with ``O`` as ``0`` and ``I``/``L`` as ``1``, dashes and
  spaces ignored.
- The owner answers ``YES <id>`` or ``NO <id>`` (also ``APPROVE``/``REJECT``, and a
  leading ``/`` as a Telegram command). A command is accepted only from the sender that
  matches ``approval_channel`` and ``approval_target``; anyone else's is not accepted and
  learns nothing about the action (``same_sender``, compared in constant time).
- Each id is decided once: a second YES does nothing. An id past ``expires_at`` is
  refused (``judge`` takes ``now``; nothing here reads the clock).
"""

from __future__ import annotations

import hmac
import re
from datetime import datetime, timedelta

import attrs

from ragcore.actions.autonomy import AutonomyConfig
from ragcore.actions.kinds import describe
from ragcore.actions.records import ActionRecord, short_preview
from ragcore.inputs import SPACE, character_class

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32
ID_LENGTH = 10  # 50 bits
ID_BYTES = 7  # random bytes an id is made from (56 bits, 50 used)
ID_PATTERN = re.compile(rf"^[{ALPHABET}]{{{ID_LENGTH}}}$")
_LOOKALIKES = str.maketrans({"O": "0", "I": "1", "L": "1", "-": None, " ": None})


def _spelled(text: str) -> str:
    return text.upper().translate(_LOOKALIKES)


_ID_CHARACTERS = character_class(
    [code for code in range(128) if chr(code).isalnum() and _spelled(chr(code)) in ALPHABET]
)
#: an id as ``normalize_id`` reads it, as a pattern: its characters in any case (with the
#: lookalikes), dashes and spaces between them ignored, blank space around it dropped
ID_TEXT = f"^[{SPACE}]*(?:[- ]*[{_ID_CHARACTERS}]){{{ID_LENGTH}}}[- ]*[{SPACE}]*$"
_COMMAND = re.compile(
    r"^\s*/?(yes|y|approve|no|n|reject)\b[\s:#]*([0-9A-Za-z-]{8,14})\s*[.!]?\s*$",
    re.IGNORECASE,
)
_VERDICTS = {"yes": "approve", "y": "approve", "approve": "approve",
             "no": "reject", "n": "reject", "reject": "reject"}  # fmt: skip


def approval_id(random: bytes) -> str:
    """An id from ``random`` (at least ``ID_BYTES`` bytes from a CSPRNG)."""
    if len(random) < ID_BYTES:
        raise ValueError(f"an approval id needs {ID_BYTES} random bytes")
    number = int.from_bytes(random[:ID_BYTES], "big") >> (ID_BYTES * 8 - ID_LENGTH * 5)
    chars = []
    for _ in range(ID_LENGTH):
        number, digit = divmod(number, 32)
        chars.append(ALPHABET[digit])
    return "".join(reversed(chars))


def normalize_id(text: str) -> str | None:
    """The id ``text`` spells, or None when it cannot be one."""
    candidate = text.strip()
    if not candidate.isascii():  # "ß".upper() is "SS": only ASCII spells an id
        return None
    candidate = _spelled(candidate)
    return candidate if ID_PATTERN.fullmatch(candidate) else None


def expiry(now: datetime, ttl_hours: float) -> datetime:
    """When an action held at ``now`` stops being approvable (APPROVAL_TTL_HOURS)."""
    return now + timedelta(hours=ttl_hours)


@attrs.frozen
class OwnerCommand:
    verdict: str  # "approve" or "reject"
    action_id: str | None  # None when the text after YES/NO cannot be an id


def parse_command(text: str) -> OwnerCommand | None:
    """``YES <id>`` / ``NO <id>`` read from a message; None when the message is not one
    (it goes to the chat pipeline as any other message)."""
    match = _COMMAND.match(text or "")
    if match is None:
        return None
    return OwnerCommand(_VERDICTS[match.group(1).lower()], normalize_id(match.group(2)))


def sender_key(channel: str, sender: str) -> str:
    """A sender as approvals compare it: WhatsApp as ``+digits`` (the inbound webhook gives
    ``WaId`` digits or ``whatsapp:+…``), other channels as given."""
    text = str(sender).strip()
    if channel == "whatsapp":
        digits = text.removeprefix("whatsapp:").replace(" ", "").lstrip("+")
        return f"+{digits}"
    return text


def same_sender(config: AutonomyConfig, channel: str, sender: str) -> bool:
    """Whether ``sender`` on ``channel`` is the configured owner. Constant time in the
    target, so timing tells a stranger nothing about it."""
    if not config.owner_set or not sender:
        return False
    expected = sender_key(str(config.approval_channel), str(config.approval_target))
    given = sender_key(channel, sender)
    same_target = hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8"))
    return same_target and channel == config.approval_channel


# ---------------------------------------------------------------- deciding


@attrs.frozen
class Unknown:
    """No such action (or not one the owner can decide)."""


@attrs.frozen
class AlreadyDecided:
    status: str


@attrs.frozen
class Expired:
    expires_at: datetime


@attrs.frozen
class Approve:
    pass


@attrs.frozen
class Reject:
    pass


Judgement = Unknown | AlreadyDecided | Expired | Approve | Reject


def judge(record: ActionRecord | None, verdict: str, now: datetime) -> Judgement:
    """What the owner's ``verdict`` on ``record`` does at ``now``."""
    if record is None or record.status == "refused":  # never held: nothing to decide
        return Unknown()
    if record.status != "pending":
        return AlreadyDecided(record.status)
    if record.expires_at is None or now >= record.expires_at:
        return Expired(record.expires_at or now)
    return Approve() if verdict == "approve" else Reject()


# ---------------------------------------------------------------- messages


def owner_message(record: ActionRecord) -> str:
    """What the owner is sent about a held action: what, to whom, a preview and how to
    answer."""
    who = f"The {record.role} role" if record.role else "An API request"
    where = {
        "api": "through the API",
        "chat": "in a /chat conversation",
    }.get(record.origin, f"in a customer conversation on {record.origin}")
    expires = record.expires_at.strftime("%Y-%m-%d %H:%M UTC") if record.expires_at else "-"
    return (
        f"Approval needed ({record.id})\n"
        f"{who} wants to send a {describe(record.action)} ({where}).\n\n"
        f"{short_preview(record, 600)}\n\n"
        f"Reply YES {record.id} to send it or NO {record.id} to drop it. "
        f"It expires {expires}."
    )


def decision_reply(action_id: str, judgement: Judgement, result: str = "") -> str:
    """The reply to the owner's YES/NO. ``result`` is the send's outcome after a YES."""
    if isinstance(judgement, Unknown):
        return f"There is no action {action_id} waiting for approval."
    if isinstance(judgement, AlreadyDecided):
        return f"Action {action_id} was already decided ({judgement.status}); nothing changed."
    if isinstance(judgement, Expired):
        return f"Action {action_id} expired before it was approved; nothing was sent."
    if isinstance(judgement, Reject):
        return f"Rejected: action {action_id} was dropped and nothing was sent."
    return f"Approved: action {action_id} {result}".rstrip()


BAD_ID_REPLY = (
    "That approval id is not valid: ids are 10 letters and digits, as in the approval "
    "message (YES <id> or NO <id>)."
)
