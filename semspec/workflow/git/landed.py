"""Whether an approved task's change is on the base branch, asked of git itself.

A task that waits for an earlier task on the same files (``task/loop/waiting.py``) may go on
once that task's change is on the base branch, however it got there: ``semspec task land``
(fast-forward, rebase or merge), an automatic land, or a user's own ``git merge`` or
cherry-pick. So the answer comes from the commits, not from a record of a land:

- the approved commit is the base tip or one of its ancestors (fast-forward, merge), or
- replaying the task's commits on the base tip changes nothing (rebased, cherry-picked).

Read-only: no ref, index or working file changes, and no commit is written.
"""

from __future__ import annotations

from pathlib import Path

import pygit2
from pygit2.enums import SortMode

from semspec.workflow.git.repository import open_repository
from semspec.workflow.git.start_point import branch_tip


def is_landed(repo_path: Path, commit_id: str, base_branch: str) -> bool:
    """Whether the change of ``commit_id`` (a task's approved commit) is on ``base_branch``.

    A commit the repository does not hold (its branch deleted and collected) cannot be checked:
    it counts as landed, since nothing of it can land any more.
    """
    repo = open_repository(repo_path)
    base = branch_tip(repo, base_branch, repo_path)
    try:
        task = repo.get(commit_id)
    except (ValueError, KeyError):
        task = None
    if not isinstance(task, pygit2.Commit):
        return True
    if task.id == base.id or repo.descendant_of(base.id, task.id):
        return True
    return _adds_nothing(repo, task, base)


def _adds_nothing(repo: pygit2.Repository, task: pygit2.Commit, base: pygit2.Commit) -> bool:
    """Whether each of the task's commits since the base, replayed in order on the base's
    tree, leaves that tree as it is (what a land's rebase drops as already there)."""
    walker = repo.walk(task.id, SortMode.TOPOLOGICAL | SortMode.REVERSE)
    walker.hide(base.id)
    for commit in walker:
        parent_tree = commit.parents[0].tree if commit.parents else None
        if parent_tree is None:
            return False  # a root commit of its own: a history the base does not share
        index = repo.merge_trees(parent_tree, base.tree, commit.tree)
        if index.conflicts is not None:
            return False
        if len(index.diff_to_tree(base.tree)) > 0:
            return False
    return True
