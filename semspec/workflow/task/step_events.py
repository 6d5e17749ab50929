"""The observer of one agent turn inside the develop and review activities.

``TurnObserver.step`` only queues the step: a background task on the worker's event loop
validates it as an ``agent.monitor.step`` event and publishes it through the worker's JetStream
publisher, in order, one bounded attempt each. The event id is
``<workflow id>/<run id>/<iteration>/step/<role>/<turn>/<n>``, where the turn is the activity's
id: Temporal keeps it across the retries of one activity, so a retried activity, which takes its
steps again under the same numbers, publishes none of them twice; another turn of the same role
in the same iteration (the reviewer's follow-up, a turn run again after a dollar stop) has ids
of its own. At the end of the turn the
queue gets a few seconds to drain; what NATS did not take goes back with the step's result to the
workflow's outbox (``step_outbox``), which sends it under the same ids once NATS is back, so a
NATS outage delays step events but loses none. A turn the workflow cancels (a halt or pause)
still reports what its steps spent (``usage``).

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
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import TracebackType

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from pydantic import ValidationError

from semspec.agents.protocol import TurnUsage
from semspec.agents.steps import StepRecord, StopReason
from semspec.core.errors import ServiceError
from semspec.core.logging import get_logger
from semspec.core.nats_connect import connect_nats
from semspec.vocabulary.event_payloads import AgentRole
from semspec.vocabulary.events import MonitorEvent, StepEvent, UserSignal, monitor_event
from semspec.vocabulary.subjects import signal_subject
from semspec.workflow.task.messages import EventContext, PublishInput
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
    the queue (bounded) and leaves the steps NATS did not take in ``unsent``.
    """

    publisher: EventPublisher | None
    ctx: EventContext
    role: AgentRole
    turn: str
    """The activity's id: the same across its retries, another for each turn."""
    budget_usd: float | None = None
    drain_s: float = DRAIN_S
    dropped: int = 0
    """Steps refused as invalid (never published)."""
    unsent: list[StepEvent] = field(default_factory=list)
    """Valid steps NATS did not take during the turn (down, or still queued at its end), in
    order: the activity hands them to the workflow's outbox, which sends them under the same
    ids once NATS is back (``step_outbox``)."""
    spent_usd: float = 0.0
    stop_signal: UserSignal | None = None
    """The halt or pause about this task that arrived during the turn (a halt wins)."""
    usage: TurnUsage = field(default_factory=TurnUsage)
    """What the turn's steps spent so far: what a cancelled turn reports, as its agent cannot."""
    _queue: asyncio.Queue[StepRecord] = field(default_factory=asyncio.Queue)
    _sender: asyncio.Task[None] | None = None
    _nc: NatsClient | None = None

    def step(self, record: StepRecord) -> None:
        """Queue a finished step for publishing; never blocks or raises."""
        if record.cost_usd is not None:
            self.spent_usd += record.cost_usd
        self.usage = _with_step(self.usage, record)
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
        while not self._queue.empty():
            self._keep(self._queue.get_nowait())
        if self.unsent:
            log.warning("step events left for the outbox", unsent=len(self.unsent), queued=left)

    def _keep(self, record: StepRecord) -> None:
        """Keep a step NATS did not take for the outbox (validated, so never twice refused)."""
        assert self.publisher is not None
        event = self.publisher.build(functools.partial(self._event, record), "step")
        if not isinstance(event, StepEvent):
            self.dropped += 1
        else:
            self.unsent.append(event)

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
            try:
                event = publisher.build(functools.partial(self._event, record), "step")
                if not isinstance(event, StepEvent):  # refused as invalid
                    self.dropped += 1
                    continue
                try:
                    await publisher.deliver(event)
                except ServiceError:
                    self.unsent.append(event)
                except asyncio.CancelledError:
                    # The end of the turn cut this attempt short: the outbox sends it (NATS
                    # drops the copy if this attempt did get through).
                    self.unsent.append(event)
                    raise
            finally:
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


def _with_step(usage: TurnUsage, record: StepRecord) -> TurnUsage:
    """``usage`` with one more step: a model step's tokens and dollars (tool steps and failed
    calls cost none); a model step that answered without a price marks the turn unpriced, as
    the agent's own count does (``agents.turn_meter``)."""
    if record.kind != "model" or record.error:
        return replace(usage, steps=usage.steps + 1)
    return TurnUsage(
        steps=usage.steps + 1,
        input_tokens=usage.input_tokens + record.input_tokens,
        output_tokens=usage.output_tokens + record.output_tokens,
        cached_tokens=usage.cached_tokens + record.cached_tokens,
        cost_usd=usage.cost_usd + (record.cost_usd or 0.0),
        model=record.model or usage.model,
        unpriced=usage.unpriced or record.cost_usd is None,
        peak_tokens=max(usage.peak_tokens, record.input_tokens + record.output_tokens),
    )


def step_outbox(observer: TurnObserver) -> tuple[list[PublishInput], int]:
    """The turn's unsent steps as outbox entries, and how many steps are dropped for good.

    The workflow's outbox sends them later under their ids (the step's role, turn and number as
    the event key).
    """
    ctx = observer.ctx
    queued = [
        PublishInput(
            ctx,
            "step",
            {**event.data.model_dump(mode="json"), "event_key": _event_key(event.event_id, ctx)},
            at=event.at,
        )
        for event in observer.unsent
    ]
    return queued, observer.dropped


def _event_key(event_id: str, ctx: EventContext) -> str:
    """The part of a step's id after ``<workflow>/<run>/<iteration>/step/``."""
    return event_id.removeprefix(f"{ctx.workflow_id}/{ctx.run_id}/{ctx.iteration}/step/")
