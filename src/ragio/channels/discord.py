"""Discord replies (editing the deferred response, then follow-ups) and registering /ask."""

from __future__ import annotations

import httpx

from ragcore.channels import discord
from ragcore.channels.messages import InboundMessage
from ragcore.employees.roles import Role
from ragcore.settings import Settings
from ragio.channels.outbound import call
from ragio.service import Service


async def send_reply(service: Service, message: InboundMessage, parts: list[str]) -> list[str]:
    """The first part replaces the "thinking…" message; the others follow it. No ids:
    nothing here refers to a sent message later."""
    base = service.settings.discord_api_base_url
    app, token = message.reply_via["application_id"], message.reply_via["token"]
    for index, part in enumerate(parts):
        if index == 0:
            method, path = "PATCH", discord.original_path(app, token)
        else:
            method, path = "POST", discord.followup_path(app, token)
        await call(
            service.outbound, "discord", method, base + path, json=discord.message_body(part)
        )
    return []


async def register_command(client: httpx.AsyncClient, settings: Settings, roles: list[Role]) -> str:
    """Create or update the global ``/ask`` command; the command's id."""
    url = settings.discord_api_base_url + discord.command_path(settings.discord_application_id)
    headers = {"Authorization": f"Bot {settings.discord_bot_token}"}
    body = discord.ask_command(roles)
    response = await call(client, "discord", "POST", url, json=body, headers=headers)
    return str(response.json().get("id", ""))
