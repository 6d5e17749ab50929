"""``PlanWorkflow``: runs a plan's tasks as child ``TaskWorkflow``s in dependency order.

A task starts once every task it depends on was approved, on a branch that starts from their
approved commits (merged when there are several), or, for dependencies that landed themselves
(``land: auto``), from the base branch's commit they landed as; tasks whose dependencies are
all approved run in parallel. A task whose dependency ended any other way is skipped, since its
premise is gone. Children keep the ids ``task-<task_id>``, so the task CLI, the risk monitor
and its signal bridge address them exactly like tasks submitted on their own.

A plan with a dollar budget (``max_cost_usd``) hands each task a share when it starts: what the
plan has neither spent (finished tasks) nor handed to running tasks, split evenly among the tasks
starting at that moment. Shares of running tasks never add up to more than the budget, and each
task stops at the step that spends its share, so the plan overshoots by at most one step per
task. The plan sums its finished tasks' usage (status and the Temporal memo).

Only the stack's owner starts a plan (ADR 0004): the plan verifies its start signature first,
child or not, and the worker signs each task's start with the owner's key before the plan
starts it (``task.loop.child_start`` asks, ``signing.child_signer`` signs), so each task verifies
its own start like a task the CLI submitted.

Deterministic: no I/O here; every side effect happens inside the child workflows.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from temporalio import workflow
from temporalio.exceptions import ActivityError, ChildWorkflowError, WorkflowAlreadyStartedError
from temporalio.exceptions import CancelledError as TemporalCancelledError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    # Raised from cryptography's Rust code, which imports it by name when a signature does not
    # verify: it must be in the sandbox already, or that import aborts the worker.
    import cryptography.exceptions  # noqa: F401

    from semspec.vocabulary.workflow_names import PLAN_WORKFLOW, QUERY_STATUS, task_workflow_id
    from semspec.workflow.plan.messages import (
        APPROVED,
        CANCELLED,
        FAILED,
        FINAL_STATES,
        RUNNING,
        SKIPPED,
        WAITING,
        PlanInput,
        PlanLogEntry,
        PlanResult,
        PlanStatus,
        PlanTask,
        PlanTaskStatus,
    )
    from semspec.workflow.task.dollars import plan_share
    from semspec.workflow.task.loop.child_start import signed_child
    from semspec.workflow.task.messages import PLAN_START, TaskResult
    from semspec.workflow.task.owner_check import check_start

    # Modules whose dataclasses the plan decodes (its input's tasks, its children's results)
    # are imported by their full names, so the sandbox holds them and resolves their hints.
    from semspec.workflow.task.step_messages import ReviewStep as _ReviewStep  # noqa: F401
    from semspec.workflow.task.task_spec import TaskSpec as _TaskSpec  # noqa: F401
    from semspec.workflow.task.usage import USAGE_MEMO
    from semspec.workflow.task.workflows import TaskWorkflow


@workflow.defn(name=PLAN_WORKFLOW)
class PlanWorkflow:
    """One plan; see the module docstring."""

    @workflow.init
    def __init__(self, inp: PlanInput) -> None:
        # From the input, so the status query answers from the start.
        self._rows = {
            t.input.spec.task_id: PlanTaskStatus(
                t.input.spec.task_id, t.input.spec.title, list(t.depends_on)
            )
            for t in inp.tasks
        }
        self._status = PlanStatus(
            inp.plan_id, inp.title, tasks=list(self._rows.values()), max_cost_usd=inp.max_cost_usd
        )
        self._changed = False
        self._owner_key = inp.owner_key
        self._landed: dict[str, str] = {}
        """Task id → the base's commit its work landed as (tasks that land themselves)."""

    @workflow.run
    async def run(self, inp: PlanInput) -> PlanResult:
        what, command = f"plan {inp.plan_id}", "semspec plan submit"
        check_start(inp, PLAN_START, what, command)
        status = self._status
        children: list[asyncio.Task[None]] = []
        try:
            while True:
                ready = self._schedule(inp)
                self._share(inp, ready)
                children += [asyncio.create_task(self._run_task(t)) for t in ready]
                if all(row.state in FINAL_STATES for row in status.tasks):
                    break
                self._changed = False
                await workflow.wait_condition(lambda: self._changed)
        except asyncio.CancelledError:
            # The children are asked to cancel (they record it and publish ``finished``).
            for child in children:
                child.cancel()
            await asyncio.gather(*children, return_exceptions=True)
            raise
        approved = all(row.state == APPROVED for row in status.tasks)
        status.state, status.outcome = "done", APPROVED if approved else "incomplete"
        return PlanResult(inp.plan_id, status.outcome, status)

    def _schedule(self, inp: PlanInput) -> list[PlanTask]:
        """Skip tasks whose dependencies failed and return those now free to start."""
        ready: list[PlanTask] = []
        changed = True
        while changed:  # a skip can doom the skipped task's own dependents
            changed = False
            for task in inp.tasks:
                row = self._rows[task.input.spec.task_id]
                if row.state != WAITING:
                    continue
                deps = [self._rows[d] for d in task.depends_on]
                failed = [d for d in deps if d.state in FINAL_STATES and d.state != APPROVED]
                if failed:
                    row.state = SKIPPED
                    row.reason = f"dependency {failed[0].task_id} ended {failed[0].state}"
                    self._log("skipped", row, row.reason)
                    changed = True
                elif all(d.state == APPROVED for d in deps):
                    row.state = RUNNING
                    self._log("started", row)
                    ready.append(task)
        return ready

    def _share(self, inp: PlanInput, ready: list[PlanTask]) -> None:
        """Give each task starting now its share of what the plan's budget has free."""
        starting = [self._rows[t.input.spec.task_id] for t in ready]
        ids = {row.task_id for row in starting}
        running = [
            r.share_usd
            for r in self._status.tasks
            if r.state == RUNNING and r.share_usd is not None and r.task_id not in ids
        ]
        share = plan_share(inp.max_cost_usd, self._status.usage.cost_usd, running, len(starting))
        for row in starting:
            row.share_usd = share

    async def _run_task(self, task: PlanTask) -> None:
        row = self._rows[task.input.spec.task_id]
        # The task builds on its dependencies' approved work, not on the bare base branch;
        # on the base itself where they landed (it holds their work and everything before).
        deps = task.depends_on
        after = [c for c in (self._landed.get(d) or self._rows[d].commit_id for d in deps) if c]
        spec = replace(task.input.spec, after_commits=after)
        child = replace(task.input, spec=spec, share_usd=row.share_usd)
        child_id = task_workflow_id(row.task_id)
        # The plan's signature covered the tasks; each runs under the plan's owner.
        child = replace(child, owner_key=self._owner_key, start_signature="")
        try:
            # Signed by the worker, which checks that it is one of this signed plan's tasks.
            child = await signed_child(child_id, child, child.limits.activity_attempts)
            result: TaskResult = await workflow.execute_child_workflow(
                TaskWorkflow.run,
                child,
                id=child_id,
                parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
            )
            row.state = result.outcome if result.outcome in FINAL_STATES else FAILED
            row.reason, row.commit_id = result.reason, result.commit_id
            row.branch, row.iterations = result.branch, result.iterations
            row.cost_usd = result.status.usage.cost_usd
            if (land := result.status.land) is not None and land.get("state") == "landed":
                self._landed[row.task_id] = land.get("commit", "")
            self._status.usage.merge(result.status.usage)
            workflow.upsert_memo({USAGE_MEMO: self._status.usage.to_memo()})
        except ActivityError as err:
            if isinstance(err.cause, TemporalCancelledError):
                raise asyncio.CancelledError() from err
            row.state = FAILED
            row.reason = f"the worker did not sign its start: {err.cause or err}"
        except WorkflowAlreadyStartedError:
            row.state = FAILED
            row.reason = f"workflow {task_workflow_id(row.task_id)} already exists; rename the task"
        except ChildWorkflowError as err:
            cancelled = isinstance(err.cause, TemporalCancelledError)
            row.state = CANCELLED if cancelled else FAILED
            row.reason = str(err.cause or err)
        self._log("finished", row, row.reason or "")
        self._changed = True

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> PlanStatus:
        """Every task's state, reason and commit, and the order tasks started and ended."""
        return self._status

    def _log(self, kind: str, row: PlanTaskStatus, message: str = "") -> None:
        self._status.log.append(PlanLogEntry(kind, row.task_id, row.state, message))
