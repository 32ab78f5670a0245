"""Errors a rule raises about its input; the runners turn them into replies."""

from __future__ import annotations


class InvalidInput(ValueError):
    """The caller sent something we cannot use; ``field`` names it, the message says why."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")
