"""One agent turn of the developer or reviewer, as the task activities run it (I/O).

Config, git and the graph are read in threads, so the worker's event loop never blocks; the turn
heartbeats while it runs (``with_heartbeat``), which is also how a halt or pause from the
workflow reaches it. ``activities.TaskActivities`` wraps these into its ``develop`` and
``review`` activities and builds their results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity

from semspec.agents.factory import developer_agent, reviewer_agent
from semspec.agents.protocol import (
    DeveloperRequest,
    DeveloperResult,
    ReviewRequest,
    ReviewVerdict,
)
from semspec.agents.steps import StepObserver, StopReason
from semspec.core.config.models import GatesConfig, RoleModel
from semspec.core.sandbox import ChildLimits, choose_sandbox
from semspec.workflow.gates.runner import GateFencing
from semspec.workflow.git.diff import DiffInfo, worktree_diff
from semspec.workflow.git.identity import repository_identity
from semspec.workflow.git.symlinks import escaping_symlinks
from semspec.workflow.task.context_activities import (
    developer_context,
    repo_config,
)
from semspec.workflow.task.messages import (
    DeveloperInput,
    GatesInput,
    ReviewContextUse,
    ReviewInput,
    RoleSpec,
    TaskSpec,
    Workspace,
)
from semspec.workflow.task.review_context import review_context_used
from semspec.workflow.task.rule_pinning import (
    changed_rule_files,
    check_citations,
    rule_change_notes,
)
from semspec.workflow.task.scope import out_of_scope
from semspec.workflow.task.secret_guard import masked

T = TypeVar("T")
STOP_GRACE_S = 10.0
"""How long a turn an agent ended on a halt or pause waits for the workflow's cancellation
(it reaches the activity with a heartbeat's answer, throttled to 2 s)."""


async def with_heartbeat(work: Awaitable[T], every_s: float = 1.0) -> T:
    """Await ``work`` while heartbeating, so a dead worker is noticed by its heartbeat timeout.

    Heartbeats are also how a cancellation (a halt or pause from the risk monitor, a cancelled
    task) reaches the activity; ``work`` is cancelled with it, so an agent's LLM call in flight
    is abandoned and no further one is made.
    """
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every_s)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def role_model(repo: Path, role_name: str, spec: RoleSpec) -> RoleModel:
    """The repository's configured role, with the task's provider/model/script on top."""
    configured: RoleModel = getattr(repo_config(repo).models, role_name)
    update: dict[str, Any] = {"provider": spec.provider, "model": spec.model}
    if spec.script:
        update["script"] = spec.script
    return configured.model_copy(update=update)


def cancelled_by_workflow() -> bool:
    """Whether the activity's cancellation is the workflow stopping the step (a halt or pause),
    not a worker shutting down or a timeout, after which Temporal runs the step again."""
    details = activity.cancellation_details()
    return (
        details is not None
        and details.cancel_requested
        and not (details.worker_shutdown or details.timed_out or details.paused or details.reset)
    )


async def awaiting_cancellation(stopped: StopReason | None) -> None:
    """After a turn an agent ended on a halt or pause, wait (heartbeating) for the workflow to
    cancel the step, so the workflow's own halt or pause handling runs (``steps.StepRunner``).

    The cancellation is raised from here. When none comes the signal did not reach the workflow
    (it went to NATS alone): the step returns and the stopped turn goes to a human.
    """
    if stopped in ("halt", "pause"):
        await with_heartbeat(asyncio.sleep(STOP_GRACE_S))


async def developer_turn(
    inp: DeveloperInput, observer: StepObserver
) -> tuple[DeveloperResult, DiffInfo, Changes]:
    """One developer iteration, then what it changed (see ``changes``).

    Config and script files, git and the graph (maybe a server a round trip away) are read in
    threads; the agent's tool calls run in threads too (``DeveloperToolbox.call``).
    """
    spec, ws = inp.spec, inp.workspace
    repo = Path(spec.repo_path)
    role = await asyncio.to_thread(role_model, repo, "developer", spec.developer)
    context = await asyncio.to_thread(developer_context, spec, list(inp.carried), ws.base_commit)
    request = DeveloperRequest(
        task_id=spec.task_id,
        title=spec.title,
        description=spec.description,
        criteria=list(spec.criteria),
        task_files=list(spec.task_files),
        worktree=ws.path,
        iteration=inp.events.iteration,
        feedback=list(inp.feedback),
        guidance=inp.guidance,
        context=context,
        cost_budget_usd=inp.cost_budget_usd,
        accept_unpriced=inp.accept_unpriced,
    )
    # Made last, so that nothing between making and closing it can fail but the step.
    agent = await asyncio.to_thread(developer_agent, role, repo)
    try:
        result = await agent.develop(request, observer)
    finally:
        await agent.aclose()
    diff, changes = await asyncio.to_thread(diff_changes, spec, ws)
    return result, diff, changes


def gate_fencing(inp: GatesInput) -> GateFencing:
    """How the repository's config says gates run (config read, bubblewrap tried: blocking)."""
    gates = repo_config(Path(inp.repo_path)).gates if inp.repo_path else GatesConfig()
    hidden = (Path(inp.run_dir),) if inp.run_dir else ()
    sandbox = choose_sandbox(gates.sandbox)
    limits = ChildLimits.of(gates.limits)
    return GateFencing(sandbox, tuple(gates.env), hidden, limits, gates.max_log_bytes)


async def reviewer_turn(
    inp: ReviewInput, observer: StepObserver
) -> tuple[ReviewVerdict, ReviewContextUse | None]:
    """The reviewer's verdict on the worktree's diff, and what its assembled context held;
    config, git and graph read in threads."""
    spec, ws = inp.spec, inp.workspace
    repo = Path(spec.repo_path)
    role = await asyncio.to_thread(role_model, repo, "reviewer", spec.reviewer)
    diff = await asyncio.to_thread(worktree_diff, Path(ws.path), ws.base_commit)
    # The reviewer's model sees the change with the worker's secrets and key shapes masked.
    patch = await asyncio.to_thread(masked, repo, diff.patch)
    context, used = await asyncio.to_thread(
        review_context_used, repo, spec, patch, None, ws.base_commit
    )
    kinds = (await asyncio.to_thread(repo_config, repo)).sources.rules
    flags = [*inp.flags, *rule_change_notes(diff.files, spec.task_files, kinds, ws.base_commit)]
    if inp.evidence:
        context = f"{context}\n\n## Requested evidence\n{inp.evidence}".strip()
    request = ReviewRequest(
        task_id=spec.task_id,
        title=spec.title,
        description=spec.description,
        criteria=list(spec.criteria),
        task_files=list(spec.task_files),
        diff=patch,
        iteration=inp.events.iteration,
        gate_summary=inp.gate_summary,
        context=context,
        flags=flags,
        cost_budget_usd=inp.cost_budget_usd,
        accept_unpriced=inp.accept_unpriced,
    )
    agent = await asyncio.to_thread(reviewer_agent, role, repo, bool(inp.evidence))
    try:
        return check_citations(await agent.review(request, observer), used), used
    finally:
        await agent.aclose()


@dataclass(frozen=True)
class Changes:
    """What the ``files`` event says about a diff beyond its paths."""

    outside: list[str]
    """Changed paths out of the task's scope."""
    identity: str
    """The repository's identity (its root commit)."""
    escaping_symlinks: list[str]
    """Changed paths that are symlinks pointing outside the worktree."""


def diff_changes(spec: TaskSpec, ws: Workspace) -> tuple[DiffInfo, Changes]:
    """What the developer changed, which of it is out of scope, the repository's identity and
    the changed symlinks that leave the worktree.

    Test files that go with the change (``scope.allow``) are not scope creep; the monitor gets
    this very list, so it flags exactly what the loop reports. The identity's history walk is
    cached per base commit.
    """
    repo = Path(spec.repo_path)
    diff = worktree_diff(Path(ws.path), ws.base_commit)
    config = repo_config(repo)
    rule_files = changed_rule_files(diff.files, config.sources.rules)
    outside = out_of_scope(diff.files, spec.task_files, config.scope.allow, rule_files)
    identity = repository_identity(str(repo), ws.base_commit)
    return diff, Changes(outside, identity, escaping_symlinks(Path(ws.path), diff.files))
