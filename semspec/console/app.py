"""The console's ASGI application: every page module's routes, the live feed's ``/events``,
the static files, all behind ``auth.ConsoleAccess``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from semspec.console import (
    board_page,
    inbox_page,
    knowledge_page,
    land_action,
    monitor_page,
    task_page,
)
from semspec.console.auth import ConsoleAccess
from semspec.console.live import Listener
from semspec.console.page_status import PageStatusRefresh
from semspec.console.state import ConsoleState
from semspec.core.logging import get_logger

FIRST_TRY_S = 2.0
"""How long the console waits for NATS before it serves pages without the live feed."""
RETRY_S = 5.0
"""Seconds between two attempts to start the live feed while NATS does not answer."""
PING_S = 15
"""Seconds between the keep-alive comments of an idle event stream."""

logger = get_logger("console")


def create_app(state: ConsoleState) -> Starlette:
    """The console for ``state``'s stack; the live feed subscribes while the app runs."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Subscribed before the first page is served; while NATS does not answer, in the
        # background (the pages serve what Temporal and the graph know meanwhile).
        started = await _start_feed(state, FIRST_TRY_S)
        retrying = None if started else asyncio.create_task(_retry_feed(state))
        try:
            yield
        finally:
            if retrying is not None:
                retrying.cancel()
            await state.feed.stop()
            await state.close()

    routes: list[BaseRoute] = [
        *board_page.routes(),
        *task_page.routes(),
        *land_action.routes(),
        *inbox_page.routes(),
        *monitor_page.routes(),
        *knowledge_page.routes(),
        Route("/events", events, name="events"),
        Mount("/static", StaticFiles(packages=[("semspec.console", "static")]), name="static"),
    ]
    app = Starlette(
        routes=routes,
        # The page status is read after the access check: nothing for a stranger.
        middleware=[
            Middleware(ConsoleAccess, session=state.session),
            Middleware(PageStatusRefresh),
        ],
        lifespan=lifespan,
    )
    app.state.console = state
    return app


async def _start_feed(state: ConsoleState, within_s: float | None = None) -> bool:
    """Start the live feed; False (logged) when NATS does not answer (within ``within_s``)."""
    try:
        await asyncio.wait_for(_subscribe(state), within_s)
    except Exception as exc:
        logger.warning("console_live_feed_unavailable", error=str(exc), retry_s=RETRY_S)
        return False
    return True


async def _subscribe(state: ConsoleState) -> None:
    await state.feed.start(await state.nats())


async def _retry_feed(state: ConsoleState) -> None:
    while True:
        await asyncio.sleep(RETRY_S)
        if await _start_feed(state):
            return


async def events(request: Request) -> EventSourceResponse:
    """The live feed as server-sent events, one stream per open page."""
    state: ConsoleState = request.app.state.console
    return EventSourceResponse(
        state.feed.stream(Listener()),
        ping=PING_S,
        headers={"Cache-Control": "no-store"},
    )
