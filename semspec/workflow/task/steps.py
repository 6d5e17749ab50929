"""The loop's long steps (developer, gates, reviewer): activities a halt or pause may stop.

``StepRunner.run`` starts a step's activity and waits for whichever comes first: the result, or
the risk monitor's request to stop. On a stop it cancels the activity and waits until the
activity has stopped (the gate's process group is gone, the agent's LLM call abandoned) before
the workflow asks a human or takes a checkpoint.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError
from temporalio.workflow import ActivityCancellationType, ActivityHandle

from semspec.workflow.task.calls import ActivityCalls

# Runs started before steps could be interrupted replay without it (signals wait for the next
# safe point there, and a cancelled workflow does not wait for its activity to stop).
PATCH_INTERRUPT = "interrupt-running-step"

P = TypeVar("P")
T = TypeVar("T")
StepMethod = Callable[[Any, P], Awaitable[T]]
"""A ``TaskActivities`` method that runs one step."""


@dataclass(frozen=True)
class Stopped:
    """The step did not finish: a halt or pause stopped it, before or after it ``started``."""

    started: bool


class StepRunner:
    """Runs steps for one workflow run; call only from the workflow."""

    def __init__(self, calls: ActivityCalls, stop_requested: Callable[[], bool]) -> None:
        self._calls = calls
        self._stop_requested = stop_requested
        self._interruptible: bool | None = None

    async def run(self, method: StepMethod[P, T], arg: P, timeout: timedelta) -> T | Stopped:
        """The step's result, or ``Stopped`` when a halt or pause (already pending, or arriving
        while it runs) stopped it."""

        def start(cancellation: ActivityCancellationType) -> ActivityHandle[T]:
            return self._calls.start(
                method, arg, timeout, heartbeat=True, cancellation=cancellation
            )

        if self._interruptible is None:
            self._interruptible = workflow.patched(PATCH_INTERRUPT)
        if not self._interruptible:
            return await start(ActivityCancellationType.TRY_CANCEL)
        if self._stop_requested():
            return Stopped(started=False)
        handle = start(ActivityCancellationType.WAIT_CANCELLATION_COMPLETED)
        try:
            await workflow.wait_condition(lambda: handle.done() or self._stop_requested())
        except asyncio.CancelledError:
            # The task itself was cancelled: stop the step before the workflow ends.
            handle.cancel()
            await asyncio.gather(handle, return_exceptions=True)
            raise
        if handle.done():
            return await handle
        handle.cancel()
        try:
            return await handle  # it finished before the cancellation reached it
        except ActivityError:
            return Stopped(started=True)  # cancelled (or failed on the way out)
