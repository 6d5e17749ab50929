"""How a task's run ends: the bookkeeping, the ``finished`` event, and the result.

The outcome becomes visible in the status only once the bookkeeping is done (the approved
commit indexed, knowledge and performance recorded, checkpoint branches and the worktree
removed unless the task keeps them): whoever waits for it (``task submit --wait``, the demo)
may then read the graph or remove the repository. The run returns only once its outbox is
empty, so ``finished`` is always the task's last event.
Call only from the workflow.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from semspec.workflow.task.context_activities import finalize
from semspec.workflow.task.index_activity import ReindexInput, reindex_changes
from semspec.workflow.task.loop.calls import ActivityCalls, message_of, was_cancelled
from semspec.workflow.task.loop.outbox import Outbox
from semspec.workflow.task.loop.outcomes import Finished
from semspec.workflow.task.loop.state import TaskState
from semspec.workflow.task.messages import (
    FinalizeInput,
    FinalizeStep,
    TaskInput,
    TaskResult,
    TaskStatus,
)

FINALIZE_AT_CANCEL = "finalize-at-cancel"
"""Patch (ADR 0007): a cancelled run calls ``finalize`` too, which removes its worktree."""
REINDEX_TIMEOUT = timedelta(minutes=5)
"""Long enough for ``index_activity.MAX_PATHS`` files on a slow disk."""


async def finish(
    inp: TaskInput, state: TaskState, calls: ActivityCalls, outbox: Outbox, end: Finished
) -> TaskResult:
    """Record the outcome (knowledge, performance, cleanup), publish it, and return it."""
    status, outcome, reason = state.status, end.outcome, end.reason
    state.enter("finishing")
    if outcome == "approved" and status.commit_id and status.base_commit:
        await _reindex(inp, state, calls, status.base_commit, status.commit_id)
    review = state.loop.last_review
    step = await calls.start(
        finalize,
        FinalizeInput(
            spec=inp.spec,
            outcome=outcome,
            iterations=status.iteration,
            tokens=state.loop.tokens_spent,
            latency_s=elapsed_s(state),
            review_summary=review.summary if review else "",
            noted_patterns=list(review.noted_patterns) if review else [],
            commit_id=status.commit_id,
            reviewer=review.reviewer if review else "",
            run_dir=inp.run_dir,
        ),
    )
    log_cleanup(state, step)
    state.log("finished", f"{outcome}" + (f": {reason}" if reason else ""))
    state.finished(outcome, reason)
    fields = {"outcome": outcome, "commit": status.commit_id, "reason": reason}
    outbox.queue("finished", fields | usage_fields(status))
    await outbox.drained()
    await workflow.wait_condition(workflow.all_handlers_finished)
    return TaskResult(
        task_id=inp.spec.task_id,
        outcome=outcome,
        reason=reason,
        commit_id=status.commit_id,
        iterations=status.iteration,
        branch=status.branch,
        status=status,
    )


async def record_cancel(
    state: TaskState,
    outbox: Outbox,
    inp: TaskInput | None = None,
    calls: ActivityCalls | None = None,
) -> None:
    """Clean up (with ``inp`` and ``calls``), note the cancellation and tell the monitor the
    task is over."""
    if inp is not None and calls is not None and workflow.patched(FINALIZE_AT_CANCEL):
        await _finalize_cancelled(inp, state, calls)
    state.finished("cancelled")
    state.log("finished", "cancelled")
    fields = {"outcome": "cancelled", "commit": None, "reason": None}
    outbox.queue("finished", fields | usage_fields(state.status))
    await outbox.drained()


async def _finalize_cancelled(inp: TaskInput, state: TaskState, calls: ActivityCalls) -> None:
    """A cancelled task has ended too: its worktree and checkpoints go as after any other end
    (``finalize`` records nothing else for it). A failure is logged; the cancel goes on."""
    try:
        step = await calls.start(
            finalize,
            FinalizeInput(
                spec=inp.spec,
                outcome="cancelled",
                iterations=state.status.iteration,
                tokens=state.loop.tokens_spent,
                latency_s=elapsed_s(state),
                run_dir=inp.run_dir,
            ),
        )
    except ActivityError as err:
        state.log("cleanup", f"not cleaned up: {message_of(err)}")
        return
    log_cleanup(state, step)


def log_cleanup(state: TaskState, step: FinalizeStep) -> None:
    """Say in the task log what ``finalize`` removed (docs/landing.md, "Clean up")."""
    if step.checkpoints_deleted:
        state.log("cleanup", f"deleted {len(step.checkpoints_deleted)} checkpoint branch(es)")
    if step.worktree_removed:
        state.log("cleanup", f"removed the worktree {step.worktree_removed}")


def usage_fields(status: TaskStatus) -> dict[str, Any]:
    """What the task spent, for its ``finished`` event."""
    usage = status.usage
    return {
        "cost_usd": round(usage.cost_usd, 6),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens,
        "unpriced_models": sorted(usage.unpriced_models),
    }


def elapsed_s(state: TaskState) -> float:
    """Seconds since the task started, over every run."""
    run = (workflow.now() - workflow.info().start_time).total_seconds()
    return state.loop.elapsed_before + run


async def _reindex(
    inp: TaskInput, state: TaskState, calls: ActivityCalls, base_commit: str, commit_id: str
) -> None:
    """Bring the code graph up to the approved commit; a failure is logged, never fatal."""
    try:
        step = await calls.start(
            reindex_changes,
            ReindexInput(inp.spec.repo_path, base_commit, commit_id),
            REINDEX_TIMEOUT,
        )
    except ActivityError as err:
        if was_cancelled(err):
            raise asyncio.CancelledError() from err
        state.log("index", f"code graph not updated: {message_of(err)}")
        return
    counts = {"indexed": step.indexed, "removed": step.removed, "failed": step.failed}
    left = f", {step.left_over} more left for `semspec index`" if step.left_over else ""
    state.log(
        "index",
        f"code graph updated: {len(step.indexed)} indexed, {len(step.removed)} removed, "
        f"{len(step.failed)} failed{left}",
        counts,
    )
