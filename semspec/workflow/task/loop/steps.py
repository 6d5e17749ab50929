"""The loop's steps: developer, gates, reviewer, the reviewer's one enrichment, and the commit.

Each step runs its activity, records the result through ``TaskState`` (status, log, tokens and
dollars) and queues the step's loop events in the outbox; then it returns what happened
(``outcomes``): its result, ``Interrupted`` when a halt or pause stopped it, ``BudgetStop`` when
the dollar budget says the agent call may not go ahead. ``TaskWorkflow`` decides what follows:
Steps never asks a human, checkpoints, or calls back into the workflow.

The long steps (developer, gates, reviewer) may be stopped by the risk monitor: ``StepRunner``
starts the activity and waits for whichever comes first, the result or a halt or pause; on a
stop it cancels the activity and waits until it has stopped (the gate's process group is gone,
the agent's LLM call abandoned).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError
from temporalio.workflow import ActivityCancellationType, ActivityHandle

from semspec.agents.protocol import TurnUsage
from semspec.core.reasons import FallbackReason
from semspec.workflow.fingerprint import evidence_fingerprint
from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.dollars import DOLLAR_STOPS
from semspec.workflow.task.loop import bounds
from semspec.workflow.task.loop.bounds import Escalate
from semspec.workflow.task.loop.calls import ActivityCalls
from semspec.workflow.task.loop.outbox import Outbox
from semspec.workflow.task.loop.outcomes import BudgetStop, Interrupted
from semspec.workflow.task.loop.risk_signals import RiskSignals
from semspec.workflow.task.loop.state import TaskState
from semspec.workflow.task.messages import (
    INTERRUPTED_STOPS,
    CommitInput,
    DeveloperInput,
    DeveloperStep,
    EnrichInput,
    GatesInput,
    GatesStep,
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


class StepRunner:
    """Runs the long steps of one workflow run; call only from the workflow."""

    def __init__(self, activities: ActivityCalls, signals: RiskSignals) -> None:
        self._activities = activities
        self._signals = signals

    def _stop_requested(self) -> bool:
        return self._signals.stop_requested() is not None

    async def run(
        self, name: str, method: StepMethod[P, T], arg: P, timeout: timedelta
    ) -> T | Interrupted:
        """The step's result, or ``Interrupted`` when a halt or pause (already pending, or
        arriving while it runs) stopped it."""

        def start(cancellation: ActivityCancellationType) -> ActivityHandle[T]:
            return self._activities.start(
                method, arg, timeout, heartbeat=True, cancellation=cancellation
            )

        if self._stop_requested():
            return Interrupted(name, started=False)
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
            return Interrupted(name, started=True)  # cancelled (or failed on the way)


class Steps:
    """The task's steps over its state; call only from the workflow."""

    def __init__(
        self,
        inp: TaskInput,
        activities: ActivityCalls,
        state: TaskState,
        signals: RiskSignals,
        outbox: Outbox,
    ) -> None:
        self._inp = inp
        self._activities = activities
        self._state = state
        self._signals = signals
        self._outbox = outbox
        self._runner = StepRunner(activities, signals)

    def begin_iteration(self) -> None:
        """Enter the developer phase and tell the monitor, before the developer starts."""
        state, status = self._state, self._state.status
        state.enter("developer")
        iteration = {
            "phase": "developer",
            "retries": status.retries,
            "max_retries": status.max_retries,
            "cost_usd": round(status.usage.cost_usd, 6),
            "unpriced_models": list(status.usage.unpriced_models),
        }
        self._outbox.queue("iteration", iteration)

    async def develop(self, ws: Workspace) -> DeveloperStep | Interrupted | BudgetStop:
        """The developer's attempt, with the feedback and guidance it has not seen yet.

        ``BudgetStop`` before the call when the dollar budget says no, or after a turn the
        agent stopped for money (its changes so far stay in the worktree).
        """
        state, status, loop = self._state, self._state.status, self._state.loop
        if (stop := self._dollar_stop()) is not None:
            return stop
        request = DeveloperInput(
            self._inp.spec,
            ws,
            self._outbox.context(),
            list(loop.feedback),
            loop.guidance,
            retries=status.retries,
            carried=list(loop.decisions),
            cost_budget_usd=loop.dollars.turn_budget(status.usage.cost_usd),
            accept_unpriced=loop.dollars.accept_unpriced,
        )
        timeout = timedelta(seconds=self._inp.limits.developer_timeout_s)
        dev = await self._runner.run("developer", TaskActivities.develop, request, timeout)
        if isinstance(dev, Interrupted):
            return dev
        self._outbox.from_step(dev.events, dev.events_dropped)
        loop.last_files = list(dev.files_touched)
        # How full the window got: the largest call when the agent reports it (each call
        # resends the conversation, so the sum of its calls would overstate it).
        tokens = dev.usage.peak_tokens or dev.tokens_used
        self._turn_done(dev.usage, dev.stopped, self._inp.spec.developer.model, tokens)
        if (stopped := self._interrupted("developer", dev.stopped)) is not None:
            return stopped
        if dev.stopped in DOLLAR_STOPS:
            kept: dict[str, object] = {"files": dev.files_touched, "tree": dev.tree}
            state.log("developer", f"stopped: {dev.stopped}", kept)
            return self._stopped_for_money(dev.stopped)
        loop.guidance = None  # used: a later retry answer brings its own
        touched = ", ".join(dev.files_touched) or "no files"
        state.log(
            "developer",
            f"{dev.outcome}: {touched} (+{dev.insertions}/-{dev.deletions})",
            {
                "files": dev.files_touched,
                "out_of_scope": dev.out_of_scope,
                "diff": dev.diff_hash,
                "tree": dev.tree,
            },
        )
        # The loop's own note on scope creep; see ``RiskSignals.note_scope`` for why.
        if (noted := self._signals.note_scope(dev.out_of_scope)) is not None:
            note, files = noted
            state.log("flag", note, {"files": files})
        return dev

    async def gates(self, ws: Workspace) -> GatesStep | Interrupted:
        """Every configured gate, in the worktree."""
        state, inp = self._state, self._inp
        state.enter("gates")
        request = GatesInput(
            ws,
            list(inp.gates),
            self._outbox.context(),
            inp.limits.max_output_bytes,
            f"{inp.run_dir}/logs/{inp.spec.task_id}",
            state.status.context,
            inp.spec.repo_path,
            inp.run_dir,
        )
        timeout = timedelta(seconds=bounds.gates_timeout_s(g.timeout_s for g in inp.gates))
        gates = await self._runner.run("gates", TaskActivities.run_gates, request, timeout)
        if isinstance(gates, Interrupted):
            return gates
        state.gates_ran(gates)
        self._outbox.from_step(gates.events, gates.events_dropped)
        for r in gates.results:
            verdict = "pass" if r.passed else ("FAIL" if r.required else "warn")
            state.log(
                "gate",
                f"{r.name}: {verdict} in {r.duration_ms:.0f} ms",
                # The log's path lets a reader (the console) fetch this iteration's full output.
                {"name": r.name, "passed": r.passed, "required": r.required, "log": r.log_path},
            )
        return gates

    async def review(
        self, ws: Workspace, gate_summary: str, evidence: str
    ) -> ReviewStep | Interrupted | BudgetStop:
        """One reviewer call on the diff; ``evidence`` is what an enrichment gathered."""
        state, status, dollars = self._state, self._state.status, self._state.loop.dollars
        state.enter("reviewer")
        if (stop := self._dollar_stop()) is not None:
            return stop
        request = ReviewInput(
            self._inp.spec,
            ws,
            self._outbox.context(),
            gate_summary,
            list(status.flags),
            evidence,
            cost_budget_usd=dollars.turn_budget(status.usage.cost_usd),
            accept_unpriced=dollars.accept_unpriced,
        )
        timeout = timedelta(seconds=self._inp.limits.reviewer_timeout_s)
        review = await self._runner.run("reviewer", TaskActivities.review, request, timeout)
        if isinstance(review, Interrupted):
            return review
        self._outbox.from_step(review.events, review.events_dropped)
        model = self._inp.spec.reviewer.model
        self._turn_done(review.usage, review.stopped, model, review.tokens_used)
        if (stopped := self._interrupted("reviewer", review.stopped)) is not None:
            return stopped
        if review.stopped in DOLLAR_STOPS:
            state.log("review", f"stopped: {review.stopped}")
            return self._stopped_for_money(review.stopped)
        state.reviewed(review)
        # A reviewer that gave up reports request_changes with reason abstain: say abstain.
        shown = "abstain" if review.reason == FallbackReason.ABSTAIN.value else review.verdict
        state.log(
            "review",
            f"{shown} by {review.reviewer}: {review.summary}".strip(),
            {
                "findings": [f.message for f in review.findings],
                # What the reviewer was shown (items and their tokens), for the console.
                "context": asdict(review.context) if review.context else None,
            },
        )
        return review

    async def enrich(
        self, ws: Workspace, gates: GatesStep, dev: DeveloperStep, review: ReviewStep
    ) -> str | Escalate:
        """For a reviewer that needs more information: the evidence of one bounded
        enrichment, or the question for a human when it has none to give."""
        if review.reason in bounds.FALLBACK_REASONS:
            # The agent already ran its own bounded enrichment and has a question for a human.
            return Escalate(
                FallbackReason(review.reason), review.summary or "reviewer needs more information"
            )
        # One bounded enrichment; a second call only when the evidence actually changed.
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
        self._state.log(
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
        return enrichment.text

    async def commit(self, ws: Workspace, reviewer: str, approved_by: str) -> None:
        """Commit the worktree on the task's branch (once per task: keyed by the workflow id)."""
        state = self._state
        state.enter("committing")
        step = await self._activities.start(
            TaskActivities.commit,
            CommitInput(
                self._inp.spec,
                ws,
                self._outbox.context(),
                reviewer,
                approved_by,
                commit_key=workflow.info().workflow_id,
            ),
        )
        if not step.created and step.commit_id == ws.base_commit:
            # Approved with nothing to commit: the base is no commit of this task's.
            state.log("commit", f"nothing to commit: the worktree matches {ws.base_commit[:10]}")
            return
        state.committed(step.commit_id)
        state.log("commit", f"committed {step.commit_id[:10]} on {ws.branch}")

    def _turn_done(self, usage: TurnUsage, stopped: str | None, model: str, tokens: int) -> None:
        """Count an agent turn's tokens and dollars, and write them to the memo."""
        self._state.agent_turn(usage, stopped, model, tokens)
        workflow.upsert_memo(usage_memo(self._state.status))

    def _dollar_stop(self) -> BudgetStop | None:
        """Whether the next agent call must wait for a human (spent budget, unpriced model)."""
        stop = self._state.loop.dollars.check(self._state.status.usage)
        return None if stop is None else BudgetStop(stop)

    def _stopped_for_money(self, stopped: str) -> BudgetStop:
        """The stop of a turn the agent ended for money (``stopped``): it stops even where the
        sums say the budget holds, so a turn never runs again without a human's answer."""
        budget, usage = self._state.loop.dollars, self._state.status.usage
        return BudgetStop(budget.check(usage) or budget.stopped(stopped, usage))

    def _interrupted(self, name: str, stopped: str | None) -> Interrupted | None:
        """The halt or pause that ended an agent's turn, once its spending is counted.

        A turn the workflow cancelled (or whose agent heard the signal first) returns what it
        spent rather than failing; the stop then goes the way of any stopped step. A turn the
        agent ended on a signal the workflow never got goes on to a human as it reports.
        """
        if stopped in INTERRUPTED_STOPS and self._signals.stop_requested() is not None:
            return Interrupted(name, started=True)
        return None


def findings_text(review: ReviewStep) -> str:
    """The review's findings as feedback for the next developer turn."""
    lines = [f"Reviewer requested changes: {review.summary}".strip()]
    for f in review.findings:
        where = f" ({f.file}:{f.line})" if f.file and f.line else (f" ({f.file})" if f.file else "")
        about = f" [criterion: {f.criterion}]" if f.criterion else ""
        lines.append(f"- {f.severity}: {f.message}{where}{about}")
    return "\n".join(lines)
