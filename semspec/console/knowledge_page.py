"""The knowledge page (issue 15; built by its own change): a stub until then, so the app starts."""

from __future__ import annotations

from starlette.routing import BaseRoute


def routes() -> list[BaseRoute]:
    """The page's routes."""
    return []
