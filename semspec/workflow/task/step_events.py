"""The observer of one agent turn inside the develop and review activities.

``TurnObserver.step`` only queues the step: a background task on the worker's event loop
validates it as an ``agent.monitor.step`` event and publishes it through the worker's JetStream
publisher, in order, one bounded attempt each. The event id is
``<workflow id>/<run id>/<iteration>/step/<role>/<turn>/<n>``, where the turn is the activity's
id: Temporal keeps it across the retries of one activity, so a retried activity, which takes its
steps again under the same numbers, publishes none of them twice; another turn of the same role
in the same iteration (the reviewer's follow-up, a turn run again after a dollar stop) has ids
of its own. At the end of the turn the
queue gets a few seconds to drain; what did not go out is counted in the step's
``events_dropped``.

``stop_requested`` is how a pause or halt reaches the agent before its next step rather than at
the next iteration: for the turn the observer subscribes to ``user.signal.pause`` and
``user.signal.halt`` and keeps the signals about its own task. The workflow hears of the same
signal from the monitor and cancels the step; the agent stopping at once means no further model
call is made meanwhile. The turn's dollar budget stops it too (``cost_budget``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from pydantic import ValidationError

from semspec.agents.steps import StepRecord, StopReason
from semspec.core.logging import get_logger
from semspec.core.nats_connect import connect_nats
from semspec.vocabulary.event_payloads import AgentRole
from semspec.vocabulary.events import MonitorEvent, UserSignal, monitor_event
from semspec.vocabulary.subjects import signal_subject
from semspec.workflow.task.messages import EventContext
from semspec.workflow.task.publisher import EventPublisher

log = get_logger("step-events")

DRAIN_S = 3.0
"""How long the end of a turn waits for its queued steps to be published."""
SUBSCRIBE_S = 3.0
"""Bound on connecting and subscribing to the signals; past it the turn runs without them (the
workflow's cancellation still stops it)."""
STOP_LEVELS: tuple[StopReason, ...] = ("halt", "pause")


def step_event_id(ctx: EventContext, role: AgentRole, turn: str, step: int) -> str:
    """The ``Nats-Msg-Id`` of a step: ``<workflow>/<run>/<iteration>/step/<role>/<turn>/<n>``."""
    return f"{ctx.workflow_id}/{ctx.run_id}/{ctx.iteration}/step/{role}/{turn}/{step}"


@dataclass
class TurnObserver:
    """A ``StepObserver`` publishing one turn's steps and listening for its stop signals.

    Use as ``async with``: entering subscribes and starts the publishing task, leaving drains
    the queue (bounded) and sets ``dropped``.
    """

    publisher: EventPublisher | None
    ctx: EventContext
    role: AgentRole
    turn: str
    """The activity's id: the same across its retries, another for each turn."""
    budget_usd: float | None = None
    drain_s: float = DRAIN_S
    dropped: int = 0
    """Steps not published: refused as invalid, refused by NATS, or still queued at the end."""
    spent_usd: float = 0.0
    stop_signal: UserSignal | None = None
    """The halt or pause about this task that arrived during the turn (a halt wins)."""
    _queue: asyncio.Queue[StepRecord] = field(default_factory=asyncio.Queue)
    _sender: asyncio.Task[None] | None = None
    _nc: NatsClient | None = None

    def step(self, record: StepRecord) -> None:
        """Queue a finished step for publishing; never blocks or raises."""
        if record.cost_usd is not None:
            self.spent_usd += record.cost_usd
        if self.publisher is not None:
            self._queue.put_nowait(record)

    def stop_requested(self) -> StopReason | None:
        """``halt`` or ``pause`` when one for this task arrived, ``cost_budget`` when the turn
        spent its dollars; else None."""
        if self.stop_signal is not None:
            level = self.stop_signal.level
            return "halt" if level == "halt" else "pause"
        if self.budget_usd is not None and self.spent_usd >= self.budget_usd:
            return "cost_budget"
        return None

    async def __aenter__(self) -> TurnObserver:
        if self.publisher is not None:
            self._sender = asyncio.create_task(self._send_all(self.publisher))
            try:
                async with asyncio.timeout(SUBSCRIBE_S):
                    await self._subscribe(self.publisher)
            except Exception as exc:  # the stop still comes, later, through the workflow
                log.warning("step observer cannot watch signals", error=str(exc))
                await self._close_nats()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._close_nats()
        if self._sender is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), self.drain_s)
        self._sender.cancel()
        await asyncio.gather(self._sender, return_exceptions=True)
        left = self._queue.qsize()
        self.dropped += left
        if left:
            log.warning("step events not published in time", dropped=left, role=self.role)

    async def _subscribe(self, publisher: EventPublisher) -> None:
        self._nc = await connect_nats(
            publisher.url,
            publisher.options,
            "semspec-worker-steps",
            first_connect_s=SUBSCRIBE_S,
            reconnect_wait_s=0.5,
        )
        for level in STOP_LEVELS:
            await self._nc.subscribe(signal_subject(level), cb=self._on_signal)
        await self._nc.flush()  # the server has the subscriptions before the first step

    async def _on_signal(self, msg: Msg) -> None:
        try:
            signal = UserSignal.from_json(msg.data)
        except ValidationError:
            return  # not a signal anyone could act on; the monitor logs its own
        if signal.task_id != self.ctx.task_id or signal.level not in STOP_LEVELS:
            return
        if self.stop_signal is None or signal.level == "halt":
            self.stop_signal = signal

    async def _close_nats(self) -> None:
        nc, self._nc = self._nc, None
        if nc is not None:
            with contextlib.suppress(Exception):
                await nc.close()

    async def _send_all(self, publisher: EventPublisher) -> None:
        """Publish queued steps in order, each validated first (as ``TaskActivities._emit``)."""
        while True:
            record = await self._queue.get()
            sent = False
            try:
                event = publisher.build(functools.partial(self._event, record), "step")
                sent = event is not None and await publisher.deliver_or_drop(event, "step")
            finally:
                # A step whose attempt the end of the turn cut short counts as not sent.
                self.dropped += 0 if sent else 1
                self._queue.task_done()

    def _event(self, record: StepRecord) -> MonitorEvent:
        ctx = self.ctx
        return monitor_event(
            "step",
            record.payload(),
            event_id=step_event_id(ctx, record.role, self.turn, record.step),
            task_id=ctx.task_id,
            plan_id=ctx.plan_id,
            run_id=ctx.run_id,
            iteration=ctx.iteration,
            at=datetime.now(UTC).isoformat(),
        )
