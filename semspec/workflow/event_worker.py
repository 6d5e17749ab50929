"""The worker's second half: the loop's event publishing, on a queue of its own.

A Temporal worker shares one pool of activity slots among all its activities, so publishing
an event waited behind gates and agents once they filled the pool (issue 26). Each worker
process therefore runs a second ``Worker`` on ``event_queue(task_queue)`` (same client, same
process, same interceptors) that takes only the publishing activities, with its own slots.
``TaskWorkers`` starts and stops the two together, so ``async with build_worker(...)`` runs both.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Self

from temporalio.client import Client
from temporalio.worker import Interceptor, Worker

from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.loop.event_queue import EVENT_SLOTS, event_queue


def build_event_worker(
    client: Client,
    task_queue: str,
    activities: TaskActivities,
    identity: str | None,
    interceptors: Sequence[Interceptor],
) -> Worker:
    """The worker of ``event_queue(task_queue)``: the publishing activities, nothing else."""
    return Worker(
        client,
        task_queue=event_queue(task_queue),
        identity=identity,
        activities=[activities.publish_events],
        max_concurrent_activities=EVENT_SLOTS,
        interceptors=interceptors,
    )


class TaskWorkers:
    """The loop's worker and its event worker, run as one (``async with``)."""

    def __init__(self, loop: Worker, events: Worker) -> None:
        self.loop = loop
        self.events = events
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            # Events first: a run the loop worker starts may publish at once.
            await stack.enter_async_context(self.events)
            await stack.enter_async_context(self.loop)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            # The loop worker stops first (its last runs may still publish), then the events.
            await stack.__aexit__(exc_type, exc, tb)
