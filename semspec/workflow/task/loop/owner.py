"""The first step of every run: is this the stack owner's task (ADR 0004, issue 25)?

Every run carries the owner's start signature: the CLI signs what it starts, the worker signs
the subtasks, plan tasks and continued runs our workflows start. The run verifies it
(``check_start``), then asks the worker to check it against the one key it serves
(``OwnerCheck.check_owner``), before any workspace, agent or gate work. Call only from the
workflow.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from semspec.workflow.task.loop.calls import ActivityCalls, message_of, was_cancelled
from semspec.workflow.task.messages import TASK_START, OwnerCheckInput, TaskInput, start_fields
from semspec.workflow.task.owner_check import FOREIGN_OWNER, OwnerCheck, check_start


async def check_owner(inp: TaskInput, calls: ActivityCalls) -> None:
    """Fail the run at once, non-retryable, unless the stack's owner started it."""
    check_start(inp, TASK_START, f"task {inp.spec.task_id}", "semspec task submit")
    start = start_fields(workflow.info().workflow_id, inp)
    check = OwnerCheckInput(inp.spec.task_id, inp.owner_key, TASK_START, start, inp.start_signature)
    try:
        await calls.start(OwnerCheck.check_owner, check)
    except ActivityError as err:
        if was_cancelled(err):
            raise asyncio.CancelledError() from err
        raise ApplicationError(message_of(err), type=FOREIGN_OWNER, non_retryable=True) from err
