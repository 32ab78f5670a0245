"""What the action and workflow tests share: a resolver that points test names at
127.0.0.1 (and counts lookups), setting the autonomy through the API, and reading the
action log."""

from __future__ import annotations

from typing import Any

import httpx

from ragio.targets import post

# Names the tests' receivers answer for. 10.0.0.5, 169.254.169.254 and fe80::1 are never
# contacted: they are only used where the address check refuses them first.
TEST_NAMES = {
    "hooks.example.test": ["127.0.0.1"],
    "chatops.example.test": ["127.0.0.1"],
    "internal.example.test": ["10.0.0.5"],
    # a loopback receiver's name that also resolves to a metadata or link-local address
    "metadata.example.test": ["127.0.0.1", "169.254.169.254"],
    "linklocal.example.test": ["127.0.0.1", "fe80::1"],
}


class Resolver:
    """Stands in for DNS (``ragio.targets.post.resolve``, the one lookup of a call): records
    every lookup; unknown names do not resolve. Addresses and localhost names are read
    without a lookup, so they never come here."""

    def __init__(self) -> None:
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host in TEST_NAMES:
            return list(TEST_NAMES[host])
        raise OSError(f"{host} does not resolve in the tests")


def use_resolver(monkeypatch: Any) -> Resolver:
    resolver = Resolver()
    monkeypatch.setattr(post, "resolve", resolver)
    return resolver


async def set_autonomy(api: httpx.AsyncClient, **fields: Any) -> dict:
    response = await api.post("/autonomy", json=fields)
    assert response.status_code == 200, response.text
    return response.json()


async def log_of(api: httpx.AsyncClient, action_id: str) -> list[tuple[str, str]]:
    """(event, detail) of one action's log entries, oldest first."""
    response = await api.get("/autonomy/log", params={"action": action_id})
    assert response.status_code == 200, response.text
    return [(e["event"], e["detail"]) for e in reversed(response.json()["entries"])]
