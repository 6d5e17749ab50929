"""Git for the task loop with pygit2 only: worktrees, diffs, keyed commits, checkpoint branches."""

from workflow.git.checkpoint import create_branch_at, delete_branches, list_branches
from workflow.git.commit import CommitInfo, commit_task
from workflow.git.diff import DiffInfo, worktree_diff
from workflow.git.names import task_branch, validate_task_id
from workflow.git.worktree import WorktreeInfo, ensure_worktree, remove_worktree

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
