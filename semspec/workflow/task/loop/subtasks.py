"""A task too large for one context runs as child tasks, one per file group, in order.

The budget check (``check_budget``) splits the task's files into groups; each group becomes a
child ``TaskWorkflow`` on this task's branch, started one after the other, each signed by the
worker like every run (ADR 0004). Call only from the workflow.
"""

from __future__ import annotations

from dataclasses import replace

from temporalio import workflow

from semspec.vocabulary.workflow_names import TASK_WORKFLOW, subtask_id, task_workflow_id
from semspec.workflow.task.loop.bounds import subtask_base_tokens
from semspec.workflow.task.loop.child_start import signed_child
from semspec.workflow.task.loop.outcomes import Finished
from semspec.workflow.task.loop.state import TaskState
from semspec.workflow.task.messages import BudgetOutcome, TaskInput, TaskResult


async def run_subtasks(inp: TaskInput, state: TaskState, budget: BudgetOutcome) -> Finished:
    """Run one child task per file group, in order; the first that is not approved ends it.

    Each child tracks its context in this task's window, starting from the task text and its
    own files (the parent's base without the other groups' files).
    """
    spec = inp.spec
    state.enter("subtasks")
    groups = budget.groups
    for number, files in enumerate(groups, 1):
        child = replace(
            spec,
            task_id=subtask_id(spec.task_id, number),
            title=f"{spec.title} (part {number} of {len(groups)})",
            task_files=list(files),
            workspace_id=spec.workspace_key,
        )
        state.log("subtask", f"part {number}: {', '.join(files)}")
        child_id = task_workflow_id(child.task_id)
        child_inp = replace(
            inp,
            spec=child,
            check_budget=False,
            continuation=None,
            window=state.loop.tracker.window,
            base_tokens=subtask_base_tokens(budget.base_tokens, budget.file_tokens, files),
            # The parts share this task's dollars: each may spend what the others left.
            share_usd=state.loop.dollars.turn_budget(state.status.usage.cost_usd),
        )
        child_inp = await signed_child(child_id, child_inp, inp.limits.activity_attempts)
        result = await workflow.execute_child_workflow(
            TASK_WORKFLOW, child_inp, id=child_id, result_type=TaskResult
        )
        state.subtask_done(child.task_id, result)
        if result.outcome != "approved":
            return Finished(
                result.outcome, f"part {number} ended {result.outcome}: {result.reason}"
            )
    return Finished("approved")
