"""Rule 14 for a single model call outside the chat pipeline (the profile summary):
reserve its most tokens, call, then settle what it used, or release the hold when the
call failed. The chat pipeline meters its whole answer the same way
(``ragcore.chat.pipeline.answer_question``)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ragcore.effects import Generate, ReleaseTokens, Reply, ReserveTokens, SettleTokens
from ragcore.usage import Capped, Caps, estimate_tokens, measured_usage


def metered_generate(
    request: Generate, role: str | None, caps: Caps, ledger: bool
) -> Generator[Any, Any, Reply | Capped]:
    """The reply to ``request``, or ``Capped`` (and no call) when a cap is reached.
    Without the ledger the call is made unmetered. A failed call raises, its hold released."""
    if not ledger:
        return (yield request)
    prompt = request.prompt
    hold = estimate_tokens(prompt.system + prompt.user) + request.max_output_tokens
    decision = yield ReserveTokens(role, hold, caps)
    if isinstance(decision, Capped):
        return decision
    try:
        reply: Reply = yield request
    except Exception:
        yield ReleaseTokens(decision.id)
        raise
    usage = measured_usage(reply.usage, prompt.system + prompt.user, reply.text)
    yield SettleTokens(decision.id, reply.provider, reply.model, usage)
    return reply
