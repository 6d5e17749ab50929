"""The worker signs the runs its own workflows start: subtasks, plan tasks, continued runs.

Every run of a task verifies the owner's start signature over its whole input, child or not
(ADR 0004, issue 25), but workflow code cannot hold the private key: its inputs and results are
in the history anyone with Temporal access reads. So a workflow asks the ``task.sign_start``
activity, on a worker that loaded the owner's key, to sign the input of the run it is about to
start. The activity is no signing oracle: the worker's ``StartGuard`` has verified the calling
run's own signed start first, and the input to sign must derive from it: the same repository,
run folder, agents and gates as the caller (a task's continuation or one of its parts) or as one
of its tasks (a plan's), so a child never runs a gate or an agent its signed parent did not name.
"""

from __future__ import annotations

from dataclasses import replace

from temporalio import activity
from temporalio.exceptions import ApplicationError

from semspec.core.owner_key import OwnerKey
from semspec.vocabulary.workflow_names import subtask_id, task_workflow_id
from semspec.workflow.land.messages import LandInput
from semspec.workflow.plan.messages import PlanInput
from semspec.workflow.signing.start_guard import StartGuard
from semspec.workflow.task.loop.child_start import (
    SIGN_START_ACTIVITY,
    UNSIGNABLE_CHILD,
    SignedStart,
    SignStartInput,
)
from semspec.workflow.task.messages import TASK_START, TaskInput, start_fields


def derivation_problem(
    child: TaskInput, workflow_id: str, caller: TaskInput | PlanInput, caller_id: str
) -> str | None:
    """Why ``child`` (to start as ``workflow_id``) does not derive from the run ``caller``
    (running as ``caller_id``); None when it does."""
    if workflow_id != task_workflow_id(child.spec.task_id):
        return f"workflow id {workflow_id} does not name task {child.spec.task_id}"
    if isinstance(caller, PlanInput):
        parents = [t.input for t in caller.tasks if t.input.spec.task_id == child.spec.task_id]
        if not parents:
            return f"task {child.spec.task_id} is not a task of plan {caller.plan_id}"
        parent = parents[0]
    else:
        parent = caller
        own = child.spec.task_id == parent.spec.task_id and workflow_id == caller_id
        # A task is split into at most one part per file (``budget.groups``).
        parts = range(1, len(parent.spec.task_files) + 1)
        part = any(child.spec.task_id == subtask_id(parent.spec.task_id, n) for n in parts)
        if not (own or part):
            return f"task {child.spec.task_id} is neither task {parent.spec.task_id} nor a part"
        if part and not set(child.spec.task_files) <= set(parent.spec.task_files):
            return "a part names files its task does not"
    mine, theirs = child.spec, parent.spec
    for name, ours, its in (
        ("gates", child.gates, parent.gates),
        ("repository", mine.repo_path, theirs.repo_path),
        ("run folder", child.run_dir, parent.run_dir),
        ("developer", mine.developer, theirs.developer),
        ("reviewer", mine.reviewer, theirs.reviewer),
        ("base branch", mine.base_branch, theirs.base_branch),
    ):
        if ours != its:
            return f"its {name} differs from the signed parent's"
    return None


class ChildSigner:
    """The ``task.sign_start`` activity over the owner's private key."""

    def __init__(self, owner: OwnerKey, guard: StartGuard) -> None:
        self._owner = owner
        self._guard = guard

    @activity.defn(name=SIGN_START_ACTIVITY)
    async def sign_start(self, inp: SignStartInput) -> SignedStart:
        """Sign the start of a run the calling workflow derives from its own signed input."""
        caller = await self._guard.verified_start()
        caller_id = activity.info().workflow_id or ""
        problem = (
            "a land starts no runs"
            if isinstance(caller, LandInput)
            else derivation_problem(inp.task, inp.workflow_id, caller, caller_id)
        )
        if problem is not None:
            activity.logger.warning("child start not signed: %s", problem)
            raise ApplicationError(
                f"the worker will not sign {inp.workflow_id}: {problem}",
                type=UNSIGNABLE_CHILD,
                non_retryable=True,
            )
        keyed = replace(inp.task, owner_key=self._owner.public_key, start_signature="")
        signature = self._owner.sign(TASK_START, start_fields(inp.workflow_id, keyed))
        return SignedStart(self._owner.public_key, signature)
