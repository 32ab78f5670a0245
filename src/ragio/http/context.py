"""Reach the running Service from inside a request."""

from __future__ import annotations

from quart import current_app

from ragio.service import Service

EXTENSION = "ragchat"


def service() -> Service:
    return current_app.extensions[EXTENSION]
