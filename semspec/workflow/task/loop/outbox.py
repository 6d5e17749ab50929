"""The task workflow's outbox: loop events wait here, in order, until NATS has them.

The loop never waits for NATS: it adds an event and goes on. One drainer coroutine sends the
outbox's first events through the ``task.publish_events`` activity, which fails while NATS does
not acknowledge; Temporal retries it without limit (backing off up to ``MAX_BACKOFF``), so an
outage of any length delays events but loses none. The outbox lives in the workflow's state, so
Temporal's history keeps it: a worker that dies mid-drain leaves it to the next worker, and a
checkpoint carries it into the next run. Every event keeps the id it got when the loop added it
(``Nats-Msg-Id``), so a batch sent twice is stored once. Before the workflow returns it waits
until the outbox is empty (``drained``): ``finished`` is always the last event out.

The calls go to the event queue, where no gate or agent holds the slots (``event_queue.py``).
A step publishes its own events before it returns and hands back only those NATS did not take
(``TaskActivities._publish_now``), so the outbox mostly carries the loop's own events
(``iteration``, ``escalation``, ``finished``); whatever it adds after a step still goes out
after that step's events.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.loop.event_queue import event_queue
from semspec.workflow.task.messages import EventContext, PublishBatch, PublishInput, TaskStatus

BATCH = 20
"""Events sent per activity call at most: the backlog after an outage goes out in few calls."""
PUBLISH_TIMEOUT = timedelta(seconds=30)
"""Start-to-close of one call: each publish attempt in it is bounded (``EventPublisher``)."""
MAX_BACKOFF = timedelta(seconds=15)
"""Longest wait between two calls while NATS is down: events follow soon after it is back."""
RETRY_FOREVER = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=MAX_BACKOFF,
    maximum_attempts=0,  # unlimited: an outage is waited out, never turned into a lost event
)


class Outbox:
    """Loop events not yet published, and their one drainer; call only from the workflow."""

    def __init__(self, status: TaskStatus) -> None:
        self._status = status
        self._events: list[PublishInput] = []
        self._drainer: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def pending(self) -> list[PublishInput]:
        """The events still to publish, oldest first (what a checkpoint carries)."""
        return list(self._events)

    def carried(self, events: list[PublishInput]) -> None:
        """Take back the events an earlier run left queued; ``start`` sends them."""
        self._events.extend(events)
        self._count()

    def context(self) -> EventContext:
        """What every event of this run carries (its ids derive from it)."""
        status, info = self._status, workflow.info()
        return EventContext(
            task_id=status.task_id,
            plan_id=status.plan_id,
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            iteration=status.iteration,
        )

    def queue(
        self,
        kind: str,
        data: dict[str, Any],
        signal_level: str | None = None,
        signal_reason: str | None = None,
        signal_message: str = "",
    ) -> None:
        """Queue a loop event of the workflow's own (an escalation with its user signal)."""
        at = workflow.now().isoformat()
        self.add(
            PublishInput(
                self.context(), kind, data, signal_level, signal_reason, signal_message, at
            )
        )

    def from_step(self, events: list[PublishInput], refused: int) -> None:
        """Queue the events a step handed back, and count those it refused as invalid."""
        self._status.events_dropped += refused
        for event in events:
            self.add(event)

    def add(self, event: PublishInput) -> None:
        """Queue ``event`` behind the others and return at once."""
        self._events.append(event)
        self._count()
        self.start()

    def start(self) -> None:
        """Start the drainer unless it runs (from workflow code, not from ``@workflow.init``)."""
        if self._drainer is None and self._events:
            self._drainer = asyncio.create_task(self._drain())

    async def drained(self) -> None:
        """Wait until every queued event is published; nothing may be added after this."""
        self._closing = True
        self.start()
        drainer = self._drainer
        if drainer is not None:
            # Waited for, not awaited: a cancelled workflow must not cancel the drainer with it.
            await workflow.wait_condition(drainer.done)
            drainer.result()

    async def _drain(self) -> None:
        while True:
            await workflow.wait_condition(self._ready)
            if not self._events:
                return  # closing, and everything is out
            sent = await workflow.execute_activity_method(
                TaskActivities.publish_events,
                PublishBatch(self._events[:BATCH]),
                task_queue=event_queue(workflow.info().task_queue),
                start_to_close_timeout=PUBLISH_TIMEOUT,
                retry_policy=RETRY_FOREVER,
            )
            del self._events[: sent.sent]
            self._status.events_dropped += sent.refused
            self._count()

    def _ready(self) -> bool:
        return bool(self._events) or self._closing

    def _count(self) -> None:
        self._status.events_pending = len(self._events)
