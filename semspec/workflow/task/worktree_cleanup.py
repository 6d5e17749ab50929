"""A task that has ended leaves no worktree behind (issue 28; docs/landing.md, "Clean up").

``finalize`` calls this once the task is over: approved, aborted, failed, refused, or cancelled.
What the task produced is on its branch ``semspec/task/<id>`` (the approved commit), which
stays: ``semspec task land``, ``plan land`` and ``task export`` read the branch, never the
worktree. While a task is escalated, halted or waiting it has not ended, so this is not called.

The worktree stays when the task keeps it (``loop.keep_worktrees``, ``keep_worktree:`` in the
task file) and when the task is a subtask: it works in its parent's worktree, which the parent
removes when it ends. The gate lock file beside the worktree goes too, when no process holds it
(a gate that was running when its worker died leaves it).
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from semspec.core.errors import SemspecError
from semspec.core.logging import get_logger
from semspec.core.run_lock import lock_path
from semspec.workflow.git.leftovers import remove_free_lock
from semspec.workflow.git.worktree import remove_worktree
from semspec.workflow.task.task_spec import TaskSpec

log = get_logger("task-cleanup")

WORKTREES = "worktrees"
"""The folder of the run folder that holds the tasks' worktrees (``prepare_workspace``)."""


def remove_finished_worktree(spec: TaskSpec, run_dir: Path) -> str:
    """Remove the ended task's worktree (under ``run_dir``) and its free gate lock; the path
    removed, or ""."""
    if spec.keep_worktree or spec.workspace_key != spec.task_id:
        return ""
    repo = Path(spec.repo_path)
    root = run_dir / WORKTREES
    lock = Path(lock_path(str(root / spec.task_id)))
    try:
        removed = remove_worktree(repo, spec.task_id, root)
    except (OSError, SemspecError, pygit2.GitError) as exc:
        # The task's outcome stands; what is left shows in `git worktree list` and gc.
        log.warning("worktree not removed", task=spec.task_id, error=str(exc))
        return ""
    if lock.parent == root.resolve() and lock.is_file():
        remove_free_lock(lock)
    return removed
