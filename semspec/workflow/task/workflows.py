"""``TaskWorkflow``: the durable developer → gates → reviewer loop of one task.

Deterministic: all I/O is in ``semspec.workflow.task.activities``; the loop's deterministic
parts are in ``semspec.workflow.task.loop``. The loop is bounded by retries, iterations and
evidence fingerprints (``bounds``); whenever a bound is hit it escalates and waits for a human's
``resolve_escalation`` update (``escalator``).

The workflow decides; its helpers report. A step (``steps``) returns its result, an
interruption or a budget stop; a question to a human returns the answer; a pass of the loop
returns ``Finished``, ``Answered`` or None (``outcomes``). No helper calls back into the workflow
and no exception carries a message. ``TaskState`` is the one writer of the status's progress.

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
from collections.abc import Awaitable, Callable
from dataclasses import asdict, replace
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    # Raised from cryptography's Rust code, which imports it by name when a signature does not
    # verify: it must be in the sandbox already, or that import aborts the worker.
    import cryptography.exceptions  # noqa: F401

    # Our modules by name, not ``from package import module``: that form loads the module a second
    # time inside the sandbox, and its classes would differ from those the steps return.
    # Protocol, gate, spec and step types are imported (not only transitively) so the sandbox
    # can resolve their type hints when it decodes the input and activity results.
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
    )
    from semspec.workflow.fingerprint import evidence_fingerprint
    from semspec.workflow.gates import types as _gate_types  # noqa: F401
    from semspec.workflow.task.activities import TaskActivities
    from semspec.workflow.task.context_activities import check_budget, checkpoint
    from semspec.workflow.task.loop.bounds import (
        after_review,
        checkpoint_cap,
        iteration_cap,
    )
    from semspec.workflow.task.loop.calls import (
        ActivityCalls,
        fallback_reason,
        is_input_error,
        message_of,
        was_cancelled,
    )
    from semspec.workflow.task.loop.carry import carry_over, restore
    from semspec.workflow.task.loop.child_start import signed_child
    from semspec.workflow.task.loop.empty_turn import NO_CHANGE_FEEDBACK, after_empty_turn
    from semspec.workflow.task.loop.escalations import Escalations, UnsignedAnswer
    from semspec.workflow.task.loop.escalator import Escalator
    from semspec.workflow.task.loop.finish import elapsed_s, finish, record_cancel
    from semspec.workflow.task.loop.landing import Landing
    from semspec.workflow.task.loop.listing_memo import ListingMemo
    from semspec.workflow.task.loop.outbox import Outbox
    from semspec.workflow.task.loop.outcomes import (
        Answered,
        BudgetStop,
        Finished,
        Interrupted,
        PassEnd,
    )
    from semspec.workflow.task.loop.owner import check_owner
    from semspec.workflow.task.loop.risk_signals import RiskSignals, SignalKind
    from semspec.workflow.task.loop.state import TaskState
    from semspec.workflow.task.loop.steps import Steps, findings_text, usage_memo
    from semspec.workflow.task.loop.subtasks import run_subtasks
    from semspec.workflow.task.loop.waiting import wait_for_earlier_tasks
    from semspec.workflow.task.messages import (
        BudgetInput,
        BudgetOutcome,
        CheckpointInput,
        DeveloperStep,
        EscalationSource,
        GatesStep,
        Resolution,
        ResolutionAck,
        ReviewStep,
        TaskInput,
        TaskResult,
        TaskStatus,
        Workspace,
        WorkspaceInput,
    )
    from semspec.workflow.task.step_messages import ReviewStep as _ReviewStep  # noqa: F401
    from semspec.workflow.task.task_spec import TaskSpec as _TaskSpec  # noqa: F401
    from semspec.workflow.task.usage import UsageTotals  # noqa: F401  (type hints, as above)


REFUSALS_LOGGED = 3
"""Refused signals beyond this many are only counted: a flood must not grow the task log."""

T = TypeVar("T")


@workflow.defn(name=TASK_WORKFLOW)
class TaskWorkflow:
    """One task's loop; see the module docstring."""

    @workflow.init
    def __init__(self, inp: TaskInput) -> None:
        # Built from the input before any handler runs: a signal that arrives with the start
        # finds the status, and the signals a checkpoint carried over, in place.
        self._inp = inp
        self._inputs = 0
        """Signals and answers received: a continued run is built again if one came late."""
        self._signals_refused = 0
        self._activities = ActivityCalls(inp.limits.activity_attempts)
        self._signals = RiskSignals()
        self._state = state = TaskState(inp, self._signals.flags)
        self._ws: Workspace | None = None
        self._escalations = Escalations(state.status, owner_key=inp.owner_key)
        self._outbox = Outbox(state.status)
        self._listing = ListingMemo(state.status)
        self._steps = Steps(inp, self._activities, state, self._signals, self._outbox)
        self._ask = Escalator(
            state, self._escalations, self._signals, self._outbox, inp.limits.max_retries
        )
        self._landing = Landing(inp, state, self._ask, self._activities)
        if (cont := inp.continuation) is not None:
            restore(cont, state.status, self._signals, state.loop)
            self._outbox.carried(cont.outbox)
            state.log("resumed", f"fresh context after checkpoint {cont.checkpoints}")

    # ----- the run ----------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: TaskInput) -> TaskResult:
        self._listing.start()  # lists read the task from its memo (issue 31)
        await check_owner(inp, self._activities)
        self._outbox.start()  # what the last run left queued goes out first
        try:
            if inp.check_budget and inp.continuation is None:
                budget = await self._check_budget()
                if budget.refusal is not None:
                    end = Finished("refused", budget.refusal)
                    return await finish(inp, self._state, self._activities, self._outbox, end)
                if budget.groups:
                    end = await run_subtasks(inp, self._state, budget)
                    return await finish(inp, self._state, self._activities, self._outbox, end)
            # Earlier tasks on the same files finish and land first (docs/landing.md).
            await wait_for_earlier_tasks(inp, self._state, self._activities)
            ws = self._ws = await self._prepare_workspace()
            end = await self._loop(ws)
        except asyncio.CancelledError:
            await record_cancel(self._state, self._outbox, inp, self._activities)
            raise
        except ActivityError as err:
            if was_cancelled(err):
                await record_cancel(self._state, self._outbox, inp, self._activities)
                raise asyncio.CancelledError() from err
            # Only input errors get here (bad script, unknown branch): retrying cannot help.
            end = Finished("failed", message_of(err))
            self._state.log("finished", f"failed: {end.reason}")
        return await finish(inp, self._state, self._activities, self._outbox, end)

    async def _check_budget(self) -> BudgetOutcome:
        state = self._state
        state.enter("budget")
        budget = await self._activities.start(check_budget, BudgetInput(self._inp.spec))
        state.budget_checked(budget)
        verdict = "fits" if budget.fits else ("refused" if budget.refusal else "too large")
        state.log("budget", f"{verdict}: window {budget.window:,} tokens", {"lines": budget.lines})
        return budget

    async def _prepare_workspace(self) -> Workspace:
        spec, state = self._inp.spec, self._state
        state.enter("workspace")
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
        state.workspace_ready(ws)
        state.log("workspace", f"worktree on {ws.branch} at {ws.base_commit[:10]}")
        return ws

    # ----- the loop ---------------------------------------------------------------------------

    async def _loop(self, ws: Workspace) -> Finished:
        """Passes until one finishes the task; a human's answer is acted on between passes."""
        while True:
            try:
                ws = self._ws = self._landing.workspace or ws  # a land's retry starts anew
                end = await self._pass(ws)
            except ActivityError as err:
                if was_cancelled(err):
                    raise asyncio.CancelledError() from err  # the task was cancelled
                if is_input_error(err):
                    raise
                end = await self._ask.ask(fallback_reason(err), message_of(err))
            if isinstance(end, Finished):
                return end
            if isinstance(end, Answered) and (done := await self._act_on(end, ws)) is not None:
                return done

    async def _act_on(self, answer: Answered, ws: Workspace) -> Finished | None:
        """What a human's answer does: end the task, commit it, or go on (None)."""
        res = answer.resolution
        if res.action == "abort":
            return Finished("aborted", answer.reason)
        if res.action == "approve":
            await self._steps.commit(ws, "human", res.resolved_by)
            return await self._landing.after_approval(ws)  # lands when it lands itself
        if res.action == "retry":
            self._state.loop.guidance = res.guidance
        if res.action == "extend_budget":
            self._state.grant_retries(self._ask.granted_retries(res))
        return None

    async def _pass(self, ws: Workspace) -> PassEnd:
        """Developer → gates → reviewer; leaves the feedback for the next pass."""
        state, loop = self._state, self._state.loop
        if (end := await self._safe_point()) is not None:
            return end
        cap = iteration_cap(state.status.iteration, loop.max_iterations)
        if cap is not None:
            return await self._ask.ask(cap.reason, cap.message)
        state.iteration_started()
        self._steps.begin_iteration()
        dev = await self._agent_step(lambda: self._steps.develop(ws))
        if not isinstance(dev, DeveloperStep):
            return dev
        if dev.outcome != "submitted":
            return await self._ask.ask(
                dev.reason or FallbackReason.BUDGET_EXHAUSTED,
                f"developer stopped: {dev.outcome} {dev.summary}".strip(),
            )
        if not dev.files_touched:
            return await self._empty_turn(dev.summary)
        loop.empty_turns = 0
        gates = await self._steps.gates(ws)
        if isinstance(gates, Interrupted):
            return await self._interrupted(gates)
        if not gates.passed:
            failures = [
                {"name": r.name, "exit_code": r.exit_code, "timed_out": r.timed_out}
                for r in gates.results
                if r.required and not r.passed
            ]
            # Kept before the bound is checked: after a human's answer, or a checkpoint, the
            # next developer still sees what failed.
            loop.feedback = [gates.feedback]
            fingerprint = evidence_fingerprint(dev.diff_hash, failures, [])
            return await self._retry_or_escalate(fingerprint, "required gate failed")
        review = await self._review(ws, gates, dev)
        if not isinstance(review, ReviewStep):
            return review
        if review.verdict == "approve":
            if (end := await self._safe_point(before_commit=True)) is not None:
                return end
            await self._steps.commit(ws, review.reviewer, "reviewer")
            return await self._landing.after_approval(ws)  # lands when it lands itself
        escalate = after_review(review.verdict, review.reason, review.summary)
        if escalate is not None:
            return await self._ask.ask(escalate.reason, escalate.message)
        findings = [asdict(f) for f in review.findings]
        loop.feedback = [findings_text(review)]
        fingerprint = evidence_fingerprint(dev.diff_hash, [], findings)
        return await self._retry_or_escalate(fingerprint, "reviewer requested changes")

    async def _review(
        self, ws: Workspace, gates: GatesStep, dev: DeveloperStep
    ) -> ReviewStep | Answered:
        """The reviewer's verdict; a reviewer that needs more information gets one bounded
        enrichment and a second call, and a question for a human when that does not help."""
        summary = gates.summary
        review = await self._agent_step(lambda: self._steps.review(ws, summary, ""))
        if not isinstance(review, ReviewStep) or review.verdict != "need_more_info":
            return review
        more = await self._steps.enrich(ws, gates, dev, review)
        if not isinstance(more, str):
            return await self._ask.ask(more.reason, more.message)
        evidence: str = more
        second = await self._agent_step(lambda: self._steps.review(ws, summary, evidence))
        if isinstance(second, ReviewStep) and second.verdict == "need_more_info":
            message = f"reviewer still needs more: {second.summary}"
            return await self._ask.ask(FallbackReason.NO_NEW_EVIDENCE, message)
        return second

    async def _agent_step(
        self, step: Callable[[], Awaitable[T | Interrupted | BudgetStop]]
    ) -> T | Answered:
        """Run an agent step until it has a result: a halt or pause is acted on at once, and a
        budget stop asks a human, running the step again when the answer lets it go ahead."""
        while True:
            outcome = await step()
            if isinstance(outcome, Interrupted):
                return await self._interrupted(outcome)
            if not isinstance(outcome, BudgetStop):
                return outcome
            if (answer := await self._ask.about_dollars(outcome.escalate)) is not None:
                return answer

    async def _empty_turn(self, summary: str) -> Answered | None:
        """A turn that changed no file goes back to the developer (None: the next pass), or
        escalates ``no_change`` when it is not the first such turn in a row (``empty_turn``)."""
        loop = self._state.loop
        loop.empty_turns += 1
        escalate = after_empty_turn(loop.empty_turns, summary)
        if escalate is not None:
            loop.empty_turns = 0  # a human's retry gets one more reminder before asking again
            return await self._ask.ask(escalate.reason, escalate.message)
        loop.feedback = [NO_CHANGE_FEEDBACK]
        self._state.log("retry", "the developer changed no file; sent back once")
        return None

    async def _retry_or_escalate(self, fingerprint: str, why: str) -> Answered | None:
        state = self._state
        if (escalate := state.failed_attempt(fingerprint, why)) is not None:
            return await self._ask.ask(escalate.reason, escalate.message, fingerprint)
        state.log("retry", f"{why}; retry {state.status.retries}/{state.loop.max_retries}")
        return None

    async def _interrupted(self, stop: Interrupted) -> Answered:
        """Log the stopped step, then escalate (halt) or checkpoint (pause, never returns)."""
        level = self._signals.stop_requested()
        what = "cancelled" if stop.started else "not started"
        self._state.log(
            "cancelled",
            f"{stop.step} step {what}: {level} from the risk monitor",
            {"step": stop.step},
        )
        self._state.loop.step_cancelled = self._state.loop.step_cancelled or stop.started
        end = await self._safe_point(cancelled=stop.step if stop.started else "")
        assert end is not None, "a halt or pause always leaves the step"
        return end

    # ----- safe points and checkpoints --------------------------------------------------------

    async def _safe_point(
        self, before_commit: bool = False, cancelled: str = ""
    ) -> Answered | None:
        """Honour a pending halt (ask a human) or pause / context pressure (checkpoint, which
        does not return unless no checkpoint is left); None when nothing is pending.

        ``cancelled`` names the step a halt or pause has just cancelled, for the message.
        """
        loop = self._state.loop
        after = f"; the running {cancelled} step was cancelled" if cancelled else ""
        if (halt := self._signals.halt) is not None:
            what = halt.message or "halt requested by the risk monitor"
            message = f"halt ({halt.reason}): {what}{after}"
            return await self._ask.ask(halt.reason, message, None, "halt")
        if before_commit:
            return None
        if (pause := self._signals.pause) is not None:
            loop.checkpoint_due = f"pause ({pause.reason}){after}"
        if loop.checkpoint_due is not None:
            return await self._checkpoint_and_continue(loop.checkpoint_due)
        return None

    async def _checkpoint_and_continue(self, why: str) -> Answered:
        """Commit to a checkpoint branch and continue as a new run with a fresh context; the
        human's answer instead when every checkpoint is used."""
        state, status = self._state, self._state.status
        number = len(status.checkpoints) + 1
        if (cap := checkpoint_cap(number, why)) is not None:
            source: EscalationSource = "pause" if self._signals.pause is not None else "loop"
            state.loop.checkpoint_due = None
            return await self._ask.ask(cap.reason, cap.message, None, source)
        assert self._ws is not None
        state.enter("checkpoint")
        step = await self._activities.start(
            checkpoint,
            CheckpointInput(
                self._inp.spec,
                self._ws,
                number,
                f"{workflow.info().workflow_id}/checkpoint-{number}",
                list(state.loop.last_files),
                scan=state.loop.step_cancelled,
            ),
        )
        state.log("checkpoint", f"{why}: {step.ref or 'no changes'} at {step.commit_id[:10]}")
        while True:
            await workflow.wait_condition(workflow.all_handlers_finished)
            received = self._inputs
            cont = carry_over(
                self._inp, status, self._signals, state.loop, step, number, elapsed_s(state)
            )
            # Events still queued go with the run: the next one sends them first, under their ids.
            cont = replace(cont, outbox=self._outbox.pending)
            # The next run verifies its start like any other: the worker signs it. A signal or
            # answer that came while it signed must reach the next run, so build it again.
            info = workflow.info()
            arg = replace(self._inp, continuation=cont)
            arg = await signed_child(info.workflow_id, arg, self._inp.limits.activity_attempts)
            if received == self._inputs:
                break
        # Without the memo the next run would start with this run's first memo, not its usage.
        workflow.continue_as_new(arg, memo=usage_memo(status))

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
            self._state.log("signal", line)

    def _refuse(self, message: str, logged: bool = True) -> None:
        """Count input that lacks the owner's signature; log the first few in the task log."""
        self._state.refused()
        workflow.logger.warning("task %s: %s", self._inp.spec.task_id, message)
        if logged:
            # Counted apart: refused updates are not replayed, refused signals are.
            self._signals_refused += 1
            if self._signals_refused <= REFUSALS_LOGGED:
                self._state.log("refused", message)

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> TaskStatus:
        """Phase, iteration, retries, gates, verdict, escalation, fingerprints and log."""
        return self._state.status
