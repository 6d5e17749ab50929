"""Task worktrees, diffs, keyed commits and checkpoint branches on real git repositories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pygit2
import pytest

from semspec.core.errors import GitError, InputError
from semspec.workflow.git import (
    commit_task,
    create_branch_at,
    delete_branches,
    ensure_worktree,
    list_branches,
    remove_worktree,
    worktree_diff,
)
from tests.support.repos import make_repo


@pytest.fixture
def worktrees_root(tmp_path: Path) -> Path:
    return tmp_path / "worktrees"


def head_commit(repo: pygit2.Repository) -> str:
    return str(repo.head.target)


def snapshot(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): p.read_text()
        for p in sorted(path.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def test_worktree_is_on_the_task_branch_and_leaves_the_users_checkout_untouched(
    git_repo: Path, worktrees_root: Path
) -> None:
    repo = pygit2.Repository(str(git_repo))
    head_before, files_before = head_commit(repo), snapshot(git_repo)
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    assert info.path == str(worktrees_root / "t-1")
    assert info.branch == "semspec/task/t-1"
    assert info.base_commit == head_before
    assert pygit2.Repository(info.path).head.name == "refs/heads/semspec/task/t-1"
    assert snapshot(Path(info.path)) == files_before
    repo = pygit2.Repository(str(git_repo))
    assert repo.head.name == "refs/heads/main" and head_commit(repo) == head_before
    assert snapshot(git_repo) == files_before
    assert repo.status() == {}


def test_second_ensure_returns_the_same_info_and_changes_nothing(
    git_repo: Path, worktrees_root: Path
) -> None:
    first = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    (Path(first.path) / "work.txt").write_text("in progress\n")
    second = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    assert second == first
    assert (Path(first.path) / "work.txt").read_text() == "in progress\n"
    assert pygit2.Repository(str(git_repo)).list_worktrees() == ["semspec-t-1"]


def test_ensure_recovers_when_the_worktree_directory_was_deleted(
    git_repo: Path, worktrees_root: Path
) -> None:
    first = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    shutil.rmtree(first.path)
    again = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    assert again == first
    assert (Path(again.path) / "calc.py").exists()


def test_ensure_moves_aside_a_leftover_directory_without_a_registration(
    git_repo: Path, worktrees_root: Path
) -> None:
    leftover = worktrees_root / "t-1"
    leftover.mkdir(parents=True)
    (leftover / "partial.txt").write_text("half written\n")
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    assert (Path(info.path) / "calc.py").exists()
    assert (worktrees_root / "t-1.stale-1" / "partial.txt").read_text() == "half written\n"


def test_existing_task_branch_is_reused_with_its_commits(
    git_repo: Path, worktrees_root: Path
) -> None:
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    (Path(info.path) / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    made = commit_task(Path(info.path), "t-1", "swap", "k1")
    remove_worktree(git_repo, "t-1", worktrees_root)
    again = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    assert again.base_commit == info.base_commit
    assert str(pygit2.Repository(again.path).head.target) == made.commit_id


def test_remove_worktree_deletes_the_directory_and_keeps_the_branch(
    git_repo: Path, worktrees_root: Path
) -> None:
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    remove_worktree(git_repo, "t-1", worktrees_root)
    remove_worktree(git_repo, "t-1", worktrees_root)
    repo = pygit2.Repository(str(git_repo))
    assert not Path(info.path).exists()
    assert repo.list_worktrees() == []
    assert "semspec/task/t-1" in repo.branches.local


@pytest.mark.parametrize("task_id", ["../escape", "a/b", "has space", "..", "-flag", "x.lock", ""])
def test_unsafe_task_id_is_an_input_error(
    git_repo: Path, worktrees_root: Path, task_id: str
) -> None:
    with pytest.raises(InputError, match="task id"):
        ensure_worktree(git_repo, task_id, "main", worktrees_root)
    assert not worktrees_root.exists()


def test_unknown_base_branch_is_a_git_error_listing_the_branches(
    git_repo: Path, worktrees_root: Path
) -> None:
    with pytest.raises(GitError, match="'develop' does not exist") as caught:
        ensure_worktree(git_repo, "t-1", "develop", worktrees_root)
    assert caught.value.hint is not None and "main" in caught.value.hint
    assert "semspec/task/t-1" not in pygit2.Repository(str(git_repo)).branches.local


def test_path_that_is_not_a_repository_is_a_git_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitError, match="not a git repository") as caught:
        ensure_worktree(plain, "t-1", "main", tmp_path / "wt")
    assert caught.value.repo == str(plain)


def test_diff_covers_modified_deleted_and_untracked_files(
    git_repo: Path, worktrees_root: Path
) -> None:
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    work = Path(info.path)
    (work / "calc.py").write_text("def add(a, b):\n    return a + b + 0\n")
    (work / "README.md").unlink()
    (work / "pkg").mkdir()
    (work / "pkg" / "new.py").write_text("VALUE = 1\n")
    diff = worktree_diff(work, info.base_commit)
    assert diff.files == ["README.md", "calc.py", "pkg/new.py"]
    assert (diff.insertions, diff.deletions) == (2, 2)
    assert "+VALUE = 1" in diff.patch and "-# sample" in diff.patch


def test_diff_includes_committed_work_and_ignores_ignored_files(
    git_repo: Path, worktrees_root: Path
) -> None:
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    work = Path(info.path)
    (work / ".gitignore").write_text("*.log\n")
    commit_task(work, "t-1", "ignore logs", "k1")
    (work / "run.log").write_text("noise\n")
    diff = worktree_diff(work, info.base_commit)
    assert diff.files == [".gitignore"]


def test_diff_hash_covers_the_full_patch_when_the_text_is_cut(
    git_repo: Path, worktrees_root: Path
) -> None:
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    work = Path(info.path)
    (work / "big.txt").write_text("".join(f"line {i}\n" for i in range(2_000)))
    whole = worktree_diff(work, info.base_commit)
    cut = worktree_diff(work, info.base_commit, max_patch_chars=500)
    assert cut.patch_truncated and not whole.patch_truncated
    assert len(cut.patch) < 600 and cut.diff_hash == whole.diff_hash
    (work / "big.txt").write_text("changed\n")
    assert worktree_diff(work, info.base_commit, max_patch_chars=500).diff_hash != cut.diff_hash


def test_commit_twice_with_the_same_key_makes_one_commit(
    git_repo: Path, worktrees_root: Path
) -> None:
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    work = Path(info.path)
    (work / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    (work / "README.md").unlink()
    first = commit_task(work, "t-1", "Approve t-1", "approve-1")
    second = commit_task(work, "t-1", "Approve t-1", "approve-1")
    assert first.created and not second.created
    assert second.commit_id == first.commit_id
    repo = pygit2.Repository(str(git_repo))
    tip = repo.branches.local["semspec/task/t-1"].peel(pygit2.Commit)
    assert str(tip.id) == first.commit_id
    assert [str(p) for p in tip.parent_ids] == [info.base_commit]
    assert tip.message.endswith("Semspec-Task: t-1\nSemspec-Commit-Key: approve-1\n")
    assert sorted(str(e.name) for e in tip.tree) == ["calc.py", "tests"]
    assert pygit2.Repository(info.path).status() == {}
    assert repo.head.name == "refs/heads/main" and repo.status() == {}


def test_commit_with_a_different_key_makes_a_second_commit(
    git_repo: Path, worktrees_root: Path
) -> None:
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    work = Path(info.path)
    (work / "a.txt").write_text("a\n")
    first = commit_task(work, "t-1", "first", "k1")
    (work / "b.txt").write_text("b\n")
    second = commit_task(work, "t-1", "second", "k2")
    assert second.created and second.commit_id != first.commit_id
    # An older key further down the task's commits is still found.
    assert commit_task(work, "t-1", "first", "k1") == type(first)(first.commit_id, False)


def test_commit_with_nothing_to_commit_is_a_git_error(git_repo: Path, worktrees_root: Path) -> None:
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    with pytest.raises(GitError, match="nothing to commit"):
        commit_task(Path(info.path), "t-1", "empty", "k1")


def test_commit_from_the_users_checkout_is_refused(git_repo: Path) -> None:
    (git_repo / "x.txt").write_text("x\n")
    with pytest.raises(GitError, match="not on semspec/task/t-1"):
        commit_task(git_repo, "t-1", "wrong place", "k1")


def test_checkpoint_branches_are_created_listed_and_deleted(
    git_repo: Path, worktrees_root: Path
) -> None:
    info = ensure_worktree(git_repo, "t-1", "main", worktrees_root)
    for n in (1, 2):
        create_branch_at(git_repo, f"semspec/checkpoint/t-1/{n}", info.base_commit)
    create_branch_at(git_repo, "semspec/checkpoint/t-1/1", info.base_commit)
    assert list_branches(git_repo, "semspec/checkpoint/t-1/") == [
        "semspec/checkpoint/t-1/1",
        "semspec/checkpoint/t-1/2",
    ]
    deleted = delete_branches(git_repo, "semspec/")
    assert deleted == ["semspec/checkpoint/t-1/1", "semspec/checkpoint/t-1/2"]
    # The task branch is checked out in the worktree, so it stays.
    assert list_branches(git_repo, "semspec/") == ["semspec/task/t-1"]


def test_checkpoint_branch_is_never_moved_to_another_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    first = str(repo.head.target)
    (tmp_path / "r" / "a.txt").write_text("b\n")
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("t", "t@example.invalid")
    second = repo.create_commit("HEAD", sig, sig, "b", repo.index.write_tree(), [repo.head.target])
    create_branch_at(tmp_path / "r", "semspec/checkpoint/x/1", first)
    with pytest.raises(GitError, match="already exists"):
        create_branch_at(tmp_path / "r", "semspec/checkpoint/x/1", str(second))
