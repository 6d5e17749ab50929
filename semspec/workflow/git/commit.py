"""One idempotent commit per approval on the task branch, found again by its commit key.

The key travels in a trailer (``Semspec-Commit-Key``), so an activity retried after a crash
finds the commit it already made instead of making a second one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileStatus

from semspec.core.errors import GitError, InputError
from semspec.workflow.git.names import SEMSPEC_AUTHOR, task_branch
from semspec.workflow.git.repository import open_repository

TASK_TRAILER = "Semspec-Task"
KEY_TRAILER = "Semspec-Commit-Key"


@dataclass
class CommitInfo:
    """The commit carrying the key, and whether this call made it."""

    commit_id: str
    created: bool


def commit_task(
    worktree: Path,
    task_id: str,
    message: str,
    commit_key: str,
    author_name: str = SEMSPEC_AUTHOR[0],
    author_email: str = SEMSPEC_AUTHOR[1],
) -> CommitInfo:
    """Stage everything in the worktree and commit it once on the task branch under ``commit_key``.

    A second call with the same key returns the first commit (``created=False``); a worktree with
    nothing to commit and no such commit yet is a GitError.
    """
    branch_ref = "refs/heads/" + task_branch(task_id)
    if not commit_key.strip() or "\n" in commit_key:
        raise InputError(f"commit key {commit_key!r} must be one non-empty line")
    repo = open_repository(worktree)
    tip = _task_branch_tip(repo, branch_ref, worktree)
    found = find_keyed_commit(repo, tip, task_id, commit_key)
    if found is not None:
        return CommitInfo(commit_id=str(found.id), created=False)
    tree_id = _stage_all(repo)
    if tree_id == tip.tree_id:
        raise GitError(
            "nothing to commit: the worktree matches the task branch",
            repo=str(worktree),
            hint="an empty change is handled by the task loop, not committed",
        )
    signature = pygit2.Signature(author_name, author_email)
    text = f"{message.rstrip()}\n\n{TASK_TRAILER}: {task_id}\n{KEY_TRAILER}: {commit_key}\n"
    commit_id = repo.create_commit(branch_ref, signature, signature, text, tree_id, [tip.id])
    return CommitInfo(commit_id=str(commit_id), created=True)


def find_keyed_commit(
    repo: pygit2.Repository, tip: pygit2.Commit, task_id: str, commit_key: str
) -> pygit2.Commit | None:
    """The newest commit carrying ``commit_key`` among the task's own commits ending at ``tip``.

    Walks first parents while commits carry this task's trailer; the first that does not is
    where the branch left its base.
    """
    commit: pygit2.Commit | None = tip
    while commit is not None:
        trailers = _trailers(commit.message)
        if trailers.get(TASK_TRAILER) != task_id:
            return None
        if trailers.get(KEY_TRAILER) == commit_key:
            return commit
        commit = commit.parents[0] if commit.parents else None
    return None


def _trailers(message: str) -> dict[str, str]:
    """``Key: value`` lines of the message's last paragraph."""
    last = message.strip().split("\n\n")[-1]
    pairs: dict[str, str] = {}
    for line in last.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            pairs[key.strip()] = value.strip()
    return pairs


def _task_branch_tip(repo: pygit2.Repository, branch_ref: str, worktree: Path) -> pygit2.Commit:
    """Tip of the task branch, after checking the worktree has it checked out."""
    head = repo.references.get("HEAD")
    if head is None or head.target != branch_ref:
        raise GitError(
            f"the worktree is not on {branch_ref.removeprefix('refs/heads/')}",
            repo=str(worktree),
            hint="commit from the task's own worktree (see ensure_worktree)",
        )
    commit = repo.references[branch_ref].peel(pygit2.Commit)
    assert isinstance(commit, pygit2.Commit)
    return commit


def _stage_all(repo: pygit2.Repository) -> pygit2.Oid:
    """Add new and changed files, drop deleted ones, write the index; return the tree id."""
    index = repo.index
    index.add_all()
    for path, status in repo.status().items():
        if status & FileStatus.WT_DELETED:
            index.remove(path)
    index.write()
    tree_id = index.write_tree()
    assert isinstance(tree_id, pygit2.Oid)
    return tree_id
