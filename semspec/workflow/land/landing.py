"""One land: plan it, gate the combined result in a scratch worktree, then move the base ref.

Merge-queue semantics (docs/landing.md): what lands was tested as it lands. When the base moved
between planning and moving (the compare-and-swap in ``move_base`` failed), the land is planned
and gated again on the new base, at most ``max_attempts`` times. Blocking git work runs on a
thread; the gates run through the gate runner as a task's gates do.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from semspec.core.errors import GitError
from semspec.workflow.gates.baseline import GateSetup, base_of, judge_against_base
from semspec.workflow.gates.runner import GateFencing, Heartbeat, run_gates
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.git.land import (
    LandPlan,
    close_scratch,
    move_base,
    open_scratch,
    prepare_land,
)
from semspec.workflow.task.land_messages import (
    ALREADY_LANDED,
    CONFLICT,
    GATE_FAILED,
    LANDED,
    REFUSED,
    LandResult,
)

__all__ = [
    "ALREADY_LANDED",
    "CONFLICT",
    "GATE_FAILED",
    "LANDED",
    "REFUSED",
    "LandRequest",
    "LandResult",
    "land_task",
]


@dataclass
class LandRequest:
    """What to land, where, and how the gates run."""

    repo_path: str
    task_id: str
    base_branch: str
    strategy: str = "rebase"
    scratch_root: str = ""
    """Folder for the scratch worktrees (the run folder's ``land/``)."""
    log_dir: str = ""
    """Where the gates' logs go."""
    max_output_bytes: int = 64_000
    max_attempts: int = 3
    run_dir: str = ""
    """The stack's run folder: where the base's gate results are cached (``gates/baseline``)."""


async def land_task(
    request: LandRequest,
    gates: list[GateSpec],
    fencing: GateFencing = GateFencing(),
    heartbeat: Heartbeat | None = None,
) -> LandResult:
    """Land the task's branch on its base (see the module docstring); never half-lands."""
    repo = Path(request.repo_path)
    for _ in range(max(1, request.max_attempts)):
        plan = await asyncio.to_thread(
            prepare_land, repo, request.task_id, request.base_branch, request.strategy
        )
        if plan.method == "already-landed":
            return LandResult(ALREADY_LANDED, plan.method, plan.base_commit, plan.base_commit)
        if plan.conflicts:
            return _conflict(plan)
        if plan.needs_gates and gates:
            failed = await _gate(request, plan, gates, fencing, heartbeat)
            if failed is not None:
                return failed
        try:
            moved = await asyncio.to_thread(
                move_base, repo, request.base_branch, plan.new_commit, plan.base_commit
            )
        except GitError as exc:
            return LandResult(
                REFUSED,
                plan.method,
                base_before=plan.base_commit,
                message=str(exc),
                hint=exc.hint or "",
            )
        if moved.moved:
            return LandResult(
                LANDED, plan.method, plan.new_commit, plan.base_commit, checkout=moved.checkout
            )
    return LandResult(
        REFUSED,
        message=f"{request.base_branch} kept moving while landing {request.task_id}",
        hint="land again when nothing else writes to the base branch",
    )


def _conflict(plan: LandPlan) -> LandResult:
    files = ", ".join(plan.conflicts)
    return LandResult(
        CONFLICT,
        plan.method,
        base_before=plan.base_commit,
        conflicts=plan.conflicts,
        message=f"{plan.method} of {plan.task_id} on {plan.base_branch} conflicts in {files}",
        # For `semspec task land` a person resolves it on the task branch, or asks for the
        # change again on the new base. A task that lands itself (`loop.land: auto`) asks
        # instead: it escalates `land_conflict`, whose `retry` redoes the change on the new
        # base (task/loop/landing.py).
        hint=(
            f"resolve it by hand: rebase semspec/task/{plan.task_id} on {plan.base_branch}, fix "
            f"{files}, then run `semspec task land {plan.task_id}` again; or submit a follow-up "
            f"task that makes the change on the current {plan.base_branch}"
        ),
    )


async def _gate(
    request: LandRequest,
    plan: LandPlan,
    gates: list[GateSpec],
    fencing: GateFencing,
    heartbeat: Heartbeat | None,
) -> LandResult | None:
    """Run the required gates on the planned commit; a LandResult when one fails."""
    repo = Path(request.repo_path)
    scratch_root = Path(request.scratch_root)
    log_dir = Path(request.log_dir)
    required = [spec for spec in gates if spec.required]
    worktree = await asyncio.to_thread(
        open_scratch, repo, request.task_id, plan.new_commit, scratch_root
    )
    try:
        await asyncio.to_thread(log_dir.mkdir, parents=True, exist_ok=True)
        report = await run_gates(
            required, worktree, log_dir, request.max_output_bytes, heartbeat, fencing
        )
        # As for the task's own gates: failures already on the base do not count against it.
        setup = GateSetup(log_dir, request.max_output_bytes, heartbeat, fencing)
        base = base_of(plan.base_commit, request.run_dir)
        report = await judge_against_base(report, required, worktree, base, setup)
    finally:
        await asyncio.to_thread(close_scratch, repo, request.task_id, scratch_root)
    if report.passed:
        return None
    names = [result.name for result in report.required_failures]
    return LandResult(
        GATE_FAILED,
        plan.method,
        base_before=plan.base_commit,
        failed_gates=names,
        gate_feedback=report.feedback_text(),
        message=f"gate {', '.join(names)} failed on {request.task_id} {plan.method}d on "
        f"{plan.base_branch}",
        hint="answer `retry` to have the developer fix it on the new base",
    )
