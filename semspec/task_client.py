"""Talk to running task workflows: submit, status, list, cancel, resolve escalations."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from semspec.errors import InputError, NotFoundError, SemspecError
from workflow.task.shared import (
    QUERY_STATUS,
    UPDATE_RESOLVE,
    Resolution,
    ResolutionAck,
    TaskInput,
    TaskResult,
    TaskStatus,
    workflow_id_for,
)
from workflow.task.workflows import TaskWorkflow

QUERY_TIMEOUT_S = 10.0


@dataclass
class TaskSummary:
    """One row of ``semspec task list``."""

    task_id: str
    state: str
    title: str
    phase: str
    iteration: int
    started: str


async def submit(client: Client, task_queue: str, inp: TaskInput) -> WorkflowHandle[Any, Any]:
    """Start the task's workflow; a task id that is already running is an input error."""
    from temporalio.exceptions import WorkflowAlreadyStartedError

    try:
        return await client.start_workflow(
            TaskWorkflow.run,
            inp,
            id=workflow_id_for(inp.spec.task_id),
            task_queue=task_queue,
        )
    except WorkflowAlreadyStartedError:
        raise InputError(
            f"task {inp.spec.task_id!r} already exists",
            hint="pick another --id, or see it with `semspec task status`",
        ) from None


def _handle(client: Client, task_id: str) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(workflow_id_for(task_id))


async def describe_state(client: Client, task_id: str) -> str:
    """Temporal's execution status in lower case (running, completed, failed, ...)."""
    try:
        desc = await _handle(client, task_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise NotFoundError(
                "task", task_id, hint="list tasks with `semspec task list`"
            ) from None
        raise
    status = desc.status or WorkflowExecutionStatus.RUNNING
    return status.name.lower()


async def task_status(client: Client, task_id: str) -> TaskStatus:
    """Current status: by query while running, from the result once closed."""
    state = await describe_state(client, task_id)
    handle = _handle(client, task_id)
    if state == "completed":
        typed = client.get_workflow_handle_for(TaskWorkflow.run, workflow_id_for(task_id))
        result: TaskResult = await typed.result()
        return result.status
    if state != "running":
        status = TaskStatus(task_id, "", state, 0, 0, 0, outcome=state)
        try:
            await handle.result()
        except WorkflowFailureError as err:
            status.reason = str(err.cause) if err.cause else str(err)
        except Exception as err:
            status.reason = str(err)
        return status
    try:
        return await asyncio.wait_for(
            handle.query(QUERY_STATUS, result_type=TaskStatus), QUERY_TIMEOUT_S
        )
    except TimeoutError:
        raise SemspecError(
            f"task {task_id} did not answer within {QUERY_TIMEOUT_S:.0f}s",
            hint="is a worker running? start one with `semspec up` or `semspec worker`",
        ) from None


async def list_tasks(
    client: Client, state: str | None = None, limit: int = 200
) -> list[TaskSummary]:
    """Task workflows, newest first; running ones report their phase (e.g. escalated)."""
    rows = []
    async for wf in client.list_workflows("WorkflowType = 'TaskWorkflow'", limit=limit):
        task_id = wf.id.removeprefix("task-")
        wf_state = (wf.status or WorkflowExecutionStatus.RUNNING).name.lower()
        phase, iteration, title = wf_state, 0, ""
        if wf_state in ("running", "completed"):
            try:
                status = await asyncio.wait_for(task_status(client, task_id), QUERY_TIMEOUT_S)
                phase, iteration, title = status.phase, status.iteration, status.title
                if wf_state == "completed":
                    phase = status.outcome or phase
            except (SemspecError, TimeoutError):
                phase = "unknown"
        shown = "escalated" if phase == "escalated" else wf_state
        if state and state not in (shown, wf_state, phase):
            continue
        started = wf.start_time.isoformat(timespec="seconds") if wf.start_time else ""
        rows.append(TaskSummary(task_id, shown, title, phase, iteration, started))
    return rows


async def cancel(client: Client, task_id: str) -> None:
    """Request cancellation; the workflow records it and stops at once."""
    state = await describe_state(client, task_id)
    if state != "running":
        raise InputError(f"task {task_id} is not running (it is {state})")
    await _handle(client, task_id).cancel()


async def resolve(client: Client, task_id: str, resolution: Resolution) -> ResolutionAck:
    """Answer a pending escalation; the workflow validates the answer."""
    state = await describe_state(client, task_id)
    if state != "running":
        raise InputError(f"task {task_id} is not escalated (it is {state})")
    try:
        ack: ResolutionAck = await _handle(client, task_id).execute_update(
            UPDATE_RESOLVE, resolution, result_type=ResolutionAck
        )
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        message = getattr(cause, "message", None) or str(cause or err)
        raise InputError(message, hint=f"see `semspec task status {task_id}`") from None
    return ack


async def wait_result(client: Client, task_id: str) -> TaskResult:
    """Block until the task's workflow closes."""
    typed = client.get_workflow_handle_for(TaskWorkflow.run, workflow_id_for(task_id))
    result: TaskResult = await typed.result()
    return result
