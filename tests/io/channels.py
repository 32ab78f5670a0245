"""What the text channel tests share: a document to answer from, the fake provider's
grounded reply, waiting for a background answer, workflows, and restarting the service
on the same database."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio

from ragio.startup import open_service
from tests.io.conftest import serve_service

REFUNDS = """# Returns and refunds

Customers can return any item within 30 days of delivery for a full refund.
Refunds are paid to the original payment method within 5 business days.
"""
QUESTION = "How many days do I have to return an item?"
REPLY = "You can return any item within 30 days of delivery [1]."
# the role personalities' first words, as the provider sees them in the system prompt
SUPPORT_VOICE = "You are customer support"
SALES_VOICE = "You are the sales assistant"
FINANCE_VOICE = "You are the finance assistant"
# The tests' workflow receivers run on 127.0.0.1, a workflow engine on this host: a call
# reaches one only with WORKFLOW_ALLOW_PRIVATE_TARGETS on.
LOCAL_WORKFLOWS = {"workflow_allow_private_targets": "true"}


async def wait_for(condition: Callable[[], Any], seconds: float = 15) -> Any:
    """Poll ``condition`` until it is truthy (and return it); fail after ``seconds``."""
    with trio.fail_after(seconds):
        while not (value := condition()):
            await trio.sleep(0.02)
    return value


async def add_refunds(api: httpx.AsyncClient) -> None:
    response = await api.post("/documents", json={"name": "refunds.md", "text": REFUNDS})
    assert response.status_code == 201, response.text


async def add_workflow(api: httpx.AsyncClient, url: str, channels: list[str]) -> dict:
    body = {"name": f"hook {url}", "webhook_url": url, "channels": channels, "is_active": True}
    response = await api.post("/automation-workflows", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def system_prompts(openai: Any) -> list[str]:
    """The system message of every chat completion the fake provider was asked for."""
    return [r.body["messages"][0]["content"] for r in openai.requests_to("/v1/chat/completions")]


@asynccontextmanager
async def restarted(service: Any, nursery: trio.Nursery) -> AsyncIterator[httpx.AsyncClient]:
    """A second service and app on the same settings and database: a restart."""
    async with open_service(service.settings) as again:
        url, stop = await serve_service(again, nursery)
        try:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                yield client
        finally:
            stop.set()
