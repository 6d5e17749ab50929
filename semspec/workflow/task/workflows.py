"""``TaskWorkflow``: the durable developer → gates → reviewer loop of one task.

Deterministic: all I/O is in ``semspec.workflow.task.activities``. The loop is bounded by retries,
iterations and evidence fingerprints; whenever a bound is hit it escalates and waits for a
human's ``resolve_escalation`` update.

Risk-monitor signals: ``flag`` is a note for the reviewer. ``halt`` and ``pause`` stop the step
that is running: its activity (developer, gates or reviewer) is cancelled and the workflow waits
until the cancellation is done (the gate's process group is ended, the agent's LLM call is
abandoned), then a halt escalates to a human (source ``halt``; after a ``retry`` answer the loop
runs the next iteration with the guidance) and a pause saves a checkpoint at once and continues
in a fresh run, escalating (source ``pause``) only when no checkpoint is left. The commit and the
short bookkeeping activities are not interrupted; a halt that arrives before the commit stops it.

A checkpoint (continue-as-new) carries every bound: retries, granted retries and iterations,
the last feedback, unused guidance, tokens and time spent, the context window.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict, replace
from datetime import timedelta
from typing import Any, NoReturn, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TimeoutError,
)
from temporalio.workflow import ActivityCancellationType, ActivityHandle

with workflow.unsafe.imports_passed_through():
    # Imported here (not only transitively) so the sandbox can resolve their type hints
    # when it decodes activity results.
    from semspec.agents import protocol as _agent_protocol  # noqa: F401
    from semspec.core.reasons import FallbackReason, RiskReason
    from semspec.vocabulary.events import RiskSignalInput
    from semspec.workflow.context.monitor import ContextTracker, should_checkpoint
    from semspec.workflow.context.windows import DEFAULT_WINDOW
    from semspec.workflow.fingerprint import evidence_fingerprint
    from semspec.workflow.gates import types as _gate_types  # noqa: F401
    from semspec.workflow.task import context_activities
    from semspec.workflow.task.activities import TaskActivities
    from semspec.workflow.task.messages import (
        QUERY_STATUS,
        RESOLUTION_ACTIONS,
        SIGNAL_FLAG,
        SIGNAL_HALT,
        SIGNAL_PAUSE,
        UPDATE_RESOLVE,
        WORKFLOW_NAME,
        BudgetInput,
        BudgetOutcome,
        CheckpointInput,
        CommitInput,
        Continuation,
        DeveloperInput,
        DeveloperStep,
        EnrichInput,
        Escalation,
        EventContext,
        FinalizeInput,
        GatesInput,
        GatesStep,
        LogEntry,
        PublishInput,
        Resolution,
        ResolutionAck,
        ReviewInput,
        ReviewStep,
        TaskInput,
        TaskResult,
        TaskStatus,
        Workspace,
        WorkspaceInput,
    )

SHORT_TIMEOUT = timedelta(seconds=60)
MAX_CHECKPOINTS = 5
MAX_CARRIED_LOG = 200
HEARTBEAT_TIMEOUT = timedelta(seconds=15)
NON_RETRYABLE = ["InputError", "ScriptError", "ConfigError", "GitError", "GateError"]
# Runs started before steps could be interrupted replay without it (signals wait for the next
# safe point there, and a cancelled workflow does not wait for its activity to stop).
PATCH_INTERRUPT = "interrupt-running-step"

P = TypeVar("P")
T = TypeVar("T")
StepMethod = Callable[[TaskActivities, P], Awaitable[T]]


class _Stop(Exception):
    """Internal: the loop is over with this outcome."""

    def __init__(self, outcome: str, reason: str | None = None) -> None:
        super().__init__(outcome)
        self.outcome = outcome
        self.reason = reason


@workflow.defn(name=WORKFLOW_NAME)
class TaskWorkflow:
    """One task's loop; see the module docstring."""

    def __init__(self) -> None:
        self._status: TaskStatus | None = None
        self._resolution: Resolution | None = None
        self._pause: RiskSignalInput | None = None
        self._halt: RiskSignalInput | None = None
        self._signal_ids: set[str] = set()
        self._escalations = 0
        self._early_signals: list[str] = []
        self._flags: list[str] = []
        self._scope_flagged: set[str] = set()
        # Replaced in ``run`` by the budget check's, the parent's or the carried window.
        self._tracker = ContextTracker(window=DEFAULT_WINDOW)
        self._base_tokens = 0
        self._tokens_spent = 0
        self._elapsed_before = 0.0
        self._context_used = 0
        self._checkpoint_due: str | None = None
        self._carried: list[str] = []
        self._last_review: ReviewStep | None = None
        self._last_files: list[str] = []
        self._feedback: list[str] = []
        self._guidance: str | None = None
        self._interruptible: bool | None = None
        self._step_cancelled = False

    # ----- the loop ---------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: TaskInput) -> TaskResult:
        spec = inp.spec
        self._inp = inp
        self._max_retries = inp.limits.max_retries
        self._max_iterations = inp.limits.max_iterations
        status = self._status = TaskStatus(
            task_id=spec.task_id,
            title=spec.title,
            phase="starting",
            iteration=0,
            retries=0,
            max_retries=self._max_retries,
            flags=self._flags,
            task_files=list(spec.task_files),
            plan_id=spec.plan_id,
            models={
                "developer": f"{spec.developer.provider}:{spec.developer.model}",
                "reviewer": f"{spec.reviewer.provider}:{spec.reviewer.model}",
            },
        )
        if inp.window:
            # A subtask: its parent checked the budget and passes its window down.
            self._tracker = ContextTracker(window=inp.window)
            self._base_tokens = inp.base_tokens
        self._restore(inp.continuation)
        for line in self._early_signals:
            self._log("signal", line)
        try:
            if inp.check_budget and inp.continuation is None:
                budget = await self._check_budget()
                if budget.refusal is not None:
                    return await self._finish("refused", budget.refusal)
                if budget.groups:
                    outcome, reason = await self._run_subtasks(budget)
                    return await self._finish(outcome, reason)
            status.phase = "workspace"
            ws = await workflow.execute_activity_method(
                TaskActivities.prepare_workspace,
                WorkspaceInput(
                    spec.workspace_key,
                    spec.repo_path,
                    spec.base_branch,
                    inp.run_dir,
                    spec.after_commits,
                ),
                start_to_close_timeout=SHORT_TIMEOUT,
                retry_policy=self._retry(),
            )
            status.branch = ws.branch
            status.worktree, status.base_commit = ws.path, ws.base_commit
            self._ws = ws
            self._log("workspace", f"worktree on {ws.branch} at {ws.base_commit[:10]}")
            outcome, reason = await self._loop(ws)
        except asyncio.CancelledError:
            await self._record_cancel()
            raise
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):
                await self._record_cancel()
                raise asyncio.CancelledError() from err
            # Only input errors get here (bad script, unknown branch): retrying cannot help.
            outcome, reason = "failed", _message_of(err)
            self._log("finished", f"failed: {reason}")
        return await self._finish(outcome, reason)

    async def _record_cancel(self) -> None:
        """Note the cancellation and tell the monitor the task is over."""
        status = self._state
        status.phase, status.outcome = "done", "cancelled"
        self._log("finished", "cancelled")
        await self._publish("finished", {"outcome": "cancelled", "commit": None, "reason": None})

    async def _finish(self, outcome: str, reason: str | None) -> TaskResult:
        """Record the outcome (knowledge, performance, cleanup), publish it, and return."""
        status = self._state
        # The outcome becomes visible only once the bookkeeping is done: whoever waits for it
        # (`task submit --wait`, the demo) may then read the graph or remove the repository.
        status.phase = "finishing"
        review = self._last_review
        step = await workflow.execute_activity(
            context_activities.finalize,
            FinalizeInput(
                spec=self._inp.spec,
                outcome=outcome,
                iterations=status.iteration,
                tokens=self._tokens_spent,
                latency_s=self._elapsed(),
                review_summary=review.summary if review else "",
                noted_patterns=list(review.noted_patterns) if review else [],
                commit_id=status.commit_id,
                reviewer=review.reviewer if review else "",
            ),
            start_to_close_timeout=SHORT_TIMEOUT,
            retry_policy=self._retry(),
        )
        if step.checkpoints_deleted:
            self._log("cleanup", f"deleted {len(step.checkpoints_deleted)} checkpoint branch(es)")
        self._log("finished", f"{outcome}" + (f": {reason}" if reason else ""))
        status.phase, status.outcome, status.reason = "done", outcome, reason
        await self._publish(
            "finished", {"outcome": outcome, "commit": status.commit_id, "reason": reason}
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        return TaskResult(
            task_id=self._inp.spec.task_id,
            outcome=outcome,
            reason=reason,
            commit_id=status.commit_id,
            iterations=status.iteration,
            branch=status.branch,
            status=status,
        )

    async def _check_budget(self) -> BudgetOutcome:
        status = self._state
        status.phase = "budget"
        budget: BudgetOutcome = await workflow.execute_activity(
            context_activities.check_budget,
            BudgetInput(self._inp.spec),
            start_to_close_timeout=SHORT_TIMEOUT,
            retry_policy=self._retry(),
        )
        status.assignment = list(budget.assignment)
        self._tracker = ContextTracker(window=budget.window)
        self._base_tokens = budget.base_tokens
        verdict = "fits" if budget.fits else ("refused" if budget.refusal else "too large")
        self._log("budget", f"{verdict}: window {budget.window:,} tokens", {"lines": budget.lines})
        return budget

    async def _run_subtasks(self, budget: BudgetOutcome) -> tuple[str, str | None]:
        """Run one child task per file group, in order, on this task's branch.

        Each child tracks its context in this task's window, starting from the task text and
        its own files (the parent's base without the other groups' files).
        """
        spec = self._inp.spec
        status = self._state
        status.phase = "subtasks"
        groups = budget.groups
        for number, files in enumerate(groups, 1):
            others = sum(n for path, n in budget.file_tokens.items() if path not in files)
            child = replace(
                spec,
                task_id=f"{spec.task_id}-part{number}",
                title=f"{spec.title} (part {number} of {len(groups)})",
                task_files=list(files),
                workspace_id=spec.workspace_key,
            )
            self._log("subtask", f"part {number}: {', '.join(files)}")
            result: TaskResult = await workflow.execute_child_workflow(
                TaskWorkflow.run,
                replace(
                    self._inp,
                    spec=child,
                    check_budget=False,
                    continuation=None,
                    window=self._tracker.window,
                    base_tokens=max(budget.base_tokens - others, 0),
                ),
                id=f"task-{child.task_id}",
            )
            status.subtasks.append(f"{child.task_id}: {result.outcome}")
            status.commit_id = result.commit_id or status.commit_id
            status.branch = result.branch or status.branch
            status.iteration += result.iterations
            if result.outcome != "approved":
                return result.outcome, f"part {number} ended {result.outcome}: {result.reason}"
        return "approved", None

    def _restore(self, cont: Continuation | None) -> None:
        """Carry state over a checkpoint: counters and bounds, fingerprints, log, feedback,
        decisions, tokens, window."""
        if cont is None:
            return
        status = self._state
        status.iteration = cont.iteration
        status.retries = cont.retries
        if cont.max_retries is not None:
            self._max_retries = status.max_retries = cont.max_retries
        if cont.max_iterations is not None:
            self._max_iterations = cont.max_iterations
        self._feedback = list(cont.feedback)
        self._guidance = cont.guidance
        self._tokens_spent = cont.tokens_spent
        self._elapsed_before = cont.elapsed_s
        self._signal_ids.update(cont.signal_ids)
        self._scope_flagged.update(cont.scope_flagged)
        self._halt = cont.halt
        status.fingerprints = list(cont.fingerprints)
        status.log = list(cont.log)
        status.assignment = list(cont.assignment)
        status.checkpoints = list(cont.checkpoint_refs)
        status.events_dropped = cont.events_dropped
        self._flags.extend(cont.flags)
        self._carried = list(cont.decisions)
        logged = len([e for e in cont.log if e.kind == "escalation"])
        self._escalations = max(cont.escalations, logged)
        if cont.window:
            self._tracker = ContextTracker(window=cont.window)
        self._base_tokens = cont.base_tokens
        self._log("resumed", f"fresh context after checkpoint {cont.checkpoints}")

    async def _loop(self, ws: Workspace) -> tuple[str, str | None]:
        while True:
            try:
                try:
                    await self._iteration(ws)
                except ActivityError as err:
                    if isinstance(err.cause, CancelledError):
                        raise asyncio.CancelledError() from err  # the task was cancelled
                    if _is_input_error(err):
                        raise
                    await self._escalate(_reason_of(err), _message_of(err))
            except _Stop as stop:
                return stop.outcome, stop.reason
            except _Resolved as answer:
                res = answer.resolution
                if res.action == "abort":
                    return "aborted", answer.reason
                if res.action == "approve":
                    await self._commit(ws, "human", res.resolved_by)
                    return "approved", None
                if res.action == "retry":
                    self._guidance = res.guidance
                if res.action == "extend_budget":
                    extra = self._granted_retries(res)
                    self._max_retries += extra
                    self._max_iterations += extra + 1
                    self._state.max_retries = self._max_retries

    async def _iteration(self, ws: Workspace) -> None:
        """One developer → gates → reviewer pass; leaves the feedback for the next one."""
        status = self._state
        await self._safe_point()
        if status.iteration >= self._max_iterations:
            await self._escalate(
                FallbackReason.BUDGET_EXHAUSTED, f"iteration cap of {self._max_iterations} reached"
            )
        status.iteration += 1
        dev = await self._develop(ws)
        if dev.outcome != "submitted":
            await self._escalate(
                dev.reason or FallbackReason.BUDGET_EXHAUSTED,
                f"developer stopped: {dev.outcome} {dev.summary}".strip(),
            )
        gates = await self._gates(ws)
        if not gates.passed:
            failures = [
                {"name": r.name, "exit_code": r.exit_code, "timed_out": r.timed_out}
                for r in gates.results
                if r.required and not r.passed
            ]
            # Kept before the bound is checked: after a human's answer, or a checkpoint, the
            # next developer still sees what failed.
            self._feedback = [gates.feedback]
            await self._retry_or_escalate(
                evidence_fingerprint(dev.diff_hash, failures, []), "required gate failed"
            )
            return
        review = await self._review(ws, gates, dev)
        if review.verdict == "approve":
            await self._safe_point(before_commit=True)
            await self._commit(ws, review.reviewer, "reviewer")
            raise _Stop("approved")
        if review.reason in _FALLBACKS:
            await self._escalate(review.reason, review.summary or "reviewer gave up")
        if review.verdict == "reject":
            await self._escalate(
                FallbackReason.LOW_CONFIDENCE, f"reviewer rejected: {review.summary}"
            )
        findings = [asdict(f) for f in review.findings]
        self._feedback = [_findings_text(review)]
        await self._retry_or_escalate(
            evidence_fingerprint(dev.diff_hash, [], findings), "reviewer requested changes"
        )

    # ----- steps ------------------------------------------------------------------------------

    async def _develop(self, ws: Workspace) -> DeveloperStep:
        status = self._state
        status.phase = "developer"
        request = DeveloperInput(
            self._inp.spec,
            ws,
            self._ctx(),
            list(self._feedback),
            self._guidance,
            retries=status.retries,
            carried=list(self._carried),
        )
        dev = await self._step(
            "developer",
            TaskActivities.develop,
            request,
            timedelta(seconds=self._inp.limits.developer_timeout_s),
        )
        self._guidance = None  # used: a later retry answer brings its own
        status.events_dropped += dev.events_dropped
        self._last_files = list(dev.files_touched)
        self._spend(dev.tokens_used)
        touched = ", ".join(dev.files_touched) or "no files"
        self._log(
            "developer",
            f"{dev.outcome}: {touched} (+{dev.insertions}/-{dev.deletions})",
            {"files": dev.files_touched, "out_of_scope": dev.out_of_scope, "diff": dev.diff_hash},
        )
        self._flag_scope(dev.out_of_scope)
        return dev

    def _flag_scope(self, outside: list[str]) -> None:
        """Flag files outside the task to the reviewer at once, from the step's own diff.

        The risk monitor flags the same creep, but its signal travels through NATS and the
        bridge and may arrive after the reviewer has run; the loop's own note cannot be late.
        """
        new = sorted(set(outside) - self._scope_flagged)
        if not new:
            return
        self._scope_flagged.update(new)
        note = f"{RiskReason.SCOPE_CREEP.value}: files outside the task: {', '.join(new)}"
        self._flags.append(note)
        self._log("flag", note, {"files": new})

    async def _gates(self, ws: Workspace) -> GatesStep:
        status = self._state
        status.phase = "gates"
        total = sum(g.timeout_s for g in self._inp.gates) + 60
        request = GatesInput(
            ws,
            list(self._inp.gates),
            self._ctx(),
            self._inp.limits.max_output_bytes,
            f"{self._inp.run_dir}/logs/{self._inp.spec.task_id}",
            status.context,
        )
        gates = await self._step(
            "gates", TaskActivities.run_gates, request, timedelta(seconds=total)
        )
        status.last_gates = list(gates.results)
        status.events_dropped += gates.events_dropped
        for r in gates.results:
            verdict = "pass" if r.passed else ("FAIL" if r.required else "warn")
            self._log(
                "gate",
                f"{r.name}: {verdict} in {r.duration_ms:.0f} ms",
                {"name": r.name, "passed": r.passed, "required": r.required},
            )
        return gates

    async def _review(self, ws: Workspace, gates: GatesStep, dev: DeveloperStep) -> ReviewStep:
        review = await self._call_reviewer(ws, gates.summary, "")
        if review.verdict != "need_more_info":
            return review
        if review.reason in _FALLBACKS:
            # The agent already ran its own bounded enrichment and has a question for a human.
            await self._escalate(review.reason, review.summary or "reviewer needs more information")
        # One bounded enrichment, and a second call only when the evidence actually changed.
        before = evidence_fingerprint(dev.diff_hash, [], [asdict(f) for f in review.findings])
        enrichment = await workflow.execute_activity_method(
            TaskActivities.enrich,
            EnrichInput(
                self._inp.spec,
                ws,
                list(review.needed_evidence),
                [r.log_path for r in gates.results if r.log_path],
            ),
            start_to_close_timeout=SHORT_TIMEOUT,
            retry_policy=self._retry(),
        )
        after = evidence_fingerprint(dev.diff_hash, [], [{"evidence": enrichment.fingerprint}])
        self._log(
            "enrichment",
            f"gathered {', '.join(enrichment.kinds) or 'nothing'}",
            {"before": before, "after": after},
        )
        if not enrichment.text:
            await self._escalate(
                FallbackReason.NO_NEW_EVIDENCE,
                f"reviewer needs {', '.join(review.needed_evidence) or 'more information'}: "
                f"{review.summary}",
            )
        second = await self._call_reviewer(ws, gates.summary, enrichment.text)
        if second.verdict == "need_more_info":
            await self._escalate(
                FallbackReason.NO_NEW_EVIDENCE, f"reviewer still needs more: {second.summary}"
            )
        return second

    async def _call_reviewer(self, ws: Workspace, gate_summary: str, evidence: str) -> ReviewStep:
        status = self._state
        status.phase = "reviewer"
        request = ReviewInput(
            self._inp.spec, ws, self._ctx(), gate_summary, list(status.flags), evidence
        )
        review = await self._step(
            "reviewer",
            TaskActivities.review,
            request,
            timedelta(seconds=self._inp.limits.reviewer_timeout_s),
        )
        status.last_verdict = review
        self._last_review = review
        status.events_dropped += review.events_dropped
        self._spend(review.tokens_used)
        # A reviewer that gave up reports request_changes with reason abstain: say abstain.
        shown = "abstain" if review.reason == FallbackReason.ABSTAIN.value else review.verdict
        self._log(
            "review",
            f"{shown} by {review.reviewer}: {review.summary}".strip(),
            {"findings": [f.message for f in review.findings]},
        )
        return review

    async def _commit(self, ws: Workspace, reviewer: str, approved_by: str) -> None:
        status = self._state
        status.phase = "committing"
        step = await workflow.execute_activity_method(
            TaskActivities.commit,
            CommitInput(
                self._inp.spec,
                ws,
                self._ctx(),
                reviewer,
                approved_by,
                commit_key=workflow.info().workflow_id,
            ),
            start_to_close_timeout=SHORT_TIMEOUT,
            retry_policy=self._retry(),
        )
        status.commit_id = step.commit_id
        self._log("commit", f"committed {step.commit_id[:10]} on {ws.branch}")

    async def _retry_or_escalate(self, fingerprint: str, why: str) -> None:
        status = self._state
        if fingerprint in status.fingerprints:
            status.fingerprints.append(fingerprint)
            await self._escalate(
                FallbackReason.NO_NEW_EVIDENCE,
                f"{why}, and the evidence is identical to an earlier attempt",
                fingerprint,
            )
        status.fingerprints.append(fingerprint)
        status.retries += 1
        if status.retries <= self._max_retries:
            self._log("retry", f"{why}; retry {status.retries}/{self._max_retries}")
        else:
            await self._escalate(
                FallbackReason.BUDGET_EXHAUSTED,
                f"{why}; {status.retries - 1} retries used of {self._max_retries}",
                fingerprint,
            )

    # ----- escalation and risk signals --------------------------------------------------------

    async def _safe_point(self, before_commit: bool = False, cancelled: str = "") -> None:
        """Honour a pending halt (wait for a human) or pause / context pressure (checkpoint).

        ``cancelled`` names the step a halt or pause has just cancelled, for the message.
        """
        after = f"; the running {cancelled} step was cancelled" if cancelled else ""
        if self._halt is not None:
            signal = self._halt
            what = signal.message or "halt requested by the risk monitor"
            await self._escalate(
                signal.reason, f"halt ({signal.reason}): {what}{after}", None, "halt"
            )
        if before_commit:
            return
        if self._pause is not None:
            self._checkpoint_due = f"pause ({self._pause.reason}){after}"
        if self._checkpoint_due is not None:
            await self._checkpoint_and_continue(self._checkpoint_due)

    def _stop_requested(self) -> str | None:
        """``halt`` or ``pause`` when the risk monitor asked the running step to stop."""
        if self._halt is not None:
            return "halt"
        return "pause" if self._pause is not None else None

    async def _step(self, name: str, method: StepMethod[P, T], arg: P, timeout: timedelta) -> T:
        """Run one step's activity; a halt or pause (already pending, or arriving while it runs)
        cancels it, waits until the activity has stopped, and is acted on at once."""

        def start(cancellation: ActivityCancellationType) -> ActivityHandle[T]:
            return workflow.start_activity_method(
                method,
                arg,
                start_to_close_timeout=timeout,
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                retry_policy=self._retry(),
                cancellation_type=cancellation,
            )

        if self._interruptible is None:
            self._interruptible = workflow.patched(PATCH_INTERRUPT)
        if not self._interruptible:
            return await start(ActivityCancellationType.TRY_CANCEL)
        if self._stop_requested() is not None:
            await self._interrupted(name, started=False)
        # Waiting for the cancellation to complete: the gate's processes are gone and the
        # agent's LLM call is abandoned before anyone is asked or a checkpoint is taken.
        handle = start(ActivityCancellationType.WAIT_CANCELLATION_COMPLETED)
        try:
            await workflow.wait_condition(
                lambda: handle.done() or self._stop_requested() is not None
            )
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
            pass  # cancelled (or failed on the way out): the step did not finish
        await self._interrupted(name, started=True)

    async def _interrupted(self, name: str, started: bool) -> NoReturn:
        """Log the stopped step, then escalate (halt) or checkpoint (pause); never returns."""
        level = self._stop_requested()
        what = "cancelled" if started else "not started"
        self._log("cancelled", f"{name} step {what}: {level} from the risk monitor", {"step": name})
        self._step_cancelled = self._step_cancelled or started
        await self._safe_point(cancelled=name if started else "")
        raise AssertionError("a halt or pause always leaves the step")  # pragma: no cover

    def _spend(self, tokens: int) -> None:
        """Account tokens to the loop's context and check the pressure level."""
        status = self._state
        self._tokens_spent += tokens
        # The loop's context: the task itself plus what this run's agent calls added to it.
        self._context_used = max(self._context_used, self._base_tokens) + tokens
        snapshot = self._tracker.observe(status.iteration, self._context_used)
        status.context = snapshot
        if should_checkpoint(snapshot) and self._checkpoint_due is None:
            self._checkpoint_due = f"context {snapshot.pressure} at {snapshot.utilization:.0%}"
            self._log("context", f"{snapshot.pressure} pressure: checkpoint before next step")

    async def _checkpoint_and_continue(self, why: str) -> None:
        """Commit to a checkpoint branch and continue as a new run with a fresh context."""
        status = self._state
        number = len(status.checkpoints) + 1
        if number > MAX_CHECKPOINTS:
            source = "pause" if self._pause is not None else "loop"
            self._checkpoint_due = None
            await self._escalate(
                FallbackReason.BUDGET_EXHAUSTED,
                f"{why}; all {MAX_CHECKPOINTS} checkpoints are used",
                None,
                source,
            )
        status.phase = "checkpoint"
        step = await workflow.execute_activity(
            context_activities.checkpoint,
            CheckpointInput(
                self._inp.spec,
                self._ws,
                number,
                f"{workflow.info().workflow_id}/checkpoint-{number}",
                list(self._last_files),
                scan=self._step_cancelled,
            ),
            start_to_close_timeout=SHORT_TIMEOUT,
            retry_policy=self._retry(),
        )
        refs = [*status.checkpoints, step.ref] if step.ref else list(status.checkpoints)
        self._log("checkpoint", f"{why}: {step.ref or 'no changes'} at {step.commit_id[:10]}")
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(
            replace(
                self._inp,
                continuation=Continuation(
                    checkpoint_ref=step.ref,
                    checkpoints=number,
                    iteration=status.iteration,
                    criteria=list(self._inp.spec.criteria),
                    decisions=[*self._carried, *step.decisions],
                    fingerprints=list(status.fingerprints),
                    log=status.log[-MAX_CARRIED_LOG:],
                    flags=list(self._flags),
                    assignment=list(status.assignment),
                    events_dropped=status.events_dropped,
                    window=self._tracker.window,
                    base_tokens=self._base_tokens,
                    checkpoint_refs=refs,
                    retries=status.retries,
                    feedback=list(self._feedback),
                    guidance=self._guidance,
                    tokens_spent=self._tokens_spent,
                    elapsed_s=self._elapsed(),
                    max_retries=self._max_retries,
                    max_iterations=self._max_iterations,
                    escalations=self._escalations,
                    signal_ids=sorted(self._signal_ids),
                    scope_flagged=sorted(self._scope_flagged),
                    # A pause is answered by this very checkpoint; a halt still needs a human.
                    halt=self._halt,
                ),
            )
        )

    async def _escalate(
        self, reason: str, message: str, fingerprint: str | None = None, source: str = "loop"
    ) -> None:
        """Publish an escalation and wait for ``resolve_escalation``; raises ``_Resolved``."""
        status = self._state
        self._escalations += 1
        escalation = Escalation(
            escalation_id=f"{status.task_id}-{self._escalations}",
            task_id=status.task_id,
            reason=str(reason),
            message=message,
            iteration=status.iteration,
            retries=status.retries,
            fingerprint=fingerprint,
            source=source,
        )
        # Cleared before the escalation is visible: an answer may arrive while it is published.
        self._resolution = None
        status.pending_escalation = escalation
        previous_phase, status.phase = status.phase, "escalated"
        status.paused = source == "pause"
        status.halted = source == "halt"
        self._log("escalation", f"{reason}: {message}", {"escalation_id": escalation.escalation_id})
        await self._publish(
            "escalation",
            {
                "reason": str(reason),
                "retries": status.retries,
                "fingerprint": fingerprint,
                "question": message,
                "source": source,
                "escalation_id": escalation.escalation_id,
                "event_key": escalation.escalation_id,
            },
            signal_level="escalate",
            signal_reason=str(reason),
            signal_message=message,
        )
        await workflow.wait_condition(lambda: self._resolution is not None)
        resolution = self._resolution
        assert resolution is not None
        self._resolution = None
        status.pending_escalation = None
        status.retries = 0
        status.paused = status.halted = False
        self._pause = self._halt = None
        status.phase = previous_phase
        self._log(
            "resolution",
            f"{resolution.action} by {resolution.resolved_by}"
            + (f": {resolution.guidance}" if resolution.guidance else ""),
        )
        await self._publish(
            "escalation",
            {
                "resolved": True,
                "action": resolution.action,
                # The risk monitor raises its own retry threshold by what the human granted.
                "extra_retries": self._granted_retries(resolution),
                "escalation_id": escalation.escalation_id,
                "event_key": f"{escalation.escalation_id}-resolved",
            },
        )
        raise _Resolved(resolution, str(reason))

    def _granted_retries(self, resolution: Resolution) -> int:
        """Retries an ``extend_budget`` answer adds (the configured bound when it names none)."""
        if resolution.action != "extend_budget":
            return 0
        return resolution.extra_retries or self._inp.limits.max_retries

    @workflow.update(name=UPDATE_RESOLVE)
    async def resolve_escalation(self, resolution: Resolution) -> ResolutionAck:
        """A human's answer to the pending escalation."""
        pending = self._state.pending_escalation
        assert pending is not None
        self._resolution = resolution
        return ResolutionAck(pending.escalation_id, resolution.action)

    @resolve_escalation.validator
    def _validate_resolution(self, resolution: Resolution) -> None:
        status = self._status
        if status is None or status.pending_escalation is None or self._resolution is not None:
            task = status.task_id if status else "this task"
            raise ValueError(f"task {task} is not waiting on an escalation")
        if resolution.action not in RESOLUTION_ACTIONS:
            raise ValueError(
                f"unknown action {resolution.action!r}; expected one of "
                + ", ".join(RESOLUTION_ACTIONS)
            )
        if resolution.action == "retry" and not (resolution.guidance or "").strip():
            raise ValueError("action retry needs guidance for the developer (--guidance TEXT)")
        if resolution.extra_retries < 0:
            raise ValueError("extra_retries must be >= 0")

    @workflow.signal(name=SIGNAL_PAUSE)
    def pause(self, signal: RiskSignalInput) -> None:
        """Risk monitor: stop at the next safe point and wait for a human."""
        if self._first(signal, "pause"):
            self._pause = signal

    @workflow.signal(name=SIGNAL_HALT)
    def halt(self, signal: RiskSignalInput) -> None:
        """Risk monitor: make no further changes (no developer step, no commit) until answered."""
        if self._first(signal, "halt"):
            self._halt = signal

    @workflow.signal(name=SIGNAL_FLAG)
    def flag(self, signal: RiskSignalInput) -> None:
        """Risk monitor: tell the reviewer about a concern (e.g. scope creep)."""
        if self._first(signal, "flag") and not self._already_flagged(signal):
            note = f"{signal.reason}: {signal.message}" if signal.message else signal.reason
            self._flags.append(note)

    def _already_flagged(self, signal: RiskSignalInput) -> bool:
        """Whether a scope-creep flag names only files the reviewer has been told about.

        Either side may be first: the monitor's signal can arrive before the developer step's
        result, so the files it names are noted and the loop does not flag them again.
        """
        outside = signal.evidence.get("outside")
        if signal.reason != RiskReason.SCOPE_CREEP.value or not isinstance(outside, list):
            return False
        files = set(map(str, outside))
        known = bool(files) and files <= self._scope_flagged
        self._scope_flagged.update(files)
        return known

    def _first(self, signal: RiskSignalInput, kind: str) -> bool:
        """Dedupe signals by id; log each new one."""
        if signal.signal_id and signal.signal_id in self._signal_ids:
            return False
        if signal.signal_id:
            self._signal_ids.add(signal.signal_id)
        # The level only adds news when it differs from the action (a flag sent at warn).
        label = kind if signal.level == kind else f"{kind} ({signal.level})"
        line = f"{label}: {signal.reason} {signal.message}".strip()
        if self._status is None:
            self._early_signals.append(line)  # arrived with the start; logged once running
        else:
            self._log("signal", line)
        return True

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> TaskStatus:
        """Phase, iteration, retries, gates, verdict, escalation, fingerprints and log."""
        if self._status is None:
            raise ApplicationError("task is starting")
        return self._status

    # ----- helpers ----------------------------------------------------------------------------

    @property
    def _state(self) -> TaskStatus:
        assert self._status is not None
        return self._status

    def _elapsed(self) -> float:
        """Seconds since the task started, over every run."""
        run = (workflow.now() - workflow.info().start_time).total_seconds()
        return self._elapsed_before + run

    def _ctx(self) -> EventContext:
        info = workflow.info()
        return EventContext(
            task_id=self._inp.spec.task_id,
            plan_id=self._inp.spec.plan_id,
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            iteration=self._state.iteration,
        )

    def _retry(self) -> RetryPolicy:
        return RetryPolicy(
            initial_interval=timedelta(seconds=1),
            backoff_coefficient=2.0,
            maximum_interval=timedelta(seconds=20),
            maximum_attempts=self._inp.limits.activity_attempts,
            non_retryable_error_types=NON_RETRYABLE,
        )

    def _log(self, kind: str, message: str, data: dict[str, Any] | None = None) -> None:
        status = self._state
        status.log.append(LogEntry(status.iteration, kind, message, dict(data or {})))

    async def _publish(
        self,
        kind: str,
        data: dict[str, Any],
        signal_level: str | None = None,
        signal_reason: str | None = None,
        signal_message: str = "",
    ) -> None:
        result = await workflow.execute_activity_method(
            TaskActivities.publish,
            PublishInput(self._ctx(), kind, data, signal_level, signal_reason, signal_message),
            start_to_close_timeout=SHORT_TIMEOUT,
            retry_policy=self._retry(),
        )
        self._state.events_dropped += result.dropped


class _Resolved(Exception):
    """Internal: a human answered an escalation; the loop acts on ``resolution``."""

    def __init__(self, resolution: Resolution, reason: str) -> None:
        super().__init__(resolution.action)
        self.resolution = resolution
        self.reason = reason


_FALLBACKS = {r.value for r in FallbackReason}


def _findings_text(review: ReviewStep) -> str:
    lines = [f"Reviewer requested changes: {review.summary}".strip()]
    for f in review.findings:
        where = f" ({f.file}:{f.line})" if f.file and f.line else (f" ({f.file})" if f.file else "")
        about = f" [criterion: {f.criterion}]" if f.criterion else ""
        lines.append(f"- {f.severity}: {f.message}{where}{about}")
    return "\n".join(lines)


def _is_input_error(err: ActivityError) -> bool:
    cause = err.cause
    return isinstance(cause, ApplicationError) and cause.type in NON_RETRYABLE


def _reason_of(err: ActivityError) -> str:
    cause = err.cause
    if isinstance(cause, TimeoutError):
        return FallbackReason.TIMEOUT.value
    if isinstance(cause, ApplicationError) and cause.type in _FALLBACKS:
        return str(cause.type)
    return FallbackReason.TRANSPORT_ERROR.value


def _message_of(err: ActivityError) -> str:
    cause = err.cause
    return str(cause.message if isinstance(cause, ApplicationError) else cause or err)
