"""Rule 14 for one model call: reserve its tokens, call, then settle what it used, or
release the hold when the call failed. Every metered call goes through here: the chat
answer, the grounding check's judge, the profile summary. How the hold is sized is in
``ragcore.usage``."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeAlias

import attrs

from ragcore.generation import Generate, ModelReply
from ragcore.usage import (
    Capped,
    Caps,
    ReleaseTokens,
    ReserveTokens,
    SettleTokens,
    estimate_tokens,
    measured_usage,
)

#: what one metered model call asks for
MeteredEffect: TypeAlias = ReserveTokens | Generate | SettleTokens | ReleaseTokens


def metered_generate(
    request: Generate,
    role: str | None,
    caps: Caps,
    ledger: bool,
    *,
    min_output_tokens: int | None = None,
) -> Generator[MeteredEffect, Any, ModelReply | Capped]:
    """The reply to ``request``, or ``Capped`` (and no call) when it does not fit under a
    cap. With ``min_output_tokens``, the call is sent with less output than asked for when
    only that much is left (an answer); without, it gets all it asked for or is not made (a
    judge's verdict). Without the ledger the call is made unmetered. A failed call raises,
    its hold released."""
    if request.role != role:
        request = attrs.evolve(request, role=role)
    if not ledger:
        unmetered: ModelReply = yield request
        return unmetered
    prompt = request.prompt
    wanted = request.max_output_tokens
    decision = yield ReserveTokens(
        role,
        estimate_tokens(prompt.system + prompt.user),
        caps,
        wanted,
        wanted if min_output_tokens is None else min(min_output_tokens, wanted),
    )
    if isinstance(decision, Capped):
        return decision
    if decision.output_tokens < wanted:
        request = attrs.evolve(request, max_output_tokens=decision.output_tokens)
    try:
        reply: ModelReply = yield request
    except Exception:
        yield ReleaseTokens(decision.id)
        raise
    usage = measured_usage(reply.usage, prompt.system + prompt.user, reply.text)
    yield SettleTokens(decision.id, reply.provider, reply.model, usage)
    return reply
