"""The owner key of the tests that run a worker in-process (ADR 0004).

Those workers serve ``OWNER``; the helpers here sign what the owner's CLI would: a task's start,
an answer to the pending escalation, a risk signal for one task. Stacks started with
``running_stack`` have their own key in their run folder, used by their CLI.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from temporalio.client import WorkflowHandle

from semspec.core.owner_key import OwnerKey
from semspec.vocabulary.events import RISK_SIGNAL, RiskSignalInput
from semspec.vocabulary.workflow_names import (
    QUERY_STATUS,
    UPDATE_RESOLVE,
    task_id_of,
    task_workflow_id,
)
from semspec.workflow.task.messages import (
    TASK_START,
    Resolution,
    ResolutionAck,
    TaskInput,
    TaskStatus,
    signed_start,
)

OWNER = OwnerKey.generate()
OWNER_KEY = OWNER.public_key


def signed(inp: TaskInput, owner: OwnerKey = OWNER) -> TaskInput:
    """``inp`` signed to start as ``task-<id>``."""
    return signed_start(owner, TASK_START, task_workflow_id(inp.spec.task_id), inp)


async def answer(
    handle: WorkflowHandle[Any, Any], resolution: Resolution, owner: OwnerKey = OWNER
) -> ResolutionAck:
    """Answer the task's pending escalation as its owner does."""
    status: TaskStatus = await handle.query(QUERY_STATUS, result_type=TaskStatus)
    assert status.pending_escalation is not None, f"{status.task_id} is not escalated"
    ack: ResolutionAck = await handle.execute_update(
        UPDATE_RESOLVE,
        resolution.signed_by(owner, status.pending_escalation),
        result_type=ResolutionAck,
    )
    return ack


def signal_for(
    task_id: str, kind: str, signal: RiskSignalInput, owner: OwnerKey = OWNER
) -> RiskSignalInput:
    """``signal`` signed, as the monitor's bridge does, for ``kind`` on ``task_id``."""
    return replace(signal, signature=owner.sign(RISK_SIGNAL, signal.signed_fields(kind, task_id)))


async def send(handle: WorkflowHandle[Any, Any], kind: str, signal: RiskSignalInput) -> None:
    """Send risk signal ``kind`` to the task of ``handle``, signed as the monitor signs it."""
    await handle.signal(kind, signal_for(task_id_of(handle.id), kind, signal))
