"""What `semspec gc` finds and removes in a repository and its run folder, with real git."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pygit2

from semspec.workflow.git.land import close_scratch, open_scratch
from semspec.workflow.git.leftovers import Leftover, find_leftovers, remove_leftover
from semspec.workflow.git.worktree import ensure_worktree, remove_worktree
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


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def test_a_task_branch_checked_out_by_hand_in_a_deleted_folder_is_pruned_a_live_one_kept(
    tmp_path: Path,
) -> None:
    repo, run = tmp_path / "repo", tmp_path / "run"
    make_repo(repo, {"a.txt": "a\n"})
    for task_id in ("gone", "here"):
        ensure_worktree(repo, task_id, "main", run / "worktrees")
        remove_worktree(repo, task_id, run / "worktrees")
        added = git(repo, "worktree", "add", str(tmp_path / task_id), f"semspec/task/{task_id}")
        assert added.returncode == 0, added.stderr
    shutil.rmtree(tmp_path / "gone")
    # git itself refuses the branch elsewhere while the dead registration stays.
    assert git(repo, "checkout", "semspec/task/gone").returncode != 0
    [item] = find_leftovers(repo, run)
    assert (item.kind, item.owner, item.name) == ("registration", "gone", "gone")
    assert remove_leftover(repo, run, item) is True
    assert find_leftovers(repo, run) == []
    assert git(repo, "checkout", "-q", "semspec/task/gone").returncode == 0
    assert (tmp_path / "here" / "a.txt").is_file()


def test_a_lock_file_of_a_semspec_branch_is_a_leftover_and_git_moves_the_branch_after(
    tmp_path: Path,
) -> None:
    repo, run = tmp_path / "repo", tmp_path / "run"
    git_repo = make_repo(repo, {"a.txt": "a\n"})
    git_repo.branches.local.create("semspec/checkpoint/t/1", git_repo.head.peel(pygit2.Commit))
    lock = repo / ".git" / "refs" / "heads" / "semspec" / "checkpoint" / "t" / "1.lock"
    lock.write_text("")
    assert git(repo, "branch", "-f", "semspec/checkpoint/t/1", "main").returncode != 0
    found = kinds(find_leftovers(repo, run))
    assert ("ref-lock", "t") in found
    for item in find_leftovers(repo, run):
        remove_leftover(repo, run, item)
    assert not lock.exists()
    assert find_leftovers(repo, run) == []


def test_removing_a_worktree_deletes_only_its_own_folder_whatever_its_registration_says(
    tmp_path: Path,
) -> None:
    repo, run = tmp_path / "repo", tmp_path / "run"
    make_repo(repo, {"a.txt": "a\n"})
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n")
    info = ensure_worktree(repo, "t", "main", run / "worktrees")
    scratch = open_scratch(repo, "t", info.base_commit, run / "land")
    # A gate may write the worktree's own git folder: it points the registration elsewhere.
    for name in ("semspec-t", "semspec-land-t"):
        gitdir = repo / ".git" / "worktrees" / name / "gitdir"
        gitdir.write_text(f"{victim}/.git\n")
    assert remove_worktree(repo, "t", run / "worktrees") == info.path
    close_scratch(repo, "t", run / "land")
    assert (victim / "keep.txt").read_text() == "mine\n"
    assert not Path(info.path).exists() and not scratch.exists()
    assert pygit2.Repository(str(repo)).list_worktrees() == []
