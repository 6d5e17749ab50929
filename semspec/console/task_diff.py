"""The change of a task against its base commit, bounded for a page.

While the task runs its worktree holds the change (committed or not), so the worktree is diffed
as the reviewer sees it (``worktree_diff``); once the worktree is gone the task's commit (or its
branch's tip) is diffed against the base in the repository. pygit2 blocks, so ``task_diff``
runs it in a worker thread. The patch is shown with the worker's secrets and key shapes masked
(``semspec.workflow.task.secret_guard``), as the reviewer sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from semspec.core.errors import GitError
from semspec.workflow.git.diff import worktree_diff
from semspec.workflow.git.repository import commit_of, open_repository
from semspec.workflow.task.messages import TaskStatus
from semspec.workflow.task.secret_guard import masked

MAX_DIFF_CHARS = 100_000
"""The most of a patch a page shows; the rest is cut, and the page says so."""


@dataclass(frozen=True)
class TaskDiff:
    """A task's patch (cut to ``MAX_DIFF_CHARS``), what it was taken from, and its size."""

    patch: str
    source: str
    """``worktree``, ``commit`` or ``branch``; empty when there is nothing to diff."""
    files: list[str]
    insertions: int
    deletions: int
    cut: bool
    """The patch was longer than the page shows."""
    problem: str = ""
    """Why there is no diff, when there is none."""


async def task_diff(status: TaskStatus, repo: Path, max_chars: int = MAX_DIFF_CHARS) -> TaskDiff:
    """The task's change against its base, read in a worker thread."""
    return await anyio.to_thread.run_sync(_diff, status, repo, max_chars)


def _diff(status: TaskStatus, repo: Path, max_chars: int) -> TaskDiff:
    base = status.base_commit
    if not base:
        return _none("the task has no workspace yet")
    try:
        if status.worktree and Path(status.worktree).is_dir():
            info = worktree_diff(Path(status.worktree), base, max_chars)
            return TaskDiff(
                masked(repo, info.patch),
                "worktree",
                info.files,
                info.insertions,
                info.deletions,
                info.patch_truncated,
            )
        head, source = (
            (status.commit_id, "commit") if status.commit_id else (status.branch, "branch")
        )
        if not head:
            return _none("the task's worktree is gone and it left no commit")
        return _commit_diff(repo, base, head, source, max_chars)
    except GitError as exc:
        return _none(exc.message)


def _commit_diff(repo_path: Path, base: str, head: str, source: str, max_chars: int) -> TaskDiff:
    repo = open_repository(repo_path)
    diff = repo.diff(commit_of(repo, base, repo_path), commit_of(repo, head, repo_path))
    patch = diff.patch or ""
    files = sorted({d.new_file.path or d.old_file.path for d in diff.deltas})
    stats = diff.stats
    shown = masked(repo_path, patch[:max_chars])
    return TaskDiff(shown, source, files, stats.insertions, stats.deletions, len(patch) > max_chars)


def _none(problem: str) -> TaskDiff:
    return TaskDiff("", "", [], 0, 0, False, problem)
