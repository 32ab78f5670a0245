"""Handlers of the usage ledger's effects (``ragcore.usage``): token caps checked, held,
settled and released in the database (``ragio.usage.ledger``)."""

from __future__ import annotations

import trio

from ragcore.usage import (
    Allowed,
    Capped,
    CheckBudget,
    ReleaseTokens,
    Reservation,
    ReserveTokens,
    SettleTokens,
)
from ragio.service import HandlerTable, Service
from ragio.usage import ledger

#: how long a call that would fit once others settle waits for them (``reserve_tokens``)
RESERVE_WAIT_SECONDS = 10.0


async def check_budget(effect: CheckBudget, service: Service) -> Allowed | Capped:
    return await service.database.run(ledger.check, effect, service.clock.now())


async def reserve_tokens(effect: ReserveTokens, service: Service) -> Reservation | Capped:
    """A reservation, waiting up to RESERVE_WAIT_SECONDS while the caps are held only by
    calls in flight (``Capped.wait``): they usually settle for less than they hold, and a
    small cap then serves the next call instead of refusing it."""
    deadline = trio.current_time() + RESERVE_WAIT_SECONDS
    pause = 0.02
    while True:
        decision = await service.database.run(ledger.reserve, effect, service.clock.now())
        if not (isinstance(decision, Capped) and decision.wait):
            return decision
        if trio.current_time() + pause > deadline:
            return decision
        await trio.sleep(pause)
        pause = min(pause * 2, 0.25)


async def settle_tokens(effect: SettleTokens, service: Service) -> None:
    await service.database.run(
        ledger.settle, effect.reservation_id, effect.provider, effect.model, effect.usage
    )


async def release_tokens(effect: ReleaseTokens, service: Service) -> None:
    await service.database.run(ledger.release, effect.reservation_id)


HANDLERS: HandlerTable = {
    CheckBudget: check_budget,
    ReserveTokens: reserve_tokens,
    SettleTokens: settle_tokens,
    ReleaseTokens: release_tokens,
}
