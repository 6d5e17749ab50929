"""Landing approved work from the task loop, for tasks that land themselves (``auto_land``).

With ``loop.land: auto`` (or ``land: auto`` in the task or plan file) a task lands its approved
commit on the base branch right after the commit, through the same ``land.run`` activity and
per-base-branch queue as ``semspec task land`` (docs/landing.md). Landed: the task finishes
approved, its status's ``land`` says where. A conflict, a gate failing on the combined result,
or a refused land asks a human (``land_conflict``, ``land_gate_failed``, ``land_refused``), and
the answer is acted on here:

- ``retry`` (and ``extend_budget``): the task starts again on the base as it is now (the task
  branch moves to its tip, ``restart_activity``) and the developer makes the change again, told
  why the land failed and shown the change approved before; the loop goes on (None), with
  ``workspace`` the task's new workspace;
- ``approve``: the land is tried again as it is (after a person fixed the task branch, or their
  checkout);
- ``abort``: the task ends ``aborted``; its branch keeps the approved commit.

A task that does not land itself (every task recorded before ``auto_land`` existed) finishes as
before, with no command added: recorded histories replay unchanged (ADR 0007). Subtasks never
land: they share their parent's branch, which holds the task's whole work only at the end.
Call only from the workflow.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from semspec.core.reasons import FallbackReason
from semspec.workflow.task.land_messages import (
    ALREADY_LANDED,
    CONFLICT,
    GATE_FAILED,
    LAND_ACTIVITY,
    LANDED,
    LandInput,
    LandResult,
)
from semspec.workflow.task.loop.calls import ActivityCalls, message_of, was_cancelled
from semspec.workflow.task.loop.escalator import Escalator
from semspec.workflow.task.loop.outcomes import Finished
from semspec.workflow.task.loop.state import TaskState
from semspec.workflow.task.messages import TaskInput, Workspace
from semspec.workflow.task.restart_activity import RestartInput, RestartStep, restart_on_base

LAND_TIMEOUT = timedelta(hours=2)
"""A land may wait behind others in its base branch's queue; it heartbeats while it waits."""
LAND_HEARTBEAT = timedelta(minutes=2)
LAND_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=2))
"""As ``LandWorkflow``'s: a land is safe to retry (compare-and-swap; already landed is landed)."""
STRATEGY = "rebase"
"""How a task lands itself when the base moved (``semspec task land --merge`` for a merge)."""
FEEDBACK_CHARS = 4_000
"""Gate output carried in an escalation's message is cut here (the whole is in the land log)."""

_REASONS = {CONFLICT: FallbackReason.LAND_CONFLICT, GATE_FAILED: FallbackReason.LAND_GATE_FAILED}


@dataclass(frozen=True)
class LandFailure:
    """Why a land did not land: the escalation's reason and message, and the land's result."""

    reason: FallbackReason
    message: str
    result: LandResult | None = None


class Landing:
    """Lands the task's approved commit and acts on the answers about a land that failed."""

    def __init__(
        self, inp: TaskInput, state: TaskState, ask: Escalator, calls: ActivityCalls
    ) -> None:
        self._inp = inp
        self._state = state
        self._ask = ask
        self._calls = calls
        self.workspace: Workspace | None = None
        """The task's workspace after it started again on the base (None: unchanged)."""

    async def after_approval(self, ws: Workspace) -> Finished | None:
        """The end of the task once its work is approved and committed: landed (or not landing
        itself) ``approved``, or ``aborted`` by a human; None when the developer makes the change
        again on the moved base (``workspace`` is then where)."""
        spec, status = self._inp.spec, self._state.status
        if not spec.auto_land or spec.workspace_id is not None or not status.commit_id:
            return Finished("approved")
        while True:
            failed = await self._land()
            if failed is None:
                return Finished("approved")
            answer = await self._ask.ask(failed.reason, failed.message)
            res = answer.resolution
            if res.action == "abort":
                self._state.log("land", f"aborted; {status.branch} keeps the approved commit")
                return Finished("aborted", answer.reason)
            if res.action == "approve":
                continue  # land the branch again as it is (a person may have fixed it)
            if res.action == "extend_budget":
                self._state.grant_retries(self._ask.granted_retries(res))
            await self._restart(ws, failed, res.guidance)
            return None

    async def _land(self) -> LandFailure | None:
        """Land the task branch; None when it landed (or already had), else why not."""
        spec, state = self._inp.spec, self._state
        state.enter("landing")
        state.land_changed({"state": "queued"})
        state.log("land", f"landing {state.status.branch} on {spec.base_branch}")
        land = LandInput(
            task_id=spec.workspace_key,
            repo_path=spec.repo_path,
            base_branch=spec.base_branch,
            run_dir=self._inp.run_dir,
            strategy=STRATEGY,
            gates=[gate for gate in self._inp.gates if gate.required],
            max_output_bytes=self._inp.limits.max_output_bytes,
        )
        try:
            result: LandResult = await workflow.execute_activity(
                LAND_ACTIVITY,
                land,
                result_type=LandResult,
                start_to_close_timeout=LAND_TIMEOUT,
                heartbeat_timeout=LAND_HEARTBEAT,
                retry_policy=LAND_RETRY,
            )
        except ActivityError as err:
            if was_cancelled(err):
                raise asyncio.CancelledError() from err
            message = f"the land of {spec.task_id} failed: {message_of(err)}"
            state.land_changed(_failed(FallbackReason.LAND_REFUSED, message))
            return LandFailure(FallbackReason.LAND_REFUSED, message)
        if result.outcome in (LANDED, ALREADY_LANDED):
            state.land_changed({"state": "landed", "commit": result.commit})
            how = "already there" if result.outcome == ALREADY_LANDED else result.method
            state.log("land", f"landed on {spec.base_branch} at {result.commit[:12]} ({how})")
            return None
        reason = _REASONS.get(result.outcome, FallbackReason.LAND_REFUSED)
        state.land_changed(_failed(reason, result.message))
        return LandFailure(reason, _question(result, spec.base_branch), result)

    async def _restart(self, ws: Workspace, failed: LandFailure, guidance: str | None) -> None:
        """Start the work again on the base's tip, with the land's failure as feedback."""
        spec, state, loop = self._inp.spec, self._state, self._state.loop
        state.enter("workspace")
        step: RestartStep = await self._calls.start(
            restart_on_base,
            RestartInput(
                spec.workspace_key,
                spec.repo_path,
                spec.base_branch,
                self._inp.run_dir,
                ws.base_commit,
                state.status.commit_id or "",
                self._inp.limits.max_output_bytes,
            ),
        )
        self.workspace = new = step.workspace
        state.started_again(new)
        state.log("workspace", f"started again on {spec.base_branch} at {new.base_commit[:10]}")
        loop.feedback = [_redo_feedback(failed, spec.base_branch, new.base_commit, step)]
        loop.guidance = guidance


def _failed(reason: str, message: str) -> dict[str, str]:
    return {"state": "land failed", "reason": str(reason), "message": message}


def _question(result: LandResult, base: str) -> str:
    """The escalation's message: what failed, the gate's output, and what each answer does."""
    lines = [f"approved, not landed: {result.message}"]
    if result.gate_feedback:
        lines.append(result.gate_feedback[:FEEDBACK_CHARS])
    if result.outcome not in _REASONS and result.hint:
        lines.append(f"hint: {result.hint}")
    lines.append(
        f"retry: the developer makes the change again on {base} as it is now; approve: land "
        "the task branch again as it is (fix it by hand first); abort: stop (the task branch "
        "keeps the approved commit)"
    )
    return "\n".join(lines)


def _redo_feedback(failed: LandFailure, base: str, tip: str, step: RestartStep) -> str:
    """What the developer is told when it makes the change again on the moved base."""
    result = failed.result
    why = result.message if result is not None else failed.message
    parts = [
        f"Your change was approved but did not land on {base}: {why}. {base} moved since "
        f"you started; the worktree now holds {base} as it is at {tip[:12]}, without your "
        "change. Make the change again on it, keeping what the others changed."
    ]
    if result is not None and result.conflicts:
        parts.append(f"Conflicting files: {', '.join(result.conflicts)}.")
    if result is not None and result.gate_feedback:
        parts.append(f"What the gates said on the combined result:\n{result.gate_feedback}")
    if step.approved_diff:
        cut = " (cut)" if step.diff_cut else ""
        parts.append(f"The change approved before{cut}:\n```diff\n{step.approved_diff}\n```")
    return "\n".join(parts)
