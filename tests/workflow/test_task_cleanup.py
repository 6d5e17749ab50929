"""What an ended task removes of its own (``worktree_cleanup``), with real git and real locks."""

from __future__ import annotations

import fcntl
import os
from dataclasses import replace
from pathlib import Path

import pygit2

from semspec.core.run_lock import lock_path
from semspec.workflow.git.worktree import ensure_worktree
from semspec.workflow.task.task_spec import TaskSpec
from semspec.workflow.task.worktree_cleanup import remove_finished_worktree
from tests.support.repos import make_repo


def started(tmp_path: Path, task_id: str = "t") -> tuple[TaskSpec, Path, Path]:
    """A task's spec, its run folder, and the worktree it works in (with a gate lock beside)."""
    repo, run = tmp_path / "repo", tmp_path / "run"
    if not repo.exists():
        make_repo(repo, {"a.txt": "a\n"})
    info = ensure_worktree(repo, task_id, "main", run / "worktrees")
    (Path(info.path) / "a.txt").write_text("changed\n")
    Path(lock_path(info.path)).write_text("")
    return TaskSpec(task_id=task_id, title="t", repo_path=str(repo)), run, Path(info.path)


def test_an_ended_task_removes_its_worktree_and_free_gate_lock_and_keeps_its_branch(
    tmp_path: Path,
) -> None:
    spec, run, worktree = started(tmp_path)
    assert remove_finished_worktree(spec, run) == str(worktree)
    assert list((run / "worktrees").iterdir()) == []
    repo = pygit2.Repository(spec.repo_path)
    assert repo.list_worktrees() == []
    assert "semspec/task/t" in repo.branches.local
    assert remove_finished_worktree(spec, run) == ""  # a retried activity finds nothing


def test_a_kept_worktree_and_a_subtasks_shared_one_stay(tmp_path: Path) -> None:
    spec, run, worktree = started(tmp_path)
    assert remove_finished_worktree(replace(spec, keep_worktree=True), run) == ""
    # A subtask works in its parent's worktree: the parent removes it when it ends.
    part = replace(spec, task_id="t-part1", workspace_id="t")
    assert remove_finished_worktree(part, run) == ""
    assert (worktree / "a.txt").read_text() == "changed\n"


def test_a_gate_lock_a_process_still_holds_stays(tmp_path: Path) -> None:
    spec, run, worktree = started(tmp_path)
    lock = Path(lock_path(str(worktree)))
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert remove_finished_worktree(spec, run) == str(worktree)
        assert lock.exists() and not worktree.exists()
    finally:
        os.close(fd)
