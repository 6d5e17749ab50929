"""What every console page shows above its own content: how many escalations wait for a human
(the nav's Inbox count) and a banner when no risk monitor consumes the loop events, or the one
that holds the lease has stalled (issue 26, ADR 0005; the monitor page's own check, on every
page).

Read at most every ``FRESH_S`` seconds, before a page is rendered (``PageStatusRefresh``, a
middleware, so no page handler needs to ask); a page waits at most ``WAIT_S`` for it and
otherwise shows the last known status while the read finishes for the next page.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from semspec.core.logging import get_logger

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient
    from nats.js import JetStreamContext
    from starlette.types import ASGIApp, Receive, Scope, Send
    from temporalio.client import Client

    from semspec.console.live import LiveFeed
    from semspec.core.config.models import SemspecConfig
    from semspec.processors.risk_monitor.lease import LeaseHolder
    from semspec.processors.risk_monitor.watchdog import ConsumerProgress

FRESH_S = 5.0
"""How old the status may be before a page load reads it again."""
WAIT_S = 1.5
"""How long a page waits for a fresh read before it shows the last one."""
READ_TIMEOUT_S = 3.0
NOT_PAGES = ("/static/", "/events")
"""Paths that are not pages: they need no status."""

logger = get_logger("console")


@dataclass(frozen=True)
class PageStatus:
    """The nav's count and the monitor banner."""

    escalations: int | None = None
    """Open escalations; None when Temporal did not say."""
    escalated_tasks: tuple[str, ...] = ()
    """The tasks they belong to (the page's script keeps the count live from these)."""
    monitor: str = ""
    """Why loop events are not being consumed; empty when they are (or NATS did not say)."""


def monitor_banner(
    holder: LeaseHolder | None, progress: ConsumerProgress | None, stall_s: float
) -> str:
    """The banner text, empty when a monitor holds the lease and consumes. ``progress`` is
    None when the monitor's consumer does not exist yet."""
    if progress is not None and progress.stalled(stall_s):
        who = f"the active monitor ({holder.identity})" if holder else "no monitor"
        return f"{who}: {progress.describe()} (risk.leader.stall_s: {stall_s:g})"
    if holder is None:
        return "no risk monitor holds the lease: none is running (semspec up starts one)"
    return ""


async def read_monitor(js: JetStreamContext, stall_s: float) -> str:
    """The banner from the lease and the consumer's progress, as ``semspec status`` reads
    them."""
    from nats.js.errors import NotFoundError

    from semspec.processors.risk_monitor.lease import active_holder
    from semspec.processors.risk_monitor.watchdog import consumer_progress

    holder = await active_holder(js)
    try:
        progress: ConsumerProgress | None = await consumer_progress(js)
    except NotFoundError:
        progress = None
    return monitor_banner(holder, progress, stall_s)


async def open_escalation_tasks(client: Client) -> tuple[str, ...]:
    """The tasks that wait on a human's answer, from their memos in Temporal's visibility (one
    call, as ``semspec escalations list`` reads them; no question to a worker)."""
    from semspec.client.escalations import waiting_escalations

    found = await waiting_escalations(client)
    return tuple(dict.fromkeys(str(esc.get("task_id", "")) for esc in found if esc.get("task_id")))


class StatusSource(Protocol):
    """What a page-status read needs of the console's state (``ConsoleState``); a protocol so
    this module does not import the state that holds its cache."""

    @property
    def feed(self) -> LiveFeed: ...

    @property
    def config(self) -> SemspecConfig: ...

    @property
    def page_status(self) -> PageStatusCache: ...

    async def temporal(self) -> Client: ...

    def connected_nats(self) -> NatsClient | None: ...


class PageStatusCache:
    """The last status read and when; one read at a time."""

    def __init__(self) -> None:
        self.current = PageStatus()
        self._read_at = float("-inf")
        self._changes = -1
        self._reading: asyncio.Task[None] | None = None

    async def refresh(self, state: StatusSource) -> None:
        """Read the status again if it is older than ``FRESH_S`` or an escalation came or went
        since; wait at most ``WAIT_S``."""
        changes = state.feed.escalation_changes
        if time.monotonic() - self._read_at < FRESH_S and changes == self._changes:
            return
        self._changes = changes
        if self._reading is None or self._reading.done():
            self._reading = asyncio.create_task(self._read(state))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._reading), WAIT_S)

    async def _read(self, state: StatusSource) -> None:
        escalations, monitor = await asyncio.gather(self._escalations(state), self._monitor(state))
        count = None if escalations is None else len(escalations)
        self.current = PageStatus(count, escalations or (), monitor)
        self._read_at = time.monotonic()

    async def _escalations(self, state: StatusSource) -> tuple[str, ...] | None:
        try:
            client = await state.temporal()
            return await asyncio.wait_for(open_escalation_tasks(client), READ_TIMEOUT_S)
        except Exception as exc:  # Temporal down: the count is left out, the page says why
            logger.debug("console_escalation_count_unavailable", error=str(exc))
            return None

    async def _monitor(self, state: StatusSource) -> str:
        # Only on the connection the pages and the live feed keep: a connect attempt of ours
        # would hold the one the feed retries while NATS is down.
        nc = state.connected_nats()
        if nc is None:
            return ""
        try:
            js = nc.jetstream(timeout=READ_TIMEOUT_S)
            return await asyncio.wait_for(
                read_monitor(js, state.config.risk.leader.stall_s), READ_TIMEOUT_S
            )
        except Exception as exc:  # NATS down: no banner from a guess; the pages say NATS
            logger.debug("console_monitor_status_unavailable", error=str(exc))
            return ""


class PageStatusRefresh:
    """ASGI middleware: refresh the page status before a page (a GET that is not a static
    file, the event stream or a gate log) is served."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _is_page(scope):
            state: StatusSource = scope["app"].state.console
            await state.page_status.refresh(state)
        await self.app(scope, receive, send)


def _is_page(scope: Scope) -> bool:
    if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
        return False
    path: str = scope["path"]
    return not path.startswith(NOT_PAGES) and not path.endswith("/log")
