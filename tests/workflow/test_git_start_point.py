"""Task branches of dependent plan tasks start from their dependencies' approved commits."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from semspec.core.errors import GitError
from semspec.workflow.git.start_point import start_commit
from semspec.workflow.git.worktree import ensure_worktree
from tests.support.repos import SIGNATURE, make_repo


def commit_on_main(repo: pygit2.Repository, files: dict[str, str], parent: str) -> str:
    """A commit (on no branch) that changes ``files`` on top of ``parent``."""
    base = repo[parent].peel(pygit2.Commit)
    builder = repo.TreeBuilder(base.tree)
    for name, text in files.items():
        builder.insert(name, repo.create_blob(text.encode()), pygit2.enums.FileMode.BLOB)
    commit = repo.create_commit(None, SIGNATURE, SIGNATURE, "dep", builder.write(), [base.id])
    return str(commit)


def test_one_dependency_gives_its_commit_as_the_start(git_repo: Path, tmp_path: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    main = str(repo.head.target)
    dep = commit_on_main(repo, {"feature.py": "A = 1\n"}, main)
    info = ensure_worktree(git_repo, "after-one", "main", tmp_path / "wt", [dep])
    assert info.base_commit == dep
    assert (Path(info.path) / "feature.py").read_text() == "A = 1\n"


def test_several_dependencies_are_merged_the_same_way_on_every_retry(git_repo: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    main = str(repo.head.target)
    left = commit_on_main(repo, {"left.py": "L = 1\n"}, main)
    right = commit_on_main(repo, {"right.py": "R = 1\n"}, main)
    merged = start_commit(repo, git_repo, "main", [left, right])
    assert [str(p) for p in merged.parent_ids] == [left, right]
    assert {"left.py", "right.py", "calc.py"} <= {entry.name for entry in merged.tree}
    assert start_commit(repo, git_repo, "main", [left, right]).id == merged.id


def test_a_dependency_already_contained_in_another_is_not_merged_again(git_repo: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    first = commit_on_main(repo, {"a.py": "A = 1\n"}, str(repo.head.target))
    second = commit_on_main(repo, {"b.py": "B = 1\n"}, first)
    assert str(start_commit(repo, git_repo, "main", [first, second]).id) == second


def test_conflicting_dependencies_are_an_error_naming_the_file(git_repo: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    main = str(repo.head.target)
    left = commit_on_main(repo, {"calc.py": "def add(a, b):\n    return a + b + 1\n"}, main)
    right = commit_on_main(repo, {"calc.py": "def add(a, b):\n    return a + b + 2\n"}, main)
    with pytest.raises(GitError, match=r"conflict in calc\.py"):
        start_commit(repo, git_repo, "main", [left, right])


def test_without_dependencies_the_base_branch_tip_is_the_start(git_repo: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    assert start_commit(repo, git_repo, "main", []).id == repo.head.target
    with pytest.raises(GitError, match="base branch 'develop' does not exist"):
        start_commit(repo, git_repo, "develop", [])


def test_the_merge_base_is_the_nearest_one_whatever_the_order(tmp_path: Path) -> None:
    # X adds f on O; A edits f on X; B adds g on X; C adds h on O. Merging C before B must not
    # take O (the ancestor of all three) as B's base, or A's edit to f looks like a conflict.
    repo = make_repo(tmp_path / "r", {"base.txt": "o\n"})
    o = str(repo.head.target)
    x = commit_on_main(repo, {"f": "1\n2\n3\n"}, o)
    a = commit_on_main(repo, {"f": "1\nTWO\n3\n"}, x)
    b = commit_on_main(repo, {"g": "g\n"}, x)
    c = commit_on_main(repo, {"h": "h\n"}, o)
    for order in ([a, b, c], [a, c, b], [c, b, a]):
        merged = start_commit(repo, tmp_path / "r", "main", order)
        assert {e.name for e in merged.tree} == {"base.txt", "f", "g", "h"}
        blob = repo[merged.tree["f"].id]
        assert isinstance(blob, pygit2.Blob) and blob.data == b"1\nTWO\n3\n"
