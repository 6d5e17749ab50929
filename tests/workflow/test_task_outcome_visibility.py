"""A task's outcome becomes visible only after its end-of-task bookkeeping: whoever waits for it
(``task submit --wait``, the demo) may then read the graph or remove the repository."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from semspec.workflow.event_worker import TaskWorkers, build_event_worker
from semspec.workflow.task import context_activities
from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.index_activity import reindex_changes
from semspec.workflow.task.messages import FinalizeInput, FinalizeStep, TaskResult, TaskStatus
from semspec.workflow.task.owner_check import OwnerCheck
from semspec.workflow.task.workflows import TaskWorkflow
from semspec.workflow.worker import activity_threads
from tests.support.owner import OWNER_KEY
from tests.support.tasks import GOOD_CALC, start, task_input, wait_for_phase, write_script

APPROVE = {"verdict": "approve", "summary": "looks right"}


class HeldFinalize:
    """A same-named stand-in for ``task.finalize`` that waits until the test lets it go."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    @activity.defn(name="task.finalize")
    async def finalize(self, inp: FinalizeInput) -> FinalizeStep:
        self.started.set()
        await self.release.wait()
        return FinalizeStep(decision=None, conventions=[], checkpoints_deleted=[])


async def test_the_outcome_is_hidden_while_the_bookkeeping_runs(
    temporal_client: Client, task_queue: str, git_repo: Path, tmp_path: Path
) -> None:
    held = HeldFinalize()
    activities = TaskActivities(None)
    # The real worker's activities with finalize held, and its event worker (the loop's
    # events have a queue of their own): only the bookkeeping differs from a real run.
    loop = Worker(
        temporal_client,
        task_queue=task_queue,
        workflows=[TaskWorkflow],
        activities=[
            *activities.all(),
            context_activities.check_budget,
            context_activities.checkpoint,
            OwnerCheck(OWNER_KEY).check_owner,
            reindex_changes,
            held.finalize,
        ],
        activity_executor=activity_threads(),
    )
    worker = TaskWorkers(
        loop, build_event_worker(temporal_client, task_queue, activities, None, ())
    )
    script = write_script(
        tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}]
    )
    async with worker:
        inp = task_input(git_repo, script, f"t{uuid.uuid4().hex[:8]}")
        handle = await start(temporal_client, inp, task_queue)
        await asyncio.wait_for(held.started.wait(), 60)
        during = await wait_for_phase(handle, "finishing")
        held.release.set()
        result: TaskResult = await handle.result()

    assert (during.outcome, during.commit_id is not None) == (None, True)
    assert result.outcome == "approved"
    final: TaskStatus = result.status
    assert (final.phase, final.log[-1].kind) == ("done", "finished")
