"""What every page of the console reads: the stack's config, its repository, the connections
to Temporal, NATS and the graph, the templates, the live feed and the console's session."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from semspec.console.board_rows import BoardRow
from semspec.console.human_time import time_tag
from semspec.console.live import LiveFeed
from semspec.console.page_status import PageStatus, PageStatusCache
from semspec.core.config.models import SemspecConfig
from semspec.services.console_session import ConsoleSession

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient
    from temporalio.client import Client

    from semspec.graph.store import GraphStore

PAGE_HEADERS = {"Cache-Control": "no-store"}
"""Pages hold the owner's data: no cache keeps them."""


def template_environment() -> jinja2.Environment:
    """The console's templates, loaded from the package, every value HTML-escaped."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("semspec.console", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # ``{{ iso|when }}``: a <time> saying how long ago, the exact time on hover.
    env.filters["when"] = time_tag
    # A page rendered without a status read (views rendered alone) shows no count and no banner.
    env.globals["page_status"] = PageStatus()
    return env


@dataclass
class ConsoleState:
    """The console process's shared state; pages read it from ``request.app.state.console``."""

    config: SemspecConfig
    repo: Path
    session: ConsoleSession
    """This console's host name, secret and start (``semspec.services.console_session``)."""
    templates: jinja2.Environment = field(default_factory=template_environment)
    feed: LiveFeed = field(default_factory=LiveFeed)
    closed_rows: dict[str, BoardRow] = field(default_factory=dict)
    page_status: PageStatusCache = field(default_factory=PageStatusCache)
    """The nav's escalation count and the monitor banner every page shows."""
    """The board's rows of closed task runs, by run id (they never change)."""
    connect_temporal: Callable[[], Awaitable[Client]] | None = None
    """How to reach Temporal; None: the stack of ``repo`` (``semspec.services.connect``)."""
    connect_nats: Callable[[], Awaitable[NatsClient]] | None = None
    """How to reach NATS; None: the stack of ``repo`` with its credentials."""
    _temporal: Client | None = field(default=None, init=False, repr=False)
    _nats: NatsClient | None = field(default=None, init=False, repr=False)
    _temporal_lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)
    _nats_lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    async def temporal(self) -> Client:
        """The Temporal client, connected on first use and kept."""
        async with self._temporal_lock:
            if self._temporal is None:
                self._temporal = await (self.connect_temporal or self._stack_temporal)()
            return self._temporal

    async def nats(self) -> NatsClient:
        """The NATS connection, connected on first use and kept (it reconnects by itself)."""
        async with self._nats_lock:
            if self._nats is None or self._nats.is_closed:
                self._nats = await (self.connect_nats or self._stack_nats)()
            return self._nats

    def connected_nats(self) -> NatsClient | None:
        """The NATS connection if one is open now, without connecting (nor waiting for a
        connect in progress, which the live feed's retries may be making)."""
        nc = self._nats
        return nc if nc is not None and nc.is_connected else None

    def graph(self) -> GraphStore:
        """The stack's graph store, by the rule every process follows (``graph.access``).
        Blocking: call it, and the store's queries, through ``anyio.to_thread.run_sync``."""
        from semspec.graph.access import open_graph

        return open_graph(self.config, self.repo)

    def render(
        self, request: Request, template: str, context: Mapping[str, Any], status: int = 200
    ) -> HTMLResponse:
        """``template`` rendered with ``context`` (plus ``request`` and ``url_for``)."""
        body = self.templates.get_template(template).render(
            {
                "request": request,
                "url_for": request.url_for,
                "active": "",
                "page_status": self.page_status.current,
                **context,
            }
        )
        return HTMLResponse(body, status, headers=PAGE_HEADERS)

    async def close(self) -> None:
        """Close the connections this state opened."""
        if self._nats is not None and not self._nats.is_closed:
            await self._nats.close()
        self._nats = self._temporal = None

    async def _stack_temporal(self) -> Client:
        from semspec.services.connect import resolve_endpoints, temporal_client

        endpoints = resolve_endpoints(self.config, self.repo)
        return await temporal_client(self.config, endpoints.temporal_address)

    async def _stack_nats(self) -> NatsClient:
        from semspec.services.connect import stack_nats

        return await stack_nats(self.config, self.repo, name="semspec-console")
