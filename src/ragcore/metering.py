"""Rule 14 for one model call: reserve its tokens, call, then settle what it used, or
release the hold when the call failed. A call cut off while its reply streamed (the
client left: ``Abandoned`` with the reply so far) is settled with what it spent: the
prompt and the output streamed, as the provider counted them, else estimated. Every
metered call goes through here: the chat answer, the grounding check's judge, the
profile summary. How the hold is sized is in
``ragcore.usage``."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeAlias

import attrs

from ragcore.generation import Abandoned, Generate, ModelReply
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
    its hold released; one cut off mid-stream settles what it spent."""
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
    except Abandoned as gone:
        if gone.partial is None:
            yield ReleaseTokens(decision.id)
        else:  # billed: the prompt and the output streamed so far
            yield _settle(decision.id, gone.partial, prompt.system + prompt.user)
        raise
    except Exception:
        yield ReleaseTokens(decision.id)
        raise
    yield _settle(decision.id, reply, prompt.system + prompt.user)
    return reply


def _settle(reservation_id: int, reply: ModelReply, prompt_text: str) -> SettleTokens:
    """Settle with the reply's counts, else an estimate from the prompt and its text."""
    usage = measured_usage(reply.usage, prompt_text, reply.text)
    return SettleTokens(reservation_id, reply.provider, reply.model, usage)
