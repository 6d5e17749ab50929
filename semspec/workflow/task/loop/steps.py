"""The loop's steps: developer, gates, reviewer (with its one enrichment) and the commit.

Each step runs its activity and records the result: the status, the log, the tokens the loop's
context grew by. The long steps (developer, gates, reviewer) may be stopped by the risk monitor:
``StepRunner`` starts the activity and waits for whichever comes first, the result or a halt or
pause; on a stop it cancels the activity, waits until it has stopped (the gate's process group
is gone, the agent's LLM call abandoned) and raises ``StepStopped`` for the workflow to act on.
Decisions about bounds are not made here: they are ``TaskWorkflow``'s (``bounds``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict, replace
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError
from temporalio.workflow import ActivityCancellationType, ActivityHandle

from semspec.agents.protocol import TurnUsage
from semspec.core.reasons import FallbackReason
from semspec.workflow.context.monitor import should_checkpoint
from semspec.workflow.fingerprint import evidence_fingerprint
from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.dollars import DOLLAR_STOPS, add_iteration_cost
from semspec.workflow.task.loop import bounds
from semspec.workflow.task.loop.bounds import Escalate
from semspec.workflow.task.loop.calls import ActivityCalls
from semspec.workflow.task.loop.carry import LoopState
from semspec.workflow.task.loop.risk_signals import RiskSignals
from semspec.workflow.task.messages import (
    INTERRUPTED_STOPS,
    CommitInput,
    DeveloperInput,
    DeveloperStep,
    EnrichInput,
    EventContext,
    GatesInput,
    GatesStep,
    PublishInput,
    ReviewInput,
    ReviewStep,
    TaskInput,
    TaskStatus,
    Workspace,
)
from semspec.workflow.task.usage import PLAN_MEMO, USAGE_MEMO

P = TypeVar("P")
T = TypeVar("T")
StepMethod = Callable[[Any, P], Awaitable[T]]
"""A ``TaskActivities`` method that runs one step."""


def usage_memo(status: TaskStatus) -> dict[str, Any]:
    """The task's Temporal memo: what it spent, and its plan if it has one."""
    memo: dict[str, Any] = {USAGE_MEMO: status.usage.to_memo()}
    if status.plan_id:
        memo[PLAN_MEMO] = status.plan_id
    return memo


class Log(Protocol):
    """The workflow's log: one line of ``semspec task logs``."""

    def __call__(self, kind: str, message: str, data: dict[str, Any] | None = None) -> None: ...


class StepStopped(Exception):
    """A halt or pause stopped ``step``, before or after it ``started``."""

    def __init__(self, step: str, started: bool) -> None:
        super().__init__(step)
        self.step = step
        self.started = started


class StepRunner:
    """Runs the long steps of one workflow run; call only from the workflow."""

    def __init__(self, activities: ActivityCalls, stop_requested: Callable[[], bool]) -> None:
        self._activities = activities
        self._stop_requested = stop_requested

    async def run(self, name: str, method: StepMethod[P, T], arg: P, timeout: timedelta) -> T:
        """The step's result; ``StepStopped`` when a halt or pause (already pending, or arriving
        while it runs) stopped it."""

        def start(cancellation: ActivityCancellationType) -> ActivityHandle[T]:
            return self._activities.start(
                method, arg, timeout, heartbeat=True, cancellation=cancellation
            )

        if self._stop_requested():
            raise StepStopped(name, started=False)
        handle = start(ActivityCancellationType.WAIT_CANCELLATION_COMPLETED)
        try:
            await workflow.wait_condition(lambda: handle.done() or self._stop_requested())
        except asyncio.CancelledError:
            # The task itself was cancelled: stop the step before the workflow ends.
            handle.cancel()
            await asyncio.gather(handle, return_exceptions=True)
            raise
        if handle.done():
            return await handle
        handle.cancel()
        try:
            return await handle  # it finished before the cancellation reached it
        except ActivityError:
            raise StepStopped(name, started=True) from None  # cancelled (or failed on the way)


class Steps:
    """The task's steps over the workflow's state; call only from the workflow."""

    def __init__(
        self,
        inp: TaskInput,
        activities: ActivityCalls,
        status: TaskStatus,
        state: LoopState,
        signals: RiskSignals,
        log: Log,
        events: Callable[[], EventContext],
        queue: Callable[[PublishInput], None],
        check_dollars: Callable[[str | None], Awaitable[None]],
    ) -> None:
        self._inp = inp
        self._activities = activities
        self._status = status
        self._state = state
        self._signals = signals
        self._log = log
        self._events = events
        self._queue = queue
        """Adds a loop event to the workflow's outbox (runs with one)."""
        self._check_dollars = check_dollars
        """Escalates, before an agent call, when the dollar budget says so, or after a turn the
        agent stopped for money (its argument); returns once the call may go ahead."""
        self._runner = StepRunner(activities, lambda: signals.stop_requested() is not None)

    async def develop(self, ws: Workspace) -> DeveloperStep:
        """The developer's attempt, with the feedback and guidance it has not seen yet."""
        status, state, limits = self._status, self._state, self._inp.limits
        status.phase = "developer"
        ctx = self._events()
        # The monitor hears of the iteration before the developer starts.
        iteration = {
            "phase": "developer",
            "retries": status.retries,
            "cost_usd": round(status.usage.cost_usd, 6),
        }
        self._queue(PublishInput(ctx, "iteration", iteration, at=workflow.now().isoformat()))
        timeout = timedelta(seconds=limits.developer_timeout_s)
        await self._check_dollars(None)
        while True:
            request = DeveloperInput(
                self._inp.spec,
                ws,
                ctx,
                list(state.feedback),
                state.guidance,
                retries=status.retries,
                carried=list(state.decisions),
                cost_budget_usd=state.dollars.turn_budget(status.usage.cost_usd),
                accept_unpriced=state.dollars.accept_unpriced,
            )
            dev = await self._runner.run("developer", TaskActivities.develop, request, timeout)
            status.events_dropped += dev.events_dropped
            self._queued(dev.events)
            state.last_files = list(dev.files_touched)
            # How full the window got: the largest call when the agent reports it (each call
            # resends the conversation, so the sum of its calls would overstate it).
            self._spend(dev.usage.peak_tokens or dev.tokens_used)
            self._account(dev.usage, dev.stopped, self._inp.spec.developer.model)
            self._stop_if_interrupted("developer", dev.stopped)
            if dev.stopped not in DOLLAR_STOPS:
                break
            # Stopped for money: a human is asked, and an answer that lets it go on runs the
            # turn again (its changes so far stay in the worktree).
            self._log("developer", f"stopped: {dev.stopped}", {"files": dev.files_touched})
            await self._check_dollars(dev.stopped)
        state.guidance = None  # used: a later retry answer brings its own
        touched = ", ".join(dev.files_touched) or "no files"
        self._log(
            "developer",
            f"{dev.outcome}: {touched} (+{dev.insertions}/-{dev.deletions})",
            {"files": dev.files_touched, "out_of_scope": dev.out_of_scope, "diff": dev.diff_hash},
        )
        # The loop's own note on scope creep; see ``RiskSignals.note_scope`` for why.
        if (noted := self._signals.note_scope(dev.out_of_scope)) is not None:
            note, files = noted
            self._log("flag", note, {"files": files})
        return dev

    async def gates(self, ws: Workspace) -> GatesStep:
        """Every configured gate, in the worktree."""
        status, inp = self._status, self._inp
        status.phase = "gates"
        request = GatesInput(
            ws,
            list(inp.gates),
            self._events(),
            inp.limits.max_output_bytes,
            f"{inp.run_dir}/logs/{inp.spec.task_id}",
            status.context,
            inp.spec.repo_path,
            inp.run_dir,
        )
        timeout = timedelta(seconds=bounds.gates_timeout_s(g.timeout_s for g in inp.gates))
        gates = await self._runner.run("gates", TaskActivities.run_gates, request, timeout)
        status.last_gates = list(gates.results)
        status.events_dropped += gates.events_dropped
        self._queued(gates.events)
        for r in gates.results:
            verdict = "pass" if r.passed else ("FAIL" if r.required else "warn")
            self._log(
                "gate",
                f"{r.name}: {verdict} in {r.duration_ms:.0f} ms",
                # The log's path lets a reader (the console) fetch this iteration's full output.
                {"name": r.name, "passed": r.passed, "required": r.required, "log": r.log_path},
            )
        return gates

    async def review(
        self, ws: Workspace, gates: GatesStep, dev: DeveloperStep
    ) -> ReviewStep | Escalate:
        """The reviewer's verdict; a reviewer that needs more information gets one bounded
        enrichment and a second call, and a question for a human when that does not help."""
        review = await self._call_reviewer(ws, gates.summary, "")
        if review.verdict != "need_more_info":
            return review
        if review.reason in bounds.FALLBACK_REASONS:
            # The agent already ran its own bounded enrichment and has a question for a human.
            return Escalate(
                FallbackReason(review.reason), review.summary or "reviewer needs more information"
            )
        # One bounded enrichment, and a second call only when the evidence actually changed.
        before = evidence_fingerprint(dev.diff_hash, [], [asdict(f) for f in review.findings])
        enrichment = await self._activities.start(
            TaskActivities.enrich,
            EnrichInput(
                self._inp.spec,
                ws,
                list(review.needed_evidence),
                [r.log_path for r in gates.results if r.log_path],
            ),
        )
        after = evidence_fingerprint(dev.diff_hash, [], [{"evidence": enrichment.fingerprint}])
        self._log(
            "enrichment",
            f"gathered {', '.join(enrichment.kinds) or 'nothing'}",
            {"before": before, "after": after},
        )
        if not enrichment.text:
            return Escalate(
                FallbackReason.NO_NEW_EVIDENCE,
                f"reviewer needs {', '.join(review.needed_evidence) or 'more information'}: "
                f"{review.summary}",
            )
        second = await self._call_reviewer(ws, gates.summary, enrichment.text)
        if second.verdict == "need_more_info":
            message = f"reviewer still needs more: {second.summary}"
            return Escalate(FallbackReason.NO_NEW_EVIDENCE, message)
        return second

    async def _call_reviewer(self, ws: Workspace, gate_summary: str, evidence: str) -> ReviewStep:
        status = self._status
        status.phase = "reviewer"
        timeout = timedelta(seconds=self._inp.limits.reviewer_timeout_s)
        dollars = self._state.dollars
        await self._check_dollars(None)
        while True:
            request = ReviewInput(
                self._inp.spec,
                ws,
                self._events(),
                gate_summary,
                list(status.flags),
                evidence,
                cost_budget_usd=dollars.turn_budget(status.usage.cost_usd),
                accept_unpriced=dollars.accept_unpriced,
            )
            review = await self._runner.run("reviewer", TaskActivities.review, request, timeout)
            status.events_dropped += review.events_dropped
            self._queued(review.events)
            self._spend(review.tokens_used)
            self._account(review.usage, review.stopped, self._inp.spec.reviewer.model)
            self._stop_if_interrupted("reviewer", review.stopped)
            if review.stopped not in DOLLAR_STOPS:
                break
            self._log("review", f"stopped: {review.stopped}")
            await self._check_dollars(review.stopped)
        status.last_verdict = review
        self._state.last_review = review
        # A reviewer that gave up reports request_changes with reason abstain: say abstain.
        shown = "abstain" if review.reason == FallbackReason.ABSTAIN.value else review.verdict
        self._log(
            "review",
            f"{shown} by {review.reviewer}: {review.summary}".strip(),
            {
                "findings": [f.message for f in review.findings],
                # What the reviewer was shown (items and their tokens), for the console.
                "context": asdict(review.context) if review.context else None,
            },
        )
        return review

    async def commit(self, ws: Workspace, reviewer: str, approved_by: str) -> None:
        """Commit the worktree on the task's branch (once per task: keyed by the workflow id)."""
        status = self._status
        status.phase = "committing"
        step = await self._activities.start(
            TaskActivities.commit,
            CommitInput(
                self._inp.spec,
                ws,
                self._events(),
                reviewer,
                approved_by,
                commit_key=workflow.info().workflow_id,
            ),
        )
        if not step.created and step.commit_id == ws.base_commit:
            # Approved with nothing to commit: the base is no commit of this task's.
            self._log("commit", f"nothing to commit: the worktree matches {ws.base_commit[:10]}")
            return
        status.commit_id = step.commit_id
        self._log("commit", f"committed {step.commit_id[:10]} on {ws.branch}")

    def _queued(self, events: list[PublishInput]) -> None:
        """Queue the loop events a step handed back."""
        for event in events:
            self._queue(event)

    def _account(self, usage: TurnUsage, stopped: str | None, model: str) -> None:
        """Add an agent turn's dollars to the task's and its iteration's, and to the memo."""
        status = self._status
        if stopped == "unknown_price":
            # Fail closed even if the agent did not say which model: the role's is the one.
            usage = replace(usage, unpriced=True, model=usage.model or model)
        if usage != TurnUsage():  # agents that report no usage add nothing, not an "unknown"
            status.usage.add(usage)
            add_iteration_cost(status.iteration_costs, status.iteration, usage.cost_usd)
        workflow.upsert_memo(usage_memo(status))

    def _stop_if_interrupted(self, name: str, stopped: str | None) -> None:
        """Act on the halt or pause that ended an agent's turn, once its spending is counted.

        A turn the workflow cancelled (or whose agent heard the signal first) returns what it
        spent rather than failing; the stop then goes the way of any stopped step. A turn the
        agent ended on a signal the workflow never got goes on to a human as it reports.
        """
        if stopped in INTERRUPTED_STOPS and self._signals.stop_requested() is not None:
            raise StepStopped(name, started=True)

    def _spend(self, tokens: int) -> None:
        """Account an agent call's tokens to the loop's context and check the pressure level."""
        status, state = self._status, self._state
        snapshot = status.context = state.spend(status.iteration, tokens)
        if should_checkpoint(snapshot) and state.checkpoint_due is None:
            state.checkpoint_due = f"context {snapshot.pressure} at {snapshot.utilization:.0%}"
            self._log("context", f"{snapshot.pressure} pressure: checkpoint before next step")
