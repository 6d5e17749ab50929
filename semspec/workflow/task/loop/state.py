"""The one owner of a task's progress: every change to ``TaskStatus`` goes through here.

``TaskStatus`` is what the status query shows; ``LoopState`` (``carry``) holds the counters and
bounds it does not show. ``TaskState`` holds both and changes them only in methods named for
what happened (a workspace was made, an agent turn spent tokens, an attempt failed, ...), so
each field has one writer and a reader finds it by the event. Three other concerns write their
own fields, each in one module: the pending question and its answer (``escalations``), the loop
events not yet published (``outbox``), and what a checkpoint carries into the next run
(``carry.restore``). No Temporal here but the workflow's clock for the log's times: plain
state, tested with the loop's rules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from temporalio import workflow

from semspec.agents.protocol import TurnUsage
from semspec.core.reasons import FallbackReason
from semspec.workflow.context.monitor import ContextTracker, should_checkpoint
from semspec.workflow.task.dollars import add_iteration_cost
from semspec.workflow.task.loop.bounds import Escalate, after_failure, extended
from semspec.workflow.task.loop.carry import LoopState
from semspec.workflow.task.messages import (
    BudgetOutcome,
    GatesStep,
    LogEntry,
    Phase,
    Resolution,
    ReviewStep,
    TaskInput,
    TaskResult,
    TaskStatus,
    Workspace,
)

LOG_TIME_KEY = "at"
"""The key of a log entry's ``data`` that holds when it was written (ISO 8601, UTC, to the
second); entries of tasks run before it was written have none (issue 30: a timeline with times)."""


def log_time() -> str:
    """Now by the workflow's clock, which replays alike (``workflow.now``); empty outside a
    workflow, where this plain state is tested without one."""
    if not workflow.in_workflow():
        return ""
    return workflow.now().isoformat(timespec="seconds")


class TaskState:
    """A task's status and loop state, and the only code that changes the status's progress."""

    def __init__(self, inp: TaskInput, flags: list[str]) -> None:
        spec = inp.spec
        self.loop = loop = LoopState.start(inp)
        self.status = TaskStatus(
            task_id=spec.task_id,
            title=spec.title,
            phase="starting",
            iteration=0,
            retries=0,
            max_retries=loop.max_retries,
            flags=flags,
            task_files=list(spec.task_files),
            plan_id=spec.plan_id,
            budget_usd=loop.dollars.cap_usd,
            models={
                "developer": f"{spec.developer.provider}:{spec.developer.model}",
                "reviewer": f"{spec.reviewer.provider}:{spec.reviewer.model}",
            },
        )

    # ----- progress ---------------------------------------------------------------------------

    def enter(self, phase: Phase) -> None:
        """The task is now in ``phase``."""
        self.status.phase = phase

    def log(self, kind: str, message: str, data: dict[str, Any] | None = None) -> None:
        """One line of ``semspec task logs``, stamped with the iteration and the time."""
        status = self.status
        stamped = dict(data or {})
        at = log_time()
        if at:
            stamped[LOG_TIME_KEY] = at
        status.log.append(LogEntry(status.iteration, kind, message, stamped))

    def waiting(self, task_ids: list[str]) -> None:
        """The task waits for ``task_ids``, earlier tasks on its files (``waiting``)."""
        self.status.phase = "waiting"
        self.status.waiting_on = list(task_ids)

    def budget_checked(self, budget: BudgetOutcome) -> None:
        """The pre-flight check chose the models and measured the window."""
        self.status.assignment = list(budget.assignment)
        self.loop.tracker = ContextTracker(window=budget.window)
        self.loop.base_tokens = budget.base_tokens

    def workspace_ready(self, ws: Workspace) -> None:
        """The worktree exists on the task's branch."""
        status = self.status
        status.branch, status.worktree, status.base_commit = ws.branch, ws.path, ws.base_commit

    def subtask_done(self, name: str, result: TaskResult) -> None:
        """A child task over one file group ended: its spending, iterations and commit count."""
        status = self.status
        status.usage.merge(result.status.usage)
        status.iteration_costs.extend(result.status.iteration_costs)
        status.subtasks.append(f"{name}: {result.outcome}")
        status.commit_id = result.commit_id or status.commit_id
        status.branch = result.branch or status.branch
        status.iteration += result.iterations

    def iteration_started(self) -> None:
        """A new pass of developer → gates → reviewer begins."""
        self.status.iteration += 1

    def finished(self, outcome: str, reason: str | None = None) -> None:
        """The task is over; the status query now says how."""
        status = self.status
        status.phase, status.outcome, status.reason = "done", outcome, reason

    # ----- results of the steps ---------------------------------------------------------------

    def agent_turn(self, usage: TurnUsage, stopped: str | None, model: str, tokens: int) -> None:
        """Count an agent turn: its tokens against the loop's context (a checkpoint is due at
        high pressure), its dollars against the task and its iteration."""
        status, loop = self.status, self.loop
        snapshot = status.context = loop.spend(status.iteration, tokens)
        if should_checkpoint(snapshot) and loop.checkpoint_due is None:
            loop.checkpoint_due = f"context {snapshot.pressure} at {snapshot.utilization:.0%}"
            self.log("context", f"{snapshot.pressure} pressure: checkpoint before next step")
        if stopped == "unknown_price":
            # Fail closed even if the agent did not say which model: the role's is the one.
            usage = replace(usage, unpriced=True, model=usage.model or model)
        if usage != TurnUsage():  # agents that report no usage add nothing, not an "unknown"
            status.usage.add(usage)
            add_iteration_cost(status.iteration_costs, status.iteration, usage.cost_usd)

    def gates_ran(self, gates: GatesStep) -> None:
        """The gates' results of this iteration."""
        self.status.last_gates = list(gates.results)

    def reviewed(self, review: ReviewStep) -> None:
        """The reviewer's verdict of this iteration."""
        self.status.last_verdict = review
        self.loop.last_review = review

    def committed(self, commit_id: str) -> None:
        """The approved work is a commit on the task's branch."""
        self.status.commit_id = commit_id

    def land_changed(self, land: dict[str, str]) -> None:
        """Where the approved work of a task that lands itself is on its way to the base."""
        self.status.land = dict(land)

    def started_again(self, ws: Workspace) -> None:
        """A land failed and a human asked for the work again: the task branch is back at the
        base's tip, without the approved commit, and nothing is on its way to the base."""
        self.workspace_ready(ws)
        self.status.commit_id = None
        self.status.land = None

    def failed_attempt(self, fingerprint: str, why: str) -> Escalate | None:
        """Count a failed attempt (gates or review) with its evidence; the escalation it calls
        for, or None when a retry is left."""
        status, bound = self.status, self.loop.max_retries
        retries, escalate = after_failure(
            fingerprint, status.fingerprints, status.retries, bound, why
        )
        status.fingerprints.append(fingerprint)
        status.retries = retries
        return escalate

    # ----- what humans granted ----------------------------------------------------------------

    def grant_retries(self, extra: int) -> None:
        """Raise the retry bound and the iteration cap by ``extra`` granted retries."""
        loop = self.loop
        loop.max_retries, loop.max_iterations = extended(
            loop.max_retries, loop.max_iterations, extra
        )
        self.status.max_retries = loop.max_retries

    def grant_usd(self, resolution: Resolution, reason: str, dollars: bool) -> float:
        """Add the dollars an ``extend_budget`` answer grants; the dollars added.

        Any such answer adds the ``extra_usd`` it names; one to a spent dollar budget that
        names none adds the task's budget again.
        """
        if resolution.action != "extend_budget":
            return 0.0
        budget = self.loop.dollars
        spent_budget = dollars and reason == FallbackReason.BUDGET_EXHAUSTED
        if not (resolution.extra_usd or spent_budget):
            return 0.0
        added = budget.grant(resolution.extra_usd)
        self.status.budget_usd = budget.cap_usd
        return added

    def refused(self) -> None:
        """Count an answer or signal that lacked the owner's signature."""
        self.status.refused += 1
