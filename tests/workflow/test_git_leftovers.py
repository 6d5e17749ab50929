"""What `semspec gc` finds and removes in a repository and its run folder, with real git."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

from semspec.workflow.git.land import open_scratch
from semspec.workflow.git.leftovers import Leftover, find_leftovers, remove_leftover
from semspec.workflow.git.worktree import ensure_worktree
from tests.support.mdurl_project import package_sources
from tests.support.repos import make_repo


def kinds(items: list[Leftover]) -> set[tuple[str, str]]:
    return {(item.kind, item.owner) for item in items}


def test_leftovers_are_found_by_kind_and_owner_and_task_branches_are_not_among_them(
    tmp_path: Path,
) -> None:
    repo, run = tmp_path / "repo", tmp_path / "run"
    git = make_repo(repo, package_sources())
    info = ensure_worktree(repo, "a", "main", run / "worktrees")
    git.branches.local.create("semspec/checkpoint/a/1", git.head.peel())
    open_scratch(repo, "b", info.base_commit, run / "land")
    (run / "worktrees" / "a.gate-lock").write_text("")
    (run / "worktrees" / "c.stale-1").mkdir()
    found = find_leftovers(repo, run)
    assert kinds(found) == {
        ("worktree", "a"),
        ("checkpoint", "a"),
        ("land-worktree", "b"),
        ("land-branch", "b"),
        ("lock", "a"),
        ("worktree", "c"),
    }
    assert [item.of_land for item in found if item.owner == "b"] == [True, True]
    for item in found:
        remove_leftover(repo, run, item)
    assert find_leftovers(repo, run) == []
    listed = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list", "--porcelain"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert listed.count("worktree ") == 1
    assert set(git.branches.local) == {"main", "semspec/task/a"}


def test_a_gate_lock_a_process_holds_is_not_removed(tmp_path: Path) -> None:
    repo, run = tmp_path / "repo", tmp_path / "run"
    make_repo(repo, {"a.txt": "a\n"})
    lock = run / "worktrees" / "busy.gate-lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        [item] = find_leftovers(repo, run)
        assert remove_leftover(repo, run, item) is False
        assert lock.exists()
    finally:
        os.close(fd)
    assert remove_leftover(repo, run, item) is True
    assert not lock.exists()
