"""What a webhook or chat-ops POST's ``Outcome`` (``ragio.targets.post``) means for the
action: ``Sent`` only on a 2xx, and otherwise a reason that names the call and its host,
never the URL's path or query, which may hold a secret."""

from __future__ import annotations

from ragcore.actions.effects import Sent
from ragcore.retry import Outcome


def post_sent(name: str, host: str, outcome: Outcome) -> Sent:
    """How the POST to ``host`` (called ``name``) went, for the action's log."""
    where = f"{name} ({host})"
    if outcome.refused is not None:
        return Sent(False, f"{name}: {outcome.refused}")
    if outcome.status is None:
        return Sent(False, f"{where}: {outcome.failure}")
    if outcome.delivered:
        return Sent(True, f"{where} answered HTTP {outcome.status}")
    if 300 <= outcome.status < 400:
        return Sent(
            False, f"{where} answered a redirect (HTTP {outcome.status}), which is not followed"
        )
    return Sent(False, f"{where} answered HTTP {outcome.status}")
