"""Snapshot commits hold exactly the worktree's state, built without the index."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

from semspec.workflow.git.snapshot import snapshot_branch
from semspec.workflow.git.worktree import ensure_worktree


def _tree_files(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = "") -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for entry in tree:
        obj = repo[entry.id]
        if isinstance(obj, pygit2.Tree):
            files.update(_tree_files(repo, obj, f"{prefix}{entry.name}/"))
        else:
            assert isinstance(obj, pygit2.Blob)
            files[f"{prefix}{entry.name}"] = obj.data
    return files


def test_a_snapshot_holds_modified_new_and_deleted_files_and_moves_no_branch(
    git_repo: Path, tmp_path: Path
) -> None:
    info = ensure_worktree(git_repo, "snap", "main", tmp_path / "wt")
    wt = Path(info.path)
    (wt / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    (wt / "pkg" / "deep").mkdir(parents=True)
    (wt / "pkg" / "deep" / "new.py").write_text("NEW = 1\n")
    (wt / "README.md").unlink()
    (wt / "tests" / "test_calc.py").unlink()
    (wt / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(wt / "run.sh", 0o755)
    changed = ["calc.py", "pkg/deep/new.py", "README.md", "tests/test_calc.py", "run.sh"]
    repo = pygit2.Repository(str(git_repo))
    tip_before = repo.lookup_branch("semspec/task/snap").target
    commit_id = snapshot_branch(
        git_repo, wt, info.base_commit, str(tip_before), changed, "checkpoint 1", "cp/snap/1"
    )
    commit = repo[commit_id]
    assert isinstance(commit, pygit2.Commit)
    assert _tree_files(repo, commit.tree) == {
        "calc.py": b"def add(a, b):\n    return b + a\n",
        "pkg/deep/new.py": b"NEW = 1\n",
        "run.sh": b"#!/bin/sh\n",
    }
    assert commit.tree["run.sh"].filemode == pygit2.enums.FileMode.BLOB_EXECUTABLE
    assert [str(p) for p in commit.parent_ids] == [str(tip_before)]
    assert repo.lookup_branch("semspec/task/snap").target == tip_before
    assert repo.status() == {}  # the user's checkout saw nothing


def test_a_snapshot_refuses_paths_into_git_or_out_of_the_tree(
    git_repo: Path, tmp_path: Path
) -> None:
    import pytest

    from semspec.core.errors import GitError

    info = ensure_worktree(git_repo, "snap2", "main", tmp_path / "wt")
    for bad in (".git/config", "../outside.py"):
        with pytest.raises(GitError, match="cannot be part of a snapshot"):
            snapshot_branch(
                git_repo, Path(info.path), info.base_commit, info.base_commit, [bad], "x", "cp/x"
            )
