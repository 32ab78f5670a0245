"""Settings from the environment and an optional .env file (the environment wins)."""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values

from ragcore.settings import Settings, load_settings


def read_settings(env_file: Path | None = None) -> Settings:
    """Settings for this process; raises ragcore.settings.SettingsError naming every bad one."""
    path = env_file if env_file is not None else Path(os.environ.get("RAGCHAT_ENV_FILE", ".env"))
    dotenv = dotenv_values(path) if path.is_file() else {}
    return load_settings(os.environ, dotenv)
