"""The live feed: one set of NATS subscriptions per console process (loop events and user
signals), fanned out to every open page as server-sent events.

Each browser gets its own bounded queue. A browser that reads too slowly to keep up is not
waited for: its queue is dropped and it gets one ``reload`` event (the page then loads afresh),
so one stalled tab never holds up the others or makes the console's memory grow.

Every message carries what one board row needs (task, plan, iteration and the field that
changed), so a page updates in place without asking the server again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from semspec.client.task_render import retries_fraction
from semspec.vocabulary.event_payloads import (
    ContextPayload,
    EscalationRaised,
    EscalationResolved,
    FinishedPayload,
    GatePayload,
    IterationPayload,
    ReviewPayload,
)
from semspec.vocabulary.events import MonitorEvent, UserSignal, event_from_json
from semspec.vocabulary.subjects import MONITOR_SUBJECTS, SIGNAL_SUBJECTS
from semspec.workflow.task.dollars import spent_text

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient
    from nats.aio.msg import Msg
    from nats.aio.subscription import Subscription

QUEUE_SIZE = 256
"""Messages a browser may fall behind by before it is told to reload."""
LAST_EVENTS_KEPT = 10_000
"""Tasks whose latest loop event time the feed remembers (the oldest is forgotten first)."""


@dataclass(frozen=True)
class LiveMessage:
    """One server-sent event: its name (``task``, ``signal``, ``reload``) and JSON data."""

    event: str
    data: dict[str, Any]

    def encoded(self) -> dict[str, str]:
        """The fields ``EventSourceResponse`` sends."""
        return {"event": self.event, "data": json.dumps(self.data, separators=(",", ":"))}


RELOAD = LiveMessage("reload", {})


@dataclass(eq=False)
class Listener:
    """One open page's queue; ``overflowed`` once it fell too far behind."""

    queue: asyncio.Queue[LiveMessage] = field(
        default_factory=lambda: asyncio.Queue(maxsize=QUEUE_SIZE)
    )
    overflowed: bool = False

    def offer(self, message: LiveMessage) -> None:
        """Queue ``message`` without waiting; a full queue is replaced by one ``reload``."""
        if self.overflowed:
            return
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.overflowed = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(RELOAD)


@dataclass(eq=False)
class LiveFeed:
    """The console's NATS subscriptions and the pages listening to them."""

    listeners: set[Listener] = field(default_factory=set)
    last_event_at: dict[str, str] = field(default_factory=dict)
    """Each task's latest loop event time seen while the console ran (the board's Updated
    column: Temporal's listing has no time of a running workflow's last change)."""
    escalation_changes: int = 0
    """Escalation and finished events seen: a change tells ``page_status`` its count is old."""
    _subscriptions: list[Subscription] = field(default_factory=list)

    async def start(self, nc: NatsClient) -> None:
        """Subscribe to loop events and user signals on ``nc``. Plain subscriptions: the
        streams keep the history, the feed only passes on what happens while pages are open."""
        self._subscriptions = [
            await nc.subscribe(MONITOR_SUBJECTS, cb=self._on_event),
            await nc.subscribe(SIGNAL_SUBJECTS, cb=self._on_signal),
        ]

    async def stop(self) -> None:
        """Unsubscribe, and end every open stream."""
        for sub in self._subscriptions:
            with contextlib.suppress(Exception):  # the connection may be closed already
                await sub.unsubscribe()
        self._subscriptions = []
        for listener in list(self.listeners):
            listener.offer(RELOAD)

    def publish(self, message: LiveMessage) -> None:
        """Hand ``message`` to every open page."""
        for listener in self.listeners:
            listener.offer(message)

    async def stream(self, listener: Listener) -> AsyncIterator[dict[str, str]]:
        """The events of one page, until it overflows (then one ``reload``) or disconnects."""
        self.listeners.add(listener)
        try:
            while True:
                message = await listener.queue.get()
                yield message.encoded()
                if message is RELOAD:
                    return
        finally:
            self.listeners.discard(listener)

    async def _on_event(self, msg: Msg) -> None:
        try:
            event = event_from_json(msg.data)
        except ValidationError:
            return  # another version's event: the pages show what they understand
        if event.kind in ("escalation", "finished"):
            self.escalation_changes += 1
        if event.at:
            self.last_event_at.pop(event.task_id, None)  # re-inserted: newest last
            self.last_event_at[event.task_id] = event.at
            if len(self.last_event_at) > LAST_EVENTS_KEPT:
                del self.last_event_at[next(iter(self.last_event_at))]
        self.publish(task_message(event))

    async def _on_signal(self, msg: Msg) -> None:
        try:
            signal = UserSignal.from_json(msg.data)
        except ValidationError:
            return
        self.publish(signal_message(signal))


def task_message(event: MonitorEvent) -> LiveMessage:
    """What a loop event changes on the task's board row."""
    return LiveMessage(
        "task",
        {
            "task_id": event.task_id,
            "plan_id": event.plan_id,
            "kind": event.kind,
            "at": event.at,
            "fields": {"iteration": event.iteration, **row_fields(event.data)},
        },
    )


def row_fields(data: object) -> dict[str, Any]:
    """The board columns a loop event's payload sets, as the server renders them
    (``board_rows.board_row``): retries as used/allowed, cost as ``spent_text``."""
    match data:
        case IterationPayload():
            running = {"state": "running", "phase": data.phase}
            return (
                running
                | retries(data.retries, data.max_retries)
                | cost(data.cost_usd, data.unpriced_models)
            )
        case GatePayload():
            return {"phase": "gates"}
        case ReviewPayload():
            return {"phase": "review"}
        case ContextPayload():
            return {"pressure": data.pressure, "utilization": data.utilization}
        case EscalationRaised():
            # A halt signal stops the task as an escalation from the monitor.
            state = "halted" if data.source == "halt" else "escalated"
            stopped = {"state": state, "phase": "escalated"}
            return (
                stopped
                | retries(data.retries, data.max_retries)
                | cost(data.cost_usd, data.unpriced_models)
            )
        case EscalationResolved():
            return {"state": "running", "phase": "developer"}
        case FinishedPayload():
            state = board_state_of_outcome(data.outcome)
            ended = {"state": state, "phase": data.outcome}
            why = {"reason": data.reason} if data.reason else {}
            return ended | why | cost(data.cost_usd, data.unpriced_models)
    return {}


def retries(used: int, allowed: int | None) -> dict[str, Any]:
    """The retries column as used/allowed; nothing from a loop that did not say what it
    allows, so the row keeps what the page was served with."""
    return {} if allowed is None else {"retries": retries_fraction(used, allowed)}


def cost(usd: float, unpriced_models: list[str]) -> dict[str, Any]:
    """The cost column as the task page words it; nothing before a call was counted (no
    dollars, no model without a price), so the cell keeps what it shows."""
    if not usd and not unpriced_models:
        return {}
    return {"cost": spent_text(usd, unpriced_models)}


def signal_message(signal: UserSignal) -> LiveMessage:
    """A user signal: for its task's row, and for the monitor's stream."""
    fields: dict[str, Any] = {"signal": f"{signal.level}: {signal.reason}"}
    if signal.level == "halt":
        fields["state"] = "halted"
    return LiveMessage(
        "signal",
        {
            "task_id": signal.task_id,
            "plan_id": signal.plan_id,
            "signal_id": signal.signal_id,
            "level": signal.level,
            "reason": signal.reason,
            "message": signal.message,
            "at": signal.at,
            "fields": fields,
        },
    )


def board_state_of_outcome(outcome: str) -> str:
    """The board's column for a finished task's outcome."""
    return {"approved": "approved", "halted": "halted"}.get(outcome, "failed")
