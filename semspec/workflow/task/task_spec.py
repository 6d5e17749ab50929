"""What a task is: its spec, the roles that play it, and the loop's bounds (``TaskInput``'s parts).

Shared by the workflow, the activities and the clients that submit tasks; imported through
``messages`` (which re-exports these names) or directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RoleSpec:
    """Who plays a role: provider, model id and, for scripted agents, the script path."""

    provider: str = "scripted"
    model: str = "scripted"
    script: str | None = None


@dataclass(frozen=True)
class LoopLimits:
    """Bounds of the loop, copied from the config at submit time."""

    max_retries: int = 3
    max_iterations: int = 12
    developer_timeout_s: float = 1800.0
    reviewer_timeout_s: float = 600.0
    activity_attempts: int = 5
    max_output_bytes: int = 16_384
    max_cost_usd: float | None = None
    """Dollars the task may spend (``loop.max_cost_usd``, or the task file's); None = no cap."""


@dataclass(frozen=True)
class TaskSpec:
    """A task as submitted: what to do, to which files, in which repository."""

    task_id: str
    title: str
    repo_path: str
    description: str = ""
    criteria: list[str] = field(default_factory=list)
    task_files: list[str] = field(default_factory=list)
    plan_id: str | None = None
    base_branch: str = "main"
    developer: RoleSpec = field(default_factory=RoleSpec)
    reviewer: RoleSpec = field(default_factory=RoleSpec)
    project: str = "project"
    workspace_id: str | None = None
    """Task whose worktree and branch this task works on (subtasks share their parent's)."""
    keep_checkpoints: bool = False
    """Keep ``semspec/checkpoint/<task>/<n>`` branches after the task ends."""
    keep_worktree: bool = False
    """Keep the task's worktree after the task ends (``loop.keep_worktrees``)."""
    after_commits: list[str] = field(default_factory=list)
    """Approved commits of the plan tasks this one depends on; its branch starts from them."""
    auto_land: bool = False
    """Land the work on the base branch as soon as it is approved (``loop.land: auto``, or
    ``land: auto`` in the task or plan file); False: it waits for ``semspec task land``."""

    @property
    def workspace_key(self) -> str:
        """Id naming the worktree and the ``semspec/task/<id>`` branch."""
        return self.workspace_id or self.task_id
