"""A linked worktree per task on branch ``semspec/task/<id>``, created idempotently with pygit2.

The user's own checkout is never touched: the branch is created without checking it out, and the
worktree lives under ``worktrees_root``. A crash part-way (a registration whose directory is gone,
or a directory left without a registration) is repaired on the next call.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pygit2

from semspec.core.errors import GitError
from semspec.workflow.git.names import task_branch, validate_task_id
from semspec.workflow.git.repository import open_repository
from semspec.workflow.git.start_point import start_commit


@dataclass
class WorktreeInfo:
    """Where a task's worktree is, the branch it has checked out, and the commit it forked from."""

    path: str
    branch: str
    base_commit: str


def worktree_name(task_id: str) -> str:
    """The name libgit2 registers the task's worktree under (prefixed to avoid user worktrees)."""
    return f"semspec-{validate_task_id(task_id)}"


def ensure_worktree(
    repo_path: Path,
    task_id: str,
    base_branch: str,
    worktrees_root: Path,
    after: Sequence[str] = (),
) -> WorktreeInfo:
    """Create (or find) the task's branch and a worktree at ``worktrees_root/<task_id>`` on it.

    The branch starts at ``base_branch``'s tip, or at the commits in ``after`` (the approved
    work of the tasks this one depends on; see ``start_point``). Calling it again returns the
    same info; an existing task branch is reused as it is.
    """
    branch_name = task_branch(task_id)
    repo = open_repository(repo_path)
    base = start_commit(repo, repo_path, base_branch, after)
    branch = repo.branches.local.get(branch_name)
    if branch is None:
        branch = repo.branches.local.create(branch_name, base)
    base_commit = _fork_point(repo, branch, base)
    name = worktree_name(task_id)
    existing = _registered(repo, name)
    if existing is not None and existing.is_prunable:
        # Its directory is gone (crash or manual delete): drop the registration and redo it.
        existing.prune(True)
        existing = None
    if existing is not None:
        _check_on_branch(Path(existing.path), branch_name)
        return WorktreeInfo(path=existing.path, branch=branch_name, base_commit=base_commit)
    path = (worktrees_root / task_id).absolute()
    _clear_leftover(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        repo.add_worktree(name, str(path), branch)
    except pygit2.GitError as exc:
        raise GitError(
            f"cannot create a worktree for {branch_name} at {path}: {exc}",
            repo=str(repo_path),
            hint=f"if {branch_name} is checked out elsewhere, switch that checkout to another "
            "branch",
        ) from exc
    return WorktreeInfo(path=str(path), branch=branch_name, base_commit=base_commit)


def remove_worktree(repo_path: Path, task_id: str, worktrees_root: Path) -> str:
    """Delete the task's worktree directory and its registration; the task branch stays.

    Only ``worktrees_root/<task_id>`` is deleted, never the path the registration names: a
    gate may write the worktree's own git folder (``fence_mounts.worktree_git_binds``), so that
    path is not ours to trust. Returns the directory deleted, or "" when there was none.
    """
    repo = open_repository(repo_path)
    name = worktree_name(task_id)
    existing = _registered(repo, name)
    target = (worktrees_root / validate_task_id(task_id)).absolute()
    removed = ""
    # Directory first: a crash in between leaves a prunable registration the next call handles.
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
        removed = str(target)
    if existing is not None:
        existing.prune(True)
    return removed


def _fork_point(repo: pygit2.Repository, branch: pygit2.Branch, base: pygit2.Commit) -> str:
    """The commit the task branch started from: its merge base with the base branch."""
    merge_base = repo.merge_base(branch.target, base.id)
    return str(merge_base if merge_base is not None else base.id)


def _registered(repo: pygit2.Repository, name: str) -> pygit2.Worktree | None:
    """The worktree registered as ``name``; a half-written registration is removed."""
    if name not in repo.list_worktrees():
        return None
    try:
        return repo.lookup_worktree(name)
    except pygit2.GitError:
        shutil.rmtree(Path(repo.path) / "worktrees" / name, ignore_errors=True)
        return None


def _check_on_branch(path: Path, branch_name: str) -> None:
    head = open_repository(path).references.get("HEAD")
    target = head.target if head is not None else None
    if target != f"refs/heads/{branch_name}":
        raise GitError(
            f"the worktree is not on {branch_name} (HEAD is {target})",
            repo=str(path),
            hint=f"check out {branch_name} there again, or remove the worktree and resubmit",
        )


def _clear_leftover(path: Path) -> None:
    """Make ``path`` free: remove it if empty, else move it aside so nothing is lost."""
    if not path.exists() and not path.is_symlink():
        return
    if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
        path.rmdir()
        return
    n = 1
    while Path(f"{path}.stale-{n}").exists():
        n += 1
    os.replace(path, f"{path}.stale-{n}")
