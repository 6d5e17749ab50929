"""``TaskWorkflow``: the durable developer → gates → reviewer loop of one task.

Deterministic: all I/O is in ``semspec.workflow.task.activities``. The loop is bounded by retries,
iterations and evidence fingerprints (``bounds``); whenever a bound is hit it escalates and waits
for a human's ``resolve_escalation`` update.

Risk-monitor signals (held in ``risk_signals``): ``flag`` is a note for the reviewer. ``halt`` and
``pause`` stop the step that is running: its activity (developer, gates or reviewer) is cancelled
and the workflow waits until the cancellation is done (the gate's process group is ended, the
agent's LLM call is abandoned), then a halt escalates to a human (source ``halt``; after a
``retry`` answer the loop runs the next iteration with the guidance) and a pause saves a
checkpoint at once and continues in a fresh run, escalating (source ``pause``) only when no
checkpoint is left. The commit and the short bookkeeping activities are not interrupted; a halt
that arrives before the commit stops it.

A checkpoint (continue-as-new) carries every bound: retries, granted retries and iterations,
the last feedback, unused guidance, tokens and time spent, the context window.

Only the stack's owner steers a task (ADR 0004): every run, child and continued runs included,
verifies its start signature, and asks the worker whether it serves the key the task names,
before any other step; answers and risk signals must carry the owner's signature for this task.
Refused ones are logged and counted in the status.

Loop events go to the monitor through an outbox in the workflow's state (``outbox``): the loop
queues an event and goes on, a drainer publishes the queue in order and retries while NATS is
down, and the workflow returns only once ``finished`` is out.

No ``workflow.patched`` branches: a task is finished by the minor version that started it
(ADR 0007); a change to the commands within a minor version adds one (``workflow.patches``).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, replace
from datetime import timedelta
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    # Raised from cryptography's Rust code, which imports it by name when a signature does not
    # verify: it must be in the sandbox already, or that import aborts the worker.
    import cryptography.exceptions  # noqa: F401

    # Our modules by name, not ``from package import module``: that form loads the module a second
    # time inside the sandbox, and its classes would differ from those the steps raise and return.
    # Protocol and gate types are imported (not only transitively) so the sandbox can resolve
    # their type hints when it decodes activity results.
    from semspec.agents import protocol as _agent_protocol  # noqa: F401
    from semspec.core.owner_key import verify
    from semspec.core.reasons import FallbackReason
    from semspec.vocabulary.events import RISK_SIGNAL, RiskSignalInput
    from semspec.vocabulary.workflow_names import (
        QUERY_STATUS,
        SIGNAL_FLAG,
        SIGNAL_HALT,
        SIGNAL_PAUSE,
        TASK_WORKFLOW,
        UPDATE_RESOLVE,
        subtask_id,
        task_workflow_id,
    )
    from semspec.workflow.context.monitor import ContextTracker
    from semspec.workflow.fingerprint import evidence_fingerprint
    from semspec.workflow.gates import types as _gate_types  # noqa: F401
    from semspec.workflow.task.activities import TaskActivities
    from semspec.workflow.task.context_activities import check_budget, checkpoint, finalize
    from semspec.workflow.task.dollars import usd
    from semspec.workflow.task.index_activity import ReindexInput, reindex_changes
    from semspec.workflow.task.loop.bounds import (
        Escalate,
        after_failure,
        after_review,
        checkpoint_cap,
        extended,
        granted_retries,
        iteration_cap,
        subtask_base_tokens,
    )
    from semspec.workflow.task.loop.calls import (
        ActivityCalls,
        fallback_reason,
        is_input_error,
        message_of,
        was_cancelled,
    )
    from semspec.workflow.task.loop.carry import LoopState, carry_over, restore
    from semspec.workflow.task.loop.child_start import signed_child
    from semspec.workflow.task.loop.empty_turn import NO_CHANGE_FEEDBACK, after_empty_turn
    from semspec.workflow.task.loop.escalations import Escalations, UnsignedAnswer
    from semspec.workflow.task.loop.listing_memo import ListingMemo
    from semspec.workflow.task.loop.outbox import Outbox
    from semspec.workflow.task.loop.risk_signals import RiskSignals, SignalKind
    from semspec.workflow.task.loop.steps import Steps, StepStopped, usage_memo
    from semspec.workflow.task.messages import (
        TASK_START,
        BudgetInput,
        BudgetOutcome,
        CheckpointInput,
        EscalationSource,
        EventContext,
        FinalizeInput,
        LogEntry,
        OwnerCheckInput,
        PublishInput,
        Resolution,
        ResolutionAck,
        ReviewStep,
        TaskInput,
        TaskResult,
        TaskStatus,
        Workspace,
        WorkspaceInput,
        start_fields,
    )
    from semspec.workflow.task.owner_check import FOREIGN_OWNER, OwnerCheck, check_start
    from semspec.workflow.task.usage import UsageTotals  # noqa: F401  (type hints, as above)


REINDEX_TIMEOUT = timedelta(minutes=5)
"""Long enough for ``index_activity.MAX_PATHS`` files on a slow disk."""
REFUSALS_LOGGED = 3
"""Refused signals beyond this many are only counted: a flood must not grow the task log."""


class _Stop(Exception):
    """Internal: the loop is over with this outcome."""

    def __init__(self, outcome: str, reason: str | None = None) -> None:
        super().__init__(outcome)
        self.outcome = outcome
        self.reason = reason


class _Resolved(Exception):
    """Internal: a human answered an escalation; the loop acts on ``resolution``."""

    def __init__(self, resolution: Resolution, reason: str) -> None:
        super().__init__(resolution.action)
        self.resolution = resolution
        self.reason = reason


@workflow.defn(name=TASK_WORKFLOW)
class TaskWorkflow:
    """One task's loop; see the module docstring."""

    @workflow.init
    def __init__(self, inp: TaskInput) -> None:
        # Built from the input before any handler runs: a signal that arrives with the start
        # finds the status, and the signals a checkpoint carried over, in place.
        spec = inp.spec
        self._inp = inp
        self._inputs = 0
        """Signals and answers received: a continued run is built again if one came late."""
        self._signals_refused = 0
        self._activities = ActivityCalls(inp.limits.activity_attempts)
        self._signals = RiskSignals()
        self._state = state = LoopState.start(inp)
        self._ws: Workspace | None = None
        self._status = TaskStatus(
            task_id=spec.task_id,
            title=spec.title,
            phase="starting",
            iteration=0,
            retries=0,
            max_retries=state.max_retries,
            flags=self._signals.flags,
            task_files=list(spec.task_files),
            plan_id=spec.plan_id,
            budget_usd=state.dollars.cap_usd,
            models={
                "developer": f"{spec.developer.provider}:{spec.developer.model}",
                "reviewer": f"{spec.reviewer.provider}:{spec.reviewer.model}",
            },
        )
        self._escalations = Escalations(self._status, owner_key=inp.owner_key)
        self._outbox = Outbox(self._status)
        self._listing = ListingMemo(self._status)
        self._steps = Steps(
            inp,
            self._activities,
            self._status,
            state,
            self._signals,
            self._log,
            self._ctx,
            self._outbox.add,
            self._check_dollars,
        )
        if (cont := inp.continuation) is not None:
            restore(cont, self._status, self._signals, state)
            self._outbox.carried(cont.outbox)
            self._log("resumed", f"fresh context after checkpoint {cont.checkpoints}")

    # ----- the loop ---------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: TaskInput) -> TaskResult:
        self._listing.start()  # lists read the task from its memo (issue 31)
        await self._check_owner(inp)
        self._outbox.start()  # what the last run left queued goes out first
        try:
            if inp.check_budget and inp.continuation is None:
                budget = await self._check_budget()
                if budget.refusal is not None:
                    return await self._finish("refused", budget.refusal)
                if budget.groups:
                    outcome, reason = await self._run_subtasks(budget)
                    return await self._finish(outcome, reason)
            ws = self._ws = await self._prepare_workspace()
            outcome, reason = await self._loop(ws)
        except asyncio.CancelledError:
            await self._record_cancel()
            raise
        except ActivityError as err:
            if was_cancelled(err):
                await self._record_cancel()
                raise asyncio.CancelledError() from err
            # Only input errors get here (bad script, unknown branch): retrying cannot help.
            outcome, reason = "failed", message_of(err)
            self._log("finished", f"failed: {reason}")
        return await self._finish(outcome, reason)

    async def _check_owner(self, inp: TaskInput) -> None:
        """Fail at once unless the stack's owner started this run (ADR 0004, issue 25).

        Every run carries the owner's start signature: the CLI signs what it starts, the
        worker signs the subtasks, plan tasks and continued runs our workflows start. The
        worker then checks the signature against the one key it serves.
        """
        what, command = f"task {inp.spec.task_id}", "semspec task submit"
        check_start(inp, TASK_START, what, command)
        start = start_fields(workflow.info().workflow_id, inp)
        check = OwnerCheckInput(
            inp.spec.task_id, inp.owner_key, TASK_START, start, inp.start_signature
        )
        try:
            await self._activities.start(OwnerCheck.check_owner, check)
        except ActivityError as err:
            if was_cancelled(err):
                raise asyncio.CancelledError() from err
            raise ApplicationError(message_of(err), type=FOREIGN_OWNER, non_retryable=True) from err

    async def _prepare_workspace(self) -> Workspace:
        spec, status = self._inp.spec, self._status
        status.phase = "workspace"
        ws = await self._activities.start(
            TaskActivities.prepare_workspace,
            WorkspaceInput(
                spec.workspace_key,
                spec.repo_path,
                spec.base_branch,
                self._inp.run_dir,
                spec.after_commits,
            ),
        )
        status.branch = ws.branch
        status.worktree, status.base_commit = ws.path, ws.base_commit
        self._log("workspace", f"worktree on {ws.branch} at {ws.base_commit[:10]}")
        return ws

    async def _record_cancel(self) -> None:
        """Note the cancellation and tell the monitor the task is over."""
        status = self._status
        status.phase, status.outcome = "done", "cancelled"
        self._log("finished", "cancelled")
        await self._publish(
            "finished",
            {"outcome": "cancelled", "commit": None, "reason": None, **self._usage_fields()},
        )
        await self._outbox.drained()

    async def _finish(self, outcome: str, reason: str | None) -> TaskResult:
        """Record the outcome (knowledge, performance, cleanup), publish it, and return."""
        status = self._status
        # The outcome becomes visible only once the bookkeeping is done: whoever waits for it
        # (`task submit --wait`, the demo) may then read the graph or remove the repository.
        status.phase = "finishing"
        if outcome == "approved" and status.commit_id and status.base_commit:
            await self._reindex(status.base_commit, status.commit_id)
        review = self._state.last_review
        step = await self._activities.start(
            finalize,
            FinalizeInput(
                spec=self._inp.spec,
                outcome=outcome,
                iterations=status.iteration,
                tokens=self._state.tokens_spent,
                latency_s=self._elapsed(),
                review_summary=review.summary if review else "",
                noted_patterns=list(review.noted_patterns) if review else [],
                commit_id=status.commit_id,
                reviewer=review.reviewer if review else "",
            ),
        )
        if step.checkpoints_deleted:
            self._log("cleanup", f"deleted {len(step.checkpoints_deleted)} checkpoint branch(es)")
        self._log("finished", f"{outcome}" + (f": {reason}" if reason else ""))
        status.phase, status.outcome, status.reason = "done", outcome, reason
        await self._publish(
            "finished",
            {"outcome": outcome, "commit": status.commit_id, "reason": reason}
            | self._usage_fields(),
        )
        await self._outbox.drained()
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

    async def _reindex(self, base_commit: str, commit_id: str) -> None:
        """Bring the code graph up to the approved commit; a failure is logged, never fatal."""
        try:
            step = await self._activities.start(
                reindex_changes,
                ReindexInput(self._inp.spec.repo_path, base_commit, commit_id),
                REINDEX_TIMEOUT,
            )
        except ActivityError as err:
            if was_cancelled(err):
                raise asyncio.CancelledError() from err
            self._log("index", f"code graph not updated: {message_of(err)}")
            return
        counts = {"indexed": step.indexed, "removed": step.removed, "failed": step.failed}
        left = f", {step.left_over} more left for `semspec index`" if step.left_over else ""
        self._log(
            "index",
            f"code graph updated: {len(step.indexed)} indexed, {len(step.removed)} removed, "
            f"{len(step.failed)} failed{left}",
            counts,
        )

    async def _check_budget(self) -> BudgetOutcome:
        status = self._status
        status.phase = "budget"
        budget = await self._activities.start(check_budget, BudgetInput(self._inp.spec))
        status.assignment = list(budget.assignment)
        self._state.tracker = ContextTracker(window=budget.window)
        self._state.base_tokens = budget.base_tokens
        verdict = "fits" if budget.fits else ("refused" if budget.refusal else "too large")
        self._log("budget", f"{verdict}: window {budget.window:,} tokens", {"lines": budget.lines})
        return budget

    async def _run_subtasks(self, budget: BudgetOutcome) -> tuple[str, str | None]:
        """Run one child task per file group, in order, on this task's branch.

        Each child tracks its context in this task's window, starting from the task text and
        its own files (the parent's base without the other groups' files).
        """
        spec, status, dollars = self._inp.spec, self._status, self._state.dollars
        status.phase = "subtasks"
        groups = budget.groups
        for number, files in enumerate(groups, 1):
            child = replace(
                spec,
                task_id=subtask_id(spec.task_id, number),
                title=f"{spec.title} (part {number} of {len(groups)})",
                task_files=list(files),
                workspace_id=spec.workspace_key,
            )
            self._log("subtask", f"part {number}: {', '.join(files)}")
            child_id = task_workflow_id(child.task_id)
            child_inp = replace(
                self._inp,
                spec=child,
                check_budget=False,
                continuation=None,
                window=self._state.tracker.window,
                base_tokens=subtask_base_tokens(budget.base_tokens, budget.file_tokens, files),
                # The parts share this task's dollars: each may spend what the others left.
                share_usd=dollars.turn_budget(status.usage.cost_usd),
            )
            child_inp = await signed_child(child_id, child_inp, self._inp.limits.activity_attempts)
            result: TaskResult = await workflow.execute_child_workflow(
                TaskWorkflow.run, child_inp, id=child_id
            )
            status.usage.merge(result.status.usage)
            status.iteration_costs.extend(result.status.iteration_costs)
            status.subtasks.append(f"{child.task_id}: {result.outcome}")
            status.commit_id = result.commit_id or status.commit_id
            status.branch = result.branch or status.branch
            status.iteration += result.iterations
            if result.outcome != "approved":
                return result.outcome, f"part {number} ended {result.outcome}: {result.reason}"
        return "approved", None

    async def _loop(self, ws: Workspace) -> tuple[str, str | None]:
        while True:
            try:
                try:
                    await self._iteration(ws)
                except ActivityError as err:
                    if was_cancelled(err):
                        raise asyncio.CancelledError() from err  # the task was cancelled
                    if is_input_error(err):
                        raise
                    await self._escalate(fallback_reason(err), message_of(err))
            except _Stop as stop:
                return stop.outcome, stop.reason
            except _Resolved as answer:
                res = answer.resolution
                if res.action == "abort":
                    return "aborted", answer.reason
                if res.action == "approve":
                    await self._steps.commit(ws, "human", res.resolved_by)
                    return "approved", None
                state = self._state
                if res.action == "retry":
                    state.guidance = res.guidance
                if res.action == "extend_budget":
                    state.max_retries, state.max_iterations = extended(
                        state.max_retries, state.max_iterations, self._granted_retries(res)
                    )
                    self._status.max_retries = state.max_retries

    async def _iteration(self, ws: Workspace) -> None:
        """One pass of the loop; a step the risk monitor stopped is acted on at once."""
        try:
            await self._pass(ws)
        except StepStopped as stop:
            await self._interrupted(stop.step, stop.started)

    async def _pass(self, ws: Workspace) -> None:
        """Developer → gates → reviewer; leaves the feedback for the next pass."""
        status = self._status
        await self._safe_point()
        cap = iteration_cap(status.iteration, self._state.max_iterations)
        if cap is not None:
            await self._escalate(cap.reason, cap.message)
        status.iteration += 1
        dev = await self._steps.develop(ws)
        if dev.outcome != "submitted":
            await self._escalate(
                dev.reason or FallbackReason.BUDGET_EXHAUSTED,
                f"developer stopped: {dev.outcome} {dev.summary}".strip(),
            )
        if await self._empty_turn(dev.files_touched, dev.summary):
            return
        gates = await self._steps.gates(ws)
        if not gates.passed:
            failures = [
                {"name": r.name, "exit_code": r.exit_code, "timed_out": r.timed_out}
                for r in gates.results
                if r.required and not r.passed
            ]
            # Kept before the bound is checked: after a human's answer, or a checkpoint, the
            # next developer still sees what failed.
            self._state.feedback = [gates.feedback]
            await self._retry_or_escalate(
                evidence_fingerprint(dev.diff_hash, failures, []), "required gate failed"
            )
            return
        review = await self._steps.review(ws, gates, dev)
        if isinstance(review, Escalate):
            await self._escalate(review.reason, review.message)
        if review.verdict == "approve":
            await self._safe_point(before_commit=True)
            await self._steps.commit(ws, review.reviewer, "reviewer")
            raise _Stop("approved")
        escalate = after_review(review.verdict, review.reason, review.summary)
        if escalate is not None:
            await self._escalate(escalate.reason, escalate.message)
        findings = [asdict(f) for f in review.findings]
        self._state.feedback = [_findings_text(review)]
        await self._retry_or_escalate(
            evidence_fingerprint(dev.diff_hash, [], findings), "reviewer requested changes"
        )

    async def _empty_turn(self, files: list[str], summary: str) -> bool:
        """Whether the turn changed nothing and goes back to the developer (``empty_turn``);
        escalates ``no_change`` when it is not the first such turn in a row."""
        state = self._state
        if files:
            state.empty_turns = 0
            return False
        state.empty_turns += 1
        escalate = after_empty_turn(state.empty_turns, summary)
        if escalate is not None:
            state.empty_turns = 0  # a human's retry gets one more reminder before asking again
            await self._escalate(escalate.reason, escalate.message)
        state.feedback = [NO_CHANGE_FEEDBACK]
        self._log("retry", "the developer changed no file; sent back once")
        return True

    async def _retry_or_escalate(self, fingerprint: str, why: str) -> None:
        status, bound = self._status, self._state.max_retries
        retries, escalate = after_failure(
            fingerprint, status.fingerprints, status.retries, bound, why
        )
        status.fingerprints.append(fingerprint)
        status.retries = retries
        if escalate is not None:
            await self._escalate(escalate.reason, escalate.message, fingerprint)
        self._log("retry", f"{why}; retry {retries}/{bound}")

    async def _interrupted(self, name: str, started: bool) -> NoReturn:
        """Log the stopped step, then escalate (halt) or checkpoint (pause); never returns."""
        level = self._signals.stop_requested()
        what = "cancelled" if started else "not started"
        self._log("cancelled", f"{name} step {what}: {level} from the risk monitor", {"step": name})
        self._state.step_cancelled = self._state.step_cancelled or started
        await self._safe_point(cancelled=name if started else "")
        raise AssertionError("a halt or pause always leaves the step")  # pragma: no cover

    # ----- safe points, checkpoints and escalations -------------------------------------------

    async def _safe_point(self, before_commit: bool = False, cancelled: str = "") -> None:
        """Honour a pending halt (wait for a human) or pause / context pressure (checkpoint).

        ``cancelled`` names the step a halt or pause has just cancelled, for the message.
        """
        after = f"; the running {cancelled} step was cancelled" if cancelled else ""
        if (halt := self._signals.halt) is not None:
            what = halt.message or "halt requested by the risk monitor"
            await self._escalate(halt.reason, f"halt ({halt.reason}): {what}{after}", None, "halt")
        if before_commit:
            return
        if (pause := self._signals.pause) is not None:
            self._state.checkpoint_due = f"pause ({pause.reason}){after}"
        if self._state.checkpoint_due is not None:
            await self._checkpoint_and_continue(self._state.checkpoint_due)

    async def _checkpoint_and_continue(self, why: str) -> NoReturn:
        """Commit to a checkpoint branch and continue as a new run with a fresh context."""
        status, state = self._status, self._state
        number = len(status.checkpoints) + 1
        if (cap := checkpoint_cap(number, why)) is not None:
            source: EscalationSource = "pause" if self._signals.pause is not None else "loop"
            state.checkpoint_due = None
            await self._escalate(cap.reason, cap.message, None, source)
        assert self._ws is not None
        status.phase = "checkpoint"
        step = await self._activities.start(
            checkpoint,
            CheckpointInput(
                self._inp.spec,
                self._ws,
                number,
                f"{workflow.info().workflow_id}/checkpoint-{number}",
                list(state.last_files),
                scan=state.step_cancelled,
            ),
        )
        self._log("checkpoint", f"{why}: {step.ref or 'no changes'} at {step.commit_id[:10]}")
        while True:
            await workflow.wait_condition(workflow.all_handlers_finished)
            received = self._inputs
            cont = carry_over(
                self._inp, status, self._signals, state, step, number, self._elapsed()
            )
            # Events still queued go with the run: the next one sends them first, under their ids.
            cont = replace(cont, outbox=self._outbox.pending)
            arg = replace(self._inp, continuation=cont)
            # The next run verifies its start like any other: the worker signs it. A signal or
            # answer that came while it signed must reach the next run, so build it again.
            info = workflow.info()
            arg = await signed_child(info.workflow_id, arg, self._inp.limits.activity_attempts)
            if received == self._inputs:
                break
        # Without the memo the next run would start with this run's first memo, not its usage.
        workflow.continue_as_new(arg, memo=usage_memo(status))

    async def _escalate(
        self,
        reason: str,
        message: str,
        fingerprint: str | None = None,
        source: EscalationSource = "loop",
        dollars: bool = False,
    ) -> NoReturn:
        """Publish an escalation and wait for ``resolve_escalation``; raises ``_Resolved``.

        ``dollars``: the question is about the dollar budget (spent, or an unpriced model).
        """
        status = self._status
        self._state.escalations += 1
        # The nonce binds a signed answer to this one question (random, but replayed alike).
        nonce = str(workflow.uuid4())
        escalation = self._escalations.open(
            self._state.escalations, str(reason), message, fingerprint, source, nonce
        )
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
                "cost_usd": round(status.usage.cost_usd, 6),
                "budget_usd": status.budget_usd,
            },
            signal_level="escalate",
            signal_reason=str(reason),
            signal_message=message,
        )
        await workflow.wait_condition(lambda: self._escalations.answered)
        resolution = self._escalations.close()
        self._signals.answered()
        extra_usd = self._grant_usd(resolution, str(reason), dollars)
        self._log(
            "resolution",
            f"{resolution.action} by {resolution.resolved_by}"
            + (f": {resolution.guidance}" if resolution.guidance else "")
            + (f" (+{usd(extra_usd)})" if extra_usd else ""),
        )
        await self._publish(
            "escalation",
            {
                "resolved": True,
                "action": resolution.action,
                # The risk monitor raises its own retry threshold by what the human granted;
                # an answer to a question about dollars grants dollars only.
                "extra_retries": 0 if dollars else self._granted_retries(resolution),
                "extra_usd": round(extra_usd, 6),
                "escalation_id": escalation.escalation_id,
                "event_key": f"{escalation.escalation_id}-resolved",
            },
        )
        raise _Resolved(resolution, str(reason))

    def _grant_usd(self, resolution: Resolution, reason: str, dollars: bool) -> float:
        """Add the dollars an ``extend_budget`` answer grants; the dollars added.

        Any such answer adds the ``extra_usd`` it names; one to a spent dollar budget that
        names none adds the task's budget again.
        """
        if resolution.action != "extend_budget":
            return 0.0
        budget = self._state.dollars
        spent_budget = dollars and reason == FallbackReason.BUDGET_EXHAUSTED
        if not (resolution.extra_usd or spent_budget):
            return 0.0
        added = budget.grant(resolution.extra_usd)
        self._status.budget_usd = budget.cap_usd
        return added

    async def _check_dollars(self, stopped: str | None) -> None:
        """Before an agent call: escalate while the dollar budget says no (spent, or a model
        without a price); return once it holds again. ``stopped``: the agent just stopped its
        turn for this reason, which escalates even where the sums say the budget holds, so a
        turn is never run again without a human's answer.

        An answer that adds dollars, or accepts the unpriced model, lets the call go ahead in
        place; any other answer is the loop's to act on (abort, approve the work, retry).
        """
        budget, usage = self._state.dollars, self._status.usage
        stop = budget.check(usage)
        if stop is None and stopped is not None:
            stop = budget.stopped(stopped, usage)
        while stop is not None:
            try:
                await self._escalate(stop.reason, stop.message, dollars=True)
            except _Resolved as answer:
                res = answer.resolution
                if stop.reason == FallbackReason.UNKNOWN_PRICE and res.action != "abort":
                    # Asked once per task: any answer but abort accepts the model.
                    budget.accept_unpriced = True
                    if res.action == "retry":
                        self._state.guidance = res.guidance
                elif res.action != "extend_budget":
                    raise
            stop = budget.check(usage)

    def _granted_retries(self, resolution: Resolution) -> int:
        return granted_retries(
            resolution.action, resolution.extra_retries, self._inp.limits.max_retries
        )

    # ----- handlers: the human's answer, risk signals, status ---------------------------------

    @workflow.update(name=UPDATE_RESOLVE)
    async def resolve_escalation(self, resolution: Resolution) -> ResolutionAck:
        """A human's answer to the pending escalation."""
        self._inputs += 1
        return self._escalations.answer(resolution)

    @resolve_escalation.validator
    def _validate_resolution(self, resolution: Resolution) -> None:
        try:
            self._escalations.check(resolution)
        except UnsignedAnswer as refused:
            # A rejected update is not written to the history: only the count and the
            # worker's log keep it.
            self._refuse(str(refused), logged=False)
            raise

    @workflow.signal(name=SIGNAL_PAUSE)
    def pause(self, signal: RiskSignalInput) -> None:
        """Risk monitor: stop the running step and continue from a checkpoint."""
        self._receive(SIGNAL_PAUSE, signal)

    @workflow.signal(name=SIGNAL_HALT)
    def halt(self, signal: RiskSignalInput) -> None:
        """Risk monitor: make no further changes (no developer step, no commit) until answered."""
        self._receive(SIGNAL_HALT, signal)

    @workflow.signal(name=SIGNAL_FLAG)
    def flag(self, signal: RiskSignalInput) -> None:
        """Risk monitor: tell the reviewer about a concern (e.g. scope creep)."""
        self._receive(SIGNAL_FLAG, signal)

    def _receive(self, kind: SignalKind, signal: RiskSignalInput) -> None:
        self._inputs += 1
        # Checked before the signal id is noted: a forged copy must not pre-empt the real one.
        if not verify(
            self._inp.owner_key,
            signal.signature,
            RISK_SIGNAL,
            signal.signed_fields(kind, self._inp.spec.task_id),
        ):
            how = "wrongly signed" if signal.signature else "unsigned"
            self._refuse(f"{how} {kind} signal {signal.signal_id or '(no id)'} dropped")
            return
        if (line := self._signals.receive(kind, signal)) is not None:
            self._log("signal", line)

    def _refuse(self, message: str, logged: bool = True) -> None:
        """Count input that lacks the owner's signature; log the first few in the task log."""
        status = self._status
        status.refused += 1
        workflow.logger.warning("task %s: %s", status.task_id, message)
        if logged:
            # Counted apart: refused updates are not replayed, refused signals are.
            self._signals_refused += 1
            if self._signals_refused <= REFUSALS_LOGGED:
                self._log("refused", message)

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> TaskStatus:
        """Phase, iteration, retries, gates, verdict, escalation, fingerprints and log."""
        return self._status

    # ----- helpers ----------------------------------------------------------------------------

    def _usage_fields(self) -> dict[str, Any]:
        """What the task spent, for its ``finished`` event."""
        usage = self._status.usage
        return {
            "cost_usd": round(usage.cost_usd, 6),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_tokens,
            "unpriced_models": sorted(usage.unpriced_models),
        }

    def _elapsed(self) -> float:
        """Seconds since the task started, over every run."""
        run = (workflow.now() - workflow.info().start_time).total_seconds()
        return self._state.elapsed_before + run

    def _ctx(self) -> EventContext:
        info = workflow.info()
        return EventContext(
            task_id=self._inp.spec.task_id,
            plan_id=self._inp.spec.plan_id,
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            iteration=self._status.iteration,
        )

    def _log(self, kind: str, message: str, data: dict[str, Any] | None = None) -> None:
        status = self._status
        status.log.append(LogEntry(status.iteration, kind, message, dict(data or {})))

    async def _publish(
        self,
        kind: str,
        data: dict[str, Any],
        signal_level: str | None = None,
        signal_reason: str | None = None,
        signal_message: str = "",
    ) -> None:
        """Queue a loop event (an escalation with its user signal) for the monitor."""
        at = workflow.now().isoformat()
        event = PublishInput(
            self._ctx(), kind, data, signal_level, signal_reason, signal_message, at
        )
        self._outbox.add(event)


def _findings_text(review: ReviewStep) -> str:
    lines = [f"Reviewer requested changes: {review.summary}".strip()]
    for f in review.findings:
        where = f" ({f.file}:{f.line})" if f.file and f.line else (f" ({f.file})" if f.file else "")
        about = f" [criterion: {f.criterion}]" if f.criterion else ""
        lines.append(f"- {f.severity}: {f.message}{where}{about}")
    return "\n".join(lines)
