"""The monitor (``/monitor``): the signal stream by level (live), the rules' hit counts, the
risk monitor's consumer lag and the dead letters."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from semspec.console.monitor_data import monitor_view
from semspec.console.state import ConsoleState


def routes() -> list[BaseRoute]:
    """The monitor's route."""
    return [Route("/monitor", monitor, name="monitor")]


async def monitor(request: Request) -> Response:
    """What the monitor saw and how far behind it is; new signals arrive over ``/events``."""
    state: ConsoleState = request.app.state.console
    stall_s = state.config.risk.leader.stall_s
    view = await monitor_view((await state.nats()).jetstream(), stall_s)
    return state.render(request, "monitor.html", {"active": "monitor", "view": view})
