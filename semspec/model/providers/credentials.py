"""API keys come only from the environment; the config names the variable, never the key."""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

from semspec.core.errors import ConfigError


def is_loopback_url(url: str | None) -> bool:
    """Whether ``url`` points at this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if not url:
        return False
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host.rstrip(".").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_key_from_env(
    env_name: str | None, *, field: str, required: bool, optional: bool = False
) -> str | None:
    """The key in ``$env_name``; a clear ``ConfigError`` naming ``field`` when it is required.

    ``optional`` allows the named variable to be unset (a local server such as Ollama or vLLM
    takes no key): the result is then ``None``.
    """
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
        if optional:
            return None
        raise ConfigError(
            f"environment variable {env_name} is not set or empty",
            field=field,
            hint=f"export {env_name}=<your key> before starting the worker",
        )
    return value
