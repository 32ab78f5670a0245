"""Discord interactions: the Ed25519 check, the interaction shape, and the responses.

Discord signs ``timestamp + raw body`` with the application's Ed25519 key and sends the
hex signature in ``X-Signature-Ed25519``; it sends requests with bad signatures on
purpose and disables an endpoint that does not refuse them with 401. An interaction
must be answered within 3 seconds, so ``/ask`` is acknowledged with a deferred response
(type 5) at once, and the answer is put into that message later by editing the
original response through the webhook endpoint with the interaction's token.

A signed request is good for ``TIMESTAMP_WINDOW_SECONDS`` either side of its
``X-Signature-Timestamp``: one replayed later (or a timestamp from 2001, or from years
ahead) is refused like a bad signature. Replays inside the window are answered once,
since every delivery is claimed by its interaction id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ragcore.channels.messages import (
    BadShape,
    InboundMessage,
    Verification,
    json_object,
    unreadable_reply,
)
from ragcore.channels.replies import DISCORD_LIMIT
from ragcore.employees.roles import Role

SIGNATURE_HEADER = "X-Signature-Ed25519"
TIMESTAMP_HEADER = "X-Signature-Timestamp"
LIMIT = DISCORD_LIMIT
COMMAND = "ask"
MAX_ROLE_CHOICES = 25  # Discord's limit on an option's choices
TIMESTAMP_WINDOW_SECONDS = 300  # how far X-Signature-Timestamp may be from now, either way
_UNIX_SECONDS = re.compile(r"[0-9]{1,12}")  # Discord sends whole seconds, e.g. 1767225600

# interaction types and interaction response types, as Discord numbers them
PING, APPLICATION_COMMAND, AUTOCOMPLETE = 1, 2, 4
PONG = {"type": 1}
DEFERRED = {"type": 5}  # DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE: "thinking…", edited later
EPHEMERAL = 1 << 6
# an answer quoting "@everyone" must not ping anyone
NO_MENTIONS: dict[str, list[str]] = {"parse": []}


@attrs.frozen
class Ping:
    """Discord checking that the endpoint is alive; answered with PONG."""


@attrs.frozen
class Immediate:
    """An interaction answered in the response itself (nothing to look up)."""

    response: dict[str, Any]


def check_signature(
    public_key_hex: str,
    signature_hex: str | None,
    timestamp: str | None,
    body: bytes,
    now: datetime,
) -> Verification:
    """Ed25519 over ``timestamp + body`` with DISCORD_PUBLIC_KEY, then the timestamp no
    more than TIMESTAMP_WINDOW_SECONDS from ``now`` (the runner's clock); no unsigned mode.

    The signature is checked first so the log tells a forgery from a genuine but stale
    request: only the latter can mean a replay or a clock that is off on this host.
    """
    if not public_key_hex:
        return Verification.refused("DISCORD_PUBLIC_KEY is not set")
    if not signature_hex or not timestamp:
        return Verification.refused(f"the {SIGNATURE_HEADER} or {TIMESTAMP_HEADER} is missing")
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex))
        key.verify(bytes.fromhex(signature_hex), timestamp.encode("utf-8") + body)
    except (ValueError, InvalidSignature):
        return Verification.refused("the signature does not verify under DISCORD_PUBLIC_KEY")
    stale = timestamp_problem(timestamp, now)
    if stale:
        return Verification.refused(stale)
    return Verification.ok()


def timestamp_problem(timestamp: str, now: datetime) -> str | None:
    """Why ``timestamp`` is not acceptable at ``now``, or None: it must be whole Unix
    seconds within TIMESTAMP_WINDOW_SECONDS of now, in either direction."""
    if not _UNIX_SECONDS.fullmatch(timestamp):
        return f"the {TIMESTAMP_HEADER} is not a whole number of Unix seconds"
    offset = int(timestamp) - now.timestamp()
    if abs(offset) <= TIMESTAMP_WINDOW_SECONDS:
        return None
    direction = "ahead of" if offset > 0 else "behind"
    return (
        f"the {TIMESTAMP_HEADER} is {abs(offset):.0f} s {direction} this server's clock, more "
        f"than the {TIMESTAMP_WINDOW_SECONDS} s allowed (a replayed request, or a clock that "
        "is off)"
    )


def parse_interaction(body: bytes) -> Ping | Immediate | InboundMessage:
    """A PING, an ``/ask`` to answer, or an interaction answered at once with what the
    bot understands; BadShape when the body is not an interaction."""
    interaction = json_object(body, "a Discord interaction")
    kind = interaction.get("type")
    if not isinstance(kind, int) or isinstance(kind, bool):
        raise BadShape("an interaction needs an integer type")
    if kind == PING:
        return Ping()
    interaction_id, token = interaction.get("id"), interaction.get("token")
    application_id = interaction.get("application_id")
    if not all(isinstance(v, str) and v for v in (interaction_id, token, application_id)):
        raise BadShape("an interaction needs id, application_id and token")
    if kind == AUTOCOMPLETE:
        return Immediate({"type": 8, "data": {"choices": []}})
    data = interaction.get("data")
    if kind != APPLICATION_COMMAND or not isinstance(data, dict) or data.get("name") != COMMAND:
        return Immediate(message_response(unreadable_reply("command") + f" Use /{COMMAND}."))
    options = _options(data)
    question = options.get("question")
    role = options.get("role")
    user = _user(interaction)
    return InboundMessage(
        channel="discord",
        delivery_id=str(interaction_id),
        conversation=str(interaction.get("channel_id", "")),
        text=question if isinstance(question, str) else "",
        kind="text" if isinstance(question, str) and question.strip() else "empty",
        sender=str(user.get("id", "")),
        sender_name=str(user.get("global_name") or user.get("username") or ""),
        requested_role=role.lower() if isinstance(role, str) and role else None,
        reply_via={"application_id": application_id, "token": token},
    )


def message_response(text: str) -> dict[str, Any]:
    """An immediate reply only the asker sees."""
    return {
        "type": 4,
        "data": {"content": text[:LIMIT], "flags": EPHEMERAL, "allowed_mentions": NO_MENTIONS},
    }


def original_path(application_id: str, token: str) -> str:
    """Where the deferred response is edited (PATCH). The token is a credential for 15
    minutes: never log it (ragio redacts it from the HTTP client's log)."""
    return f"/webhooks/{application_id}/{token}/messages/@original"


def followup_path(application_id: str, token: str) -> str:
    """Where the parts after the first go (POST), each as a follow-up message."""
    return f"/webhooks/{application_id}/{token}"


def message_body(part: str) -> dict[str, Any]:
    return {"content": part, "allowed_mentions": NO_MENTIONS}


def command_path(application_id: str) -> str:
    return f"/applications/{application_id}/commands"


def ask_command(roles: Sequence[Role]) -> dict[str, Any]:
    """The ``/ask`` slash command: a question, and optionally who should answer (the
    roles a customer can reach on Discord, as choices)."""
    options: list[dict[str, Any]] = [
        {
            "type": 3,
            "name": "question",
            "description": "Your question",
            "required": True,
            "max_length": 4000,
        }
    ]
    if roles:
        options.append(
            {
                "type": 3,
                "name": "role",
                "description": "Who should answer (default: support)",
                "required": False,
                "choices": [
                    {"name": r.display_name[:100], "value": r.identifier}
                    for r in roles[:MAX_ROLE_CHOICES]
                ],
            }
        )
    return {
        "name": COMMAND,
        "type": 1,
        "description": "Ask a question; the answer comes from our documents, with sources",
        "options": options,
    }


def _options(data: dict[str, Any]) -> dict[str, Any]:
    options = data.get("options", [])
    if not isinstance(options, list):
        raise BadShape("data.options must be a list")
    return {
        o["name"]: o.get("value")
        for o in options
        if isinstance(o, dict) and isinstance(o.get("name"), str)
    }


def _user(interaction: dict[str, Any]) -> dict[str, Any]:
    member = interaction.get("member")
    if isinstance(member, dict) and isinstance(member.get("user"), dict):
        member_user: dict[str, Any] = member["user"]
        return member_user
    user = interaction.get("user")
    return user if isinstance(user, dict) else {}
