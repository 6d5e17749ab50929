"""Token counts read from a provider's reply, which the SDKs hand over without checking.

A field that is missing, null, negative or not an integer reads as 0: a server that reports
usage badly must not fail a call that otherwise succeeded.
"""

from __future__ import annotations

from typing import Any


def token_count(holder: Any, name: str) -> int:
    """The count ``holder.name`` (an SDK object or a dict), or 0 when it is not a count."""
    value = holder.get(name) if isinstance(holder, dict) else getattr(holder, name, None)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value
