"""Talk to plan workflows: submit a plan and read its status with each running task's phase
and cost so far (from the tasks' memos in Temporal's visibility)."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from semspec.client.task_claims import start_plan_claimed
from semspec.client.task_client import running_listings
from semspec.core.errors import InputError, NotFoundError, SemspecError
from semspec.core.owner_key import OwnerKey
from semspec.vocabulary.workflow_names import QUERY_STATUS, plan_workflow_id
from semspec.workflow.plan.messages import RUNNING, PlanInput, PlanResult, PlanStatus
from semspec.workflow.plan.workflows import PlanWorkflow
from semspec.workflow.task.messages import PLAN_START, signed_start

QUERY_TIMEOUT_S = 10.0


async def submit_plan(
    client: Client, task_queue: str, inp: PlanInput, owner: OwnerKey
) -> WorkflowHandle[Any, Any]:
    """Start the plan's workflow, signed by ``owner``; a plan id that is running or already ran
    is an input error.

    A plan runs once: starting it again would run its tasks (and their commits) a second time.
    """
    workflow_id = plan_workflow_id(inp.plan_id)
    try:
        # Claimed: each task waits for earlier tasks on its files (task_claims).
        return await start_plan_claimed(
            client,
            inp,
            lambda claimed: client.start_workflow(
                PlanWorkflow.run,
                signed_start(owner, PLAN_START, workflow_id, claimed),
                id=workflow_id,
                task_queue=task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            ),
        )
    except WorkflowAlreadyStartedError:
        pass
    status = await plan_status(client, inp.plan_id)
    how = "is already running" if status.state == RUNNING else "already ran"
    ended = f" ({status.outcome})" if status.outcome and status.state != RUNNING else ""
    raise InputError(
        f"plan {inp.plan_id!r} {how}{ended}",
        hint=f"see it with `semspec plan status {inp.plan_id}`; to run the plan again, give it "
        "a new `id:` (and its tasks new ids)",
    )


async def plan_status(client: Client, plan_id: str) -> PlanStatus:
    """The plan's status (by query while running, from the result once done).

    Running tasks get their own phase and dollars spent so far filled in, so an escalated task
    shows as such.
    """
    handle = client.get_workflow_handle(plan_workflow_id(plan_id), result_type=PlanResult)
    try:
        desc = await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise NotFoundError(
                "plan", plan_id, hint="submit one with `semspec plan submit`"
            ) from None
        raise
    state = desc.status or WorkflowExecutionStatus.RUNNING
    if state == WorkflowExecutionStatus.COMPLETED:
        result: PlanResult = await handle.result()
        return result.status
    if state != WorkflowExecutionStatus.RUNNING:
        return PlanStatus(plan_id, "", state=state.name.lower(), outcome=state.name.lower())
    try:
        status: PlanStatus = await asyncio.wait_for(
            handle.query(QUERY_STATUS, result_type=PlanStatus), QUERY_TIMEOUT_S
        )
    except TimeoutError:
        raise SemspecError(
            f"plan {plan_id} did not answer within {QUERY_TIMEOUT_S:.0f}s",
            hint="is a worker running? start one with `semspec up` or `semspec worker`",
        ) from None
    if any(row.state == RUNNING for row in status.tasks):
        # One visibility listing of the running tasks, not a query per task (issue 31).
        listings = await running_listings(client)
        for row in status.tasks:
            if row.state != RUNNING:
                continue
            listing = listings.get(row.task_id)
            if listing is None:  # the phase is a courtesy: a task may close or not be listed yet
                row.phase = "unknown"
                continue
            row.phase, row.cost_usd = listing.phase, listing.cost_usd
            if listing.pending_escalation is not None:
                row.reason = listing.pending_escalation.get("reason")
    return status


def escalated_tasks(status: PlanStatus) -> list[str]:
    """Ids of the plan's tasks that wait for a human."""
    return [row.task_id for row in status.tasks if row.phase == "escalated"]
