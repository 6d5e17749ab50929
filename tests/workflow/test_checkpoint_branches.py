"""Checkpoint branches of a task: saved from the worktree, listed, retried, deleted."""

from __future__ import annotations

from pathlib import Path

import pygit2

from semspec.workflow.context.checkpoint import (
    checkpoint_branch,
    delete_checkpoints,
    save_checkpoint,
    task_checkpoints,
)
from semspec.workflow.git.worktree import ensure_worktree


def test_checkpoints_are_saved_listed_retried_and_deleted(git_repo: Path, tmp_path: Path) -> None:
    info = ensure_worktree(git_repo, "cp-task", "main", tmp_path / "wt")
    wt = Path(info.path)
    saved = []
    for number in (1, 2):
        (wt / "calc.py").write_text(f"def add(a, b):\n    return a + b  # v{number}\n")
        saved.append(
            save_checkpoint(
                git_repo, wt, info.base_commit, info.branch, ["calc.py"], "cp-task", number
            )
        )
    assert [ref for ref, _ in saved] == [checkpoint_branch("cp-task", n) for n in (1, 2)]
    # A retried activity gets the same branch and commit back.
    again = save_checkpoint(git_repo, wt, info.base_commit, info.branch, ["calc.py"], "cp-task", 2)
    assert again == saved[1]
    repo = pygit2.Repository(str(git_repo))
    first = repo.lookup_branch(saved[0][0]).peel(pygit2.Commit)
    blob = repo[first.tree["calc.py"].id]
    assert isinstance(blob, pygit2.Blob) and b"# v1" in blob.data
    other = ensure_worktree(git_repo, "cp-other", "main", tmp_path / "wt")
    save_checkpoint(
        git_repo, Path(other.path), other.base_commit, other.branch, ["calc.py"], "cp-other", 1
    )
    assert task_checkpoints(git_repo, "cp-task") == [ref for ref, _ in saved]
    assert delete_checkpoints(git_repo, "cp-task") == [ref for ref, _ in saved]
    assert task_checkpoints(git_repo, "cp-task") == []
    assert task_checkpoints(git_repo, "cp-other") == ["semspec/checkpoint/cp-other/1"]
