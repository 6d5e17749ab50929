"""A workflow that runs N no-op activities in a row: the floor ``loop_overhead.py`` compares to.

In its own module so Temporal's sandbox can re-import it; not a benchmark itself. The activity
options match the task loop's (start-to-close timeout and retry policy), so the only difference
left is the work done inside the activities and the workflow's own logic.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy


@activity.defn(name="bench.noop")
async def noop(step: int) -> int:
    """Does nothing; returns its input so a result crosses the wire as the loop's do."""
    return step


@workflow.defn(name="BenchActivityFloor")
class ActivityFloorWorkflow:
    """Runs ``count`` no-op activities one after another."""

    @workflow.run
    async def run(self, count: int) -> int:
        for step in range(count):
            await workflow.execute_activity(
                noop,
                step,
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(maximum_attempts=3),
            )
        return count
