"""The workflow's half of signing a child or continued run (ADR 0004).

Workflow code cannot hold the owner's private key, so before it starts a run it asks the
``task.sign_start`` activity (``semspec.workflow.signing.child_signer``, on a worker that loaded
the key) to sign that run's input. This module holds only what workflow code needs: the
activity's name, its input and result, and the call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from temporalio import workflow

from semspec.workflow.task.loop.calls import SHORT_TIMEOUT, retry_policy
from semspec.workflow.task.messages import TaskInput

SIGN_START_ACTIVITY = "task.sign_start"
UNSIGNABLE_CHILD = "UnsignableChild"
"""Error type of a child input the worker will not sign."""


@dataclass(frozen=True)
class SignStartInput:
    """A run a workflow is about to start: its workflow id and its input (unsigned)."""

    workflow_id: str
    task: TaskInput


@dataclass(frozen=True)
class SignedStart:
    """The owner key and start signature to put into the child's input."""

    owner_key: str
    start_signature: str


async def signed_child(workflow_id: str, task: TaskInput, attempts: int) -> TaskInput:
    """In workflow code: ``task`` with the owner key and the start signature the worker made
    for it to start as ``workflow_id``."""
    signed = await workflow.execute_activity(
        SIGN_START_ACTIVITY,
        SignStartInput(workflow_id, task),
        result_type=SignedStart,
        start_to_close_timeout=SHORT_TIMEOUT,
        retry_policy=retry_policy(attempts),
    )
    return replace(task, owner_key=signed.owner_key, start_signature=signed.start_signature)
