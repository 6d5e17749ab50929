"""LandWorkflow: check the owner's signature, then run one land activity and return its result.

All work, gates included, happens in the ``land.run`` activity, which the worker's start guard
runs only for a run whose input the owner signed (``signing.start_guard``).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from semspec.workflow.land.land_memo import LAND_MEMO, land_state_of
    from semspec.workflow.land.landing import LandResult
    from semspec.workflow.land.messages import LAND_ACTIVITY, LAND_START, LAND_WORKFLOW, LandInput
    from semspec.workflow.task.owner_check import check_start

# A land is safe to retry: the base ref moves only by compare-and-swap, and a task already on
# the base is reported as landed.
LAND_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=2))
LAND_MEMO_PATCH = "land-memo"
"""Runs recorded before the land memo existed replay without it (ADR 0007)."""


@workflow.defn(name=LAND_WORKFLOW)
class LandWorkflow:
    """Lands one approved task on its base branch."""

    @workflow.run
    async def run(self, inp: LandInput) -> LandResult:
        check_start(inp, LAND_START, f"land of {inp.task_id}", "semspec task land")
        result: LandResult = await workflow.execute_activity(
            LAND_ACTIVITY,
            inp,
            result_type=LandResult,
            start_to_close_timeout=timedelta(hours=2),
            heartbeat_timeout=timedelta(minutes=2),
            retry_policy=LAND_RETRY,
        )
        if workflow.patched(LAND_MEMO_PATCH):
            # Lists read where each task's land ended from visibility (land_memo.py).
            workflow.upsert_memo({LAND_MEMO: land_state_of(result)})
        return result
