"""Git for the task loop with pygit2 only: worktrees, diffs, keyed commits, checkpoint branches."""

from semspec.workflow.git.checkpoint import create_branch_at, delete_branches, list_branches
from semspec.workflow.git.commit import CommitInfo, commit_task
from semspec.workflow.git.diff import DiffInfo, worktree_diff
from semspec.workflow.git.names import task_branch, validate_task_id
from semspec.workflow.git.worktree import WorktreeInfo, ensure_worktree, remove_worktree

__all__ = [
    "CommitInfo",
    "DiffInfo",
    "WorktreeInfo",
    "commit_task",
    "create_branch_at",
    "delete_branches",
    "ensure_worktree",
    "list_branches",
    "remove_worktree",
    "task_branch",
    "validate_task_id",
    "worktree_diff",
]
