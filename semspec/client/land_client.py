"""Start a signed land of an approved task and wait for its result (docs/landing.md).

The land runs gates, so it runs on the stack's worker like a task: the CLI signs its whole
input, gates included, with the owner's key (ADR 0004), and the worker runs it only then.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

from semspec.client.task_client import task_status
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import InputError
from semspec.core.owner_key import OwnerKey
from semspec.core.run_folder import run_dir_of
from semspec.workflow.gates.presets import resolve_gates

if TYPE_CHECKING:
    from semspec.workflow.land.landing import LandResult
    from semspec.workflow.land.messages import LandInput
    from semspec.workflow.task.messages import TaskStatus


async def land_input(
    client: Client,
    config: SemspecConfig,
    repo: Path,
    task_id: str,
    *,
    strategy: str,
    push_remote: str,
) -> LandInput:
    """What a land of ``task_id`` does; an InputError unless the task was approved."""
    from semspec.workflow.land.messages import LandInput

    status = await task_status(client, task_id)
    if status.outcome != "approved" or not status.commit_id:
        state = status.outcome or status.phase
        hint = f"see `semspec task status {task_id}`"
        if status.commit_id:
            # An aborted land escalation keeps the approved commit on the branch (docs/landing.md).
            hint += (
                f"; its commit stays on semspec/task/{task_id}: merge it by hand, or"
                f" `semspec task export {task_id}` writes it as patches"
            )
        raise InputError(
            f"task {task_id} is not approved ({state}); only approved work lands", hint=hint
        )
    gates = [spec for spec in resolve_gates(config.gates) if spec.required]
    return LandInput(
        task_id=task_id,
        repo_path=str(repo.resolve()),
        base_branch=config.project.base_branch,
        run_dir=str(run_dir_of(config, repo).resolve()),
        strategy=strategy,
        gates=gates,
        max_output_bytes=config.gates.max_output_bytes,
        push_remote=push_remote,
    )


async def land(client: Client, task_queue: str, inp: LandInput, owner: OwnerKey) -> LandResult:
    """Start (or join, when one is running) the signed land of the task and wait for it."""
    handle = await start_land(client, task_queue, inp, owner)
    result: LandResult = await handle.result()
    return result


async def start_land(
    client: Client, task_queue: str, inp: LandInput, owner: OwnerKey
) -> WorkflowHandle[Any, LandResult]:
    """Start (or join, when one is running) the signed land of the task; its handle."""
    from semspec.workflow.land.landing import LandResult
    from semspec.workflow.land.messages import LAND_START, LAND_WORKFLOW, land_workflow_id
    from semspec.workflow.task.messages import signed_start

    workflow_id = land_workflow_id(inp.task_id)
    return await client.start_workflow(
        LAND_WORKFLOW,
        signed_start(owner, LAND_START, workflow_id, inp),
        id=workflow_id,
        task_queue=task_queue,
        result_type=LandResult,
        # A land that failed may be tried again; a running one is joined, not doubled.
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )


async def land_state(client: Client, task_id: str, outcome: str | None) -> dict[str, str] | None:
    """Where an approved task is on its way to the base: ``approved`` (no land yet), ``queued``
    (a land runs or waits for its base's queue), ``landed`` with the commit, or ``land failed``
    with why. None for a task that was not approved."""
    from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
    from temporalio.service import RPCError, RPCStatusCode

    from semspec.workflow.land.land_memo import NOT_FINISHED, land_state_of
    from semspec.workflow.land.landing import LandResult
    from semspec.workflow.land.messages import land_workflow_id

    if outcome != "approved":
        return None
    handle = client.get_workflow_handle(land_workflow_id(task_id), result_type=LandResult)
    try:
        described = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return {"state": "approved"}
        raise
    if described.status == WorkflowExecutionStatus.RUNNING:
        return {"state": "queued"}
    if described.status != WorkflowExecutionStatus.COMPLETED:
        return {"state": "land failed", "reason": NOT_FINISHED}
    try:
        result = await handle.result()
    except WorkflowFailureError as failed:
        return {"state": "land failed", "reason": str(failed.cause)}
    return land_state_of(result)


async def unlanded_blockers(client: Client, status: TaskStatus) -> list[str]:
    """The tasks a waiting task waits on that are approved and not landed: they move only when
    someone lands them (``semspec task land``); empty when the task does not wait."""
    if not status.waiting_on or status.outcome:
        return []
    blockers = []
    for task_id in status.waiting_on:
        other = await task_status(client, task_id)
        land = other.land or await land_state(client, task_id, other.outcome)
        if land is not None and land.get("state") in ("approved", "land failed"):
            blockers.append(task_id)
    return blockers
