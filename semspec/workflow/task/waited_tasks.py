"""Whether a task another one waits for is out of the way: finished, and landed if approved.

A task whose declared files overlap those of a task submitted before it waits until that task's
workflow has closed and either ended without approval (aborted, failed, cancelled, refused) or
had its approved commit reach the base branch (``git/landed.py``: however it landed). Asked of
Temporal by id (``describe``, strongly consistent, unlike visibility's lists, which lag) and of
git; shared by the waiting activity (``wait_activity``) and the submit's claims
(``semspec/client/task_claims.py``), so both judge alike.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from semspec.core.errors import SemspecError
from semspec.vocabulary.workflow_names import QUERY_STATUS, plan_workflow_id, task_workflow_id
from semspec.workflow.git.landed import is_landed
from semspec.workflow.task.messages import TaskResult

PLAN_TASK_WAITING = "waiting"
"""A plan task's state before its plan starts it (``semspec/workflow/plan/messages.py``)."""


@dataclass(frozen=True)
class WaitedState:
    """Where a waited-for task is: ``done`` when it no longer holds anyone back."""

    task_id: str
    done: bool
    note: str
    """How it ended (``landed``, ``ended aborted``...) or why it still holds (``running``,
    ``approved, not landed yet``)."""
    closed: bool = True
    """Whether its workflow has ended (or never will run); False while it runs or its plan
    has yet to start it."""


async def waited_state(
    client: Client, task_id: str, repo: Path, base_branch: str, plan_id: str = ""
) -> WaitedState:
    """The state of ``task_id`` for a task on ``base_branch`` of ``repo`` that waits for it.

    A task of the plan ``plan_id`` that has not started yet (its plan runs it after its own
    dependencies) holds too; one its plan skipped does not. A question Temporal or git cannot
    answer now (a server restarting) is not an answer: the task still holds, and the caller
    asks again later.
    """
    handle = client.get_workflow_handle(task_workflow_id(task_id), result_type=TaskResult)
    try:
        described = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return await _not_started(client, task_id, plan_id)
        return WaitedState(task_id, False, f"cannot ask Temporal: {err.message}", closed=False)
    status = described.status
    if status in (None, WorkflowExecutionStatus.RUNNING):
        return WaitedState(task_id, False, "running", closed=False)
    if status != WorkflowExecutionStatus.COMPLETED:
        return WaitedState(task_id, True, f"ended {status.name.lower()}")
    try:
        result: TaskResult = await handle.result()
    except Exception as err:  # a completed run whose result cannot be read says nothing yet
        return WaitedState(task_id, False, f"cannot read its result: {err}")
    if result.outcome != "approved":
        return WaitedState(task_id, True, f"ended {result.outcome}")
    if not result.commit_id:
        return WaitedState(task_id, True, "approved with no commit")
    try:
        landed = await asyncio.to_thread(is_landed, repo, result.commit_id, base_branch)
    except SemspecError as err:
        return WaitedState(task_id, False, f"cannot check the base branch: {err}")
    if landed:
        return WaitedState(task_id, True, f"landed on {base_branch}")
    return WaitedState(task_id, False, "approved, not landed yet")


async def _not_started(client: Client, task_id: str, plan_id: str) -> WaitedState:
    """A task Temporal does not know: one its plan will still start holds, any other does not."""
    if not plan_id:
        return WaitedState(task_id, True, "unknown to Temporal")
    handle = client.get_workflow_handle(plan_workflow_id(plan_id))
    try:
        described = await handle.describe()
        if described.status not in (None, WorkflowExecutionStatus.RUNNING):
            return WaitedState(task_id, True, f"not started by plan {plan_id}")
        # Read as plain JSON: the plan's types live above this package (tests/project).
        status = await handle.query(QUERY_STATUS)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return WaitedState(task_id, True, "unknown to Temporal")
        return WaitedState(task_id, False, f"cannot ask Temporal: {err.message}", closed=False)
    except Exception as err:  # the plan cannot answer now (no worker yet): ask again later
        return WaitedState(task_id, False, f"cannot ask plan {plan_id}: {err}", closed=False)
    rows = status.get("tasks") if isinstance(status, dict) else None
    row = next((r for r in rows or [] if isinstance(r, dict) and r.get("task_id") == task_id), {})
    if row.get("state") == PLAN_TASK_WAITING:
        return WaitedState(task_id, False, f"not started yet by plan {plan_id}", closed=False)
    if row.get("state") == "running":
        return WaitedState(task_id, False, "starting", closed=False)
    return WaitedState(task_id, True, f"not run by plan {plan_id}")
