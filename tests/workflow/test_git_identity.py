"""The repository identity the risk monitor keys files by: the root commit, shared by clones."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2

from semspec.workflow.git.identity import repository_identity
from tests.support.repos import make_repo


def test_clones_share_the_identity_and_other_repositories_do_not(
    git_repo: Path, tmp_path: Path
) -> None:
    repo = pygit2.Repository(str(git_repo))
    root = str(repo.head.target)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(git_repo), str(clone)], check=True)
    head = str(pygit2.Repository(str(clone)).head.target)
    assert repository_identity(str(git_repo), root) == root[:12]
    assert repository_identity(str(clone), head) == root[:12]
    other = make_repo(tmp_path / "other", {"calc.py": "X = 1\n"})
    assert repository_identity(str(tmp_path / "other"), str(other.head.target)) != root[:12]


def test_a_later_commit_keeps_the_identity_of_its_root(git_repo: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    root = repo.head.target
    sig = pygit2.Signature("t", "t@example.invalid", 1_700_000_100, 0)
    builder = repo.TreeBuilder(repo[root].peel(pygit2.Tree))
    builder.insert("new.txt", repo.create_blob(b"new\n"), pygit2.enums.FileMode.BLOB)
    later = repo.create_commit(None, sig, sig, "later", builder.write(), [root])
    assert repository_identity(str(git_repo), str(later)) == str(root)[:12]


def test_merging_an_unrelated_history_in_keeps_the_mainline_identity(git_repo: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    root = repo.head.target
    sig = pygit2.Signature("t", "t@example.invalid", 1_700_000_200, 0)
    builder = repo.TreeBuilder()
    builder.insert("vendored.txt", repo.create_blob(b"v\n"), pygit2.enums.FileMode.BLOB)
    # An unrelated root commit, merged into the mainline as a second parent.
    foreign = repo.create_commit(None, sig, sig, "foreign", builder.write(), [])
    tree = repo[root].peel(pygit2.Tree).id
    merge = repo.create_commit(None, sig, sig, "merge", tree, [root, foreign])
    assert repository_identity(str(git_repo), str(merge)) == str(root)[:12]


def test_a_shallow_clone_or_an_unreadable_repository_has_no_identity(
    git_repo: Path, tmp_path: Path
) -> None:
    shallow = tmp_path / "shallow"
    url = f"file://{git_repo}"
    subprocess.run(["git", "clone", "-q", "--depth", "1", url, str(shallow)], check=True)
    head = str(pygit2.Repository(str(shallow)).head.target)
    assert repository_identity(str(shallow), head) == ""
    assert repository_identity(str(tmp_path / "missing"), head) == ""
