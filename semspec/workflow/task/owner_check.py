"""The owner's start signature, checked by the workflow and by the worker (ADR 0004).

Every run of a task or plan, child and continued runs included, verifies the owner's signature
over its workflow id and whole input (``check_start``, called from workflow code). A child's
parent being set proves nothing: any client that reaches Temporal may start our workflows as
children of a workflow of its own (issue 25). Children and continued runs that our own
workflows start are signed by the worker (``child_start`` asks,
``semspec.workflow.signing.child_signer`` signs).

The signature proves only that whoever started the run holds the key its input names, so the
worker, which knows the one key it serves, checks it again (``check_owner``) before any
workspace, agent or gate work; and its ``StartGuard`` refuses every activity of a run whose
start does not verify.
"""

from __future__ import annotations

from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError

from semspec.core.owner_key import verify
from semspec.workflow.task.messages import TASK_START, OwnerCheckInput, SignedInput, start_fields

FOREIGN_OWNER = "ForeignOwner"
"""Error type of a task that another key signed."""
UNSIGNED_START = "UnsignedStart"
"""Error type of a task or plan whose start the owner did not sign."""


def check_start(inp: SignedInput, purpose: str, what: str, command: str) -> None:
    """In workflow code: fail the workflow at once (non-retryable) unless ``inp`` carries the
    owner's signature over it, whoever started the run (a parent proves nothing, issue 25)."""
    info = workflow.info()
    if verify(inp.owner_key, inp.start_signature, purpose, start_fields(info.workflow_id, inp)):
        return
    how = "wrong" if inp.start_signature else "missing"
    # The worker's log keeps the refusal (a replay does not log it again).
    workflow.logger.warning("%s refused: start signature %s", what, how)
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
        """Raise a non-retryable error unless ``inp`` names this stack's owner key and carries
        its signature over the run's start (a key name alone is in every history)."""
        signed = verify(self._owner_key, inp.signature, inp.purpose or TASK_START, inp.start)
        if inp.owner_key != self._owner_key or not signed:
            activity.logger.warning("task of another owner refused: %s", inp.task_id)
            raise ApplicationError(
                f"task {inp.task_id} was not started by this stack's owner; the worker refuses it",
                type=FOREIGN_OWNER,
                non_retryable=True,
            )
