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
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.git.landed import is_landed
from semspec.workflow.task.messages import TaskResult


@dataclass(frozen=True)
class WaitedState:
    """Where a waited-for task is: ``done`` when it no longer holds anyone back."""

    task_id: str
    done: bool
    note: str
    """How it ended (``landed``, ``ended aborted``...) or why it still holds (``running``,
    ``approved, not landed yet``)."""


async def waited_state(client: Client, task_id: str, repo: Path, base_branch: str) -> WaitedState:
    """The state of ``task_id`` for a task on ``base_branch`` of ``repo`` that waits for it.

    A question Temporal or git cannot answer now (a server restarting) is not an answer: the
    task still holds, and the caller asks again later.
    """
    handle = client.get_workflow_handle(task_workflow_id(task_id), result_type=TaskResult)
    try:
        described = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return WaitedState(task_id, True, "unknown to Temporal")
        return WaitedState(task_id, False, f"cannot ask Temporal: {err.message}")
    status = described.status
    if status in (None, WorkflowExecutionStatus.RUNNING):
        return WaitedState(task_id, False, "running")
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
