"""The monitor (``/monitor``): the signal stream by level (live), the monitor's rule hit
counts, the consumers' lag and the dead letters."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from semspec.console.state import ConsoleState
from semspec.vocabulary.subjects import SIGNAL_LEVELS


def routes() -> list[BaseRoute]:
    """The monitor's route."""
    return [Route("/monitor", monitor, name="monitor")]


async def monitor(request: Request) -> Response:
    """The signals seen since the console started, newest first, by level."""
    state: ConsoleState = request.app.state.console
    signals = list(reversed(state.feed.signals))
    by_level = {level: sum(1 for s in signals if s.level == level) for level in SIGNAL_LEVELS}
    context = {"active": "monitor", "signals": signals, "by_level": by_level}
    return state.render(request, "monitor.html", context)
