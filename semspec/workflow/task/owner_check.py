"""The worker's own check that a task belongs to the stack it serves (ADR 0004).

A workflow a client started verifies its start signature against the key in its input
(``check_start``, called from workflow code), which proves only that whoever started it holds
that key. Another user with access to Temporal could start a task
on our task queue signed with a key of their own, or start it as the child of a workflow they
run. The worker knows the one key it serves and refuses, before any workspace, agent or gate
work, every task whose input names another.
"""

from __future__ import annotations

from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError

from semspec.core.owner_key import verify
from semspec.workflow.task.messages import OwnerCheckInput, SignedInput, start_fields

FOREIGN_OWNER = "ForeignOwner"
"""Error type of a task that another key signed."""
UNSIGNED_START = "UnsignedStart"
"""Error type of a task or plan whose start the owner did not sign."""


def check_start(inp: SignedInput, purpose: str, what: str, command: str) -> None:
    """In workflow code: fail the workflow at once (non-retryable) when a client started it
    without the owner's signature over ``inp``; a child's parent is set by Temporal."""
    info = workflow.info()
    if info.parent is not None or verify(
        inp.owner_key, inp.start_signature, purpose, start_fields(info.workflow_id, inp)
    ):
        return
    how = "wrong" if inp.start_signature else "missing"
    raise ApplicationError(
        f"{what} refused: its start signature is {how}; only the stack's owner starts it "
        f"(`{command}` signs with the owner key)",
        type=UNSIGNED_START,
        non_retryable=True,
    )


class OwnerCheck:
    """The ``check_owner`` activity over the public key of the stack this worker serves."""

    def __init__(self, owner_key: str) -> None:
        if not owner_key:
            raise ValueError("a worker needs the public key of the stack's owner")
        self._owner_key = owner_key

    @activity.defn(name="task.check_owner")
    async def check_owner(self, inp: OwnerCheckInput) -> None:
        """Raise a non-retryable error unless ``inp`` names this stack's owner key."""
        if inp.owner_key != self._owner_key:
            activity.logger.warning("task of another owner refused: %s", inp.task_id)
            raise ApplicationError(
                f"task {inp.task_id} was not started by this stack's owner; the worker refuses it",
                type=FOREIGN_OWNER,
                non_retryable=True,
            )
