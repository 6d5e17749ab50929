"""Checkpoint branches of a task: their names, saving the worktree to one, listing, cleanup.

A checkpoint is taken at red or critical context pressure, or on a ``pause``: the worktree is
saved to ``semspec/checkpoint/<task>/<n>`` (a snapshot of the changed paths, see
``semspec.workflow.git.snapshot``) and the loop continues as new from a fresh context. The
branches are deleted when the task ends unless it keeps them. The workflow side is in
``semspec.workflow.task``: when to checkpoint in ``workflows`` (its bound in ``bounds``), what the
continuation carries in ``carry``; this module does the git side.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from semspec.workflow.git.checkpoint import delete_branches, list_branches
from semspec.workflow.git.snapshot import snapshot_branch

CHECKPOINT_PREFIX = "semspec/checkpoint"


def checkpoint_prefix(task_id: str) -> str:
    """The common prefix of every checkpoint branch of ``task_id``."""
    return f"{CHECKPOINT_PREFIX}/{task_id}/"


def checkpoint_branch(task_id: str, number: int) -> str:
    """Name of the ``number``-th checkpoint branch of ``task_id``."""
    return f"{checkpoint_prefix(task_id)}{number}"


def save_checkpoint(
    repo: Path,
    worktree: Path,
    base_commit: str,
    task_branch: str,
    changed: Iterable[str],
    task_id: str,
    number: int,
) -> tuple[str, str]:
    """Save the worktree's ``changed`` paths to checkpoint ``number``; (branch, commit id).

    The task branch does not move, and a retry finds the branch and returns its commit.
    """
    ref = checkpoint_branch(task_id, number)
    message = f"semspec checkpoint {number} of {task_id}"
    commit_id = snapshot_branch(repo, worktree, base_commit, task_branch, changed, message, ref)
    return ref, commit_id


def task_checkpoints(repo: Path, task_id: str) -> list[str]:
    """The task's checkpoint branches, sorted."""
    return list_branches(repo, checkpoint_prefix(task_id))


def delete_checkpoints(repo: Path, task_id: str) -> list[str]:
    """Delete the task's checkpoint branches; returns their names."""
    return delete_branches(repo, checkpoint_prefix(task_id))
