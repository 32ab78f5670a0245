"""Shared test helpers."""

from __future__ import annotations

from typing import Any

from ragcore.settings import Settings, load_settings


def make_settings(**overrides: Any) -> Settings:
    """Settings as the service would read them from an environment holding ``overrides``."""
    environ = {name.upper(): str(value) for name, value in overrides.items()}
    return load_settings(environ)
