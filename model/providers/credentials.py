"""API keys come only from the environment; the config names the variable, never the key."""

from __future__ import annotations

import os

from semspec.errors import ConfigError


def api_key_from_env(env_name: str | None, *, field: str, required: bool) -> str | None:
    """The key in ``$env_name``; a clear ``ConfigError`` naming ``field`` when it is required."""
    if not env_name:
        if required:
            raise ConfigError(
                "no API key variable configured",
                field=field,
                expected="the NAME of an environment variable holding the key",
                hint=f"set {field}: ANTHROPIC_API_KEY (or similar) and export that variable",
            )
        return None
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise ConfigError(
            f"environment variable {env_name} is not set or empty",
            field=field,
            hint=f"export {env_name}=<your key> before starting the worker",
        )
    return value
