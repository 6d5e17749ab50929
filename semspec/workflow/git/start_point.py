"""Where a task branch starts: the base branch's tip, or the work of the tasks it depends on.

A plan task that depends on others starts from their approved commits, so it sees their
changes. One dependency gives its commit as it is; several are merged into one commit whose
parents are those commits. Conflicting dependencies are an error naming the files, since no
start point would honour both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pygit2

from semspec.core.errors import GitError
from semspec.workflow.git.names import SEMSPEC_AUTHOR
from semspec.workflow.git.repository import commit_of


def start_commit(
    repo: pygit2.Repository, repo_path: Path, base_branch: str, after: Sequence[str]
) -> pygit2.Commit:
    """The commit a new task branch is created at (see the module docstring)."""
    if not after:
        return branch_tip(repo, base_branch, repo_path)
    given = [commit_of(repo, commit_id, repo_path) for commit_id in dict.fromkeys(after)]
    # A dependency whose commit another one already contains adds nothing to merge.
    commits = [
        c for c in given if not any(repo.descendant_of(o.id, c.id) for o in given if o.id != c.id)
    ]
    if len(commits) == 1:
        return commits[0]
    return _merged(repo, repo_path, commits)


def branch_tip(repo: pygit2.Repository, base_branch: str, repo_path: Path) -> pygit2.Commit:
    """The commit at the tip of ``base_branch``; GitError listing the branches if it is missing."""
    branch = repo.branches.get(base_branch)
    if branch is None:
        known = ", ".join(sorted(repo.branches.local)) or "(none)"
        raise GitError(
            f"base branch {base_branch!r} does not exist",
            repo=str(repo_path),
            hint=f"set project.base_branch to one of: {known}",
        )
    commit = branch.peel(pygit2.Commit)
    assert isinstance(commit, pygit2.Commit)
    return commit


def _merged(
    repo: pygit2.Repository, repo_path: Path, commits: list[pygit2.Commit]
) -> pygit2.Commit:
    """A merge commit of ``commits`` (in the given order), written without any checkout."""
    tree_id = commits[0].tree_id
    for position, theirs in enumerate(commits[1:], start=1):
        base = _merge_base_tree(repo, theirs, commits[:position])
        index = repo.merge_trees(base, tree_id, theirs.tree)
        if index.conflicts is not None:
            paths = sorted({e.path for entry in index.conflicts for e in entry if e is not None})
            raise GitError(
                f"the commits this task starts from conflict in {', '.join(paths)}",
                repo=str(repo_path),
                hint="the tasks it depends on changed the same lines; make one depend on the "
                "other, or resolve the conflict on a branch and submit the task from there",
            )
        tree_id = index.write_tree(repo)
    # The newest parent's time makes the merge identical when a retried activity redoes it.
    when = max(c.committer.time for c in commits)
    signature = pygit2.Signature(*SEMSPEC_AUTHOR, when, 0)
    ids = [c.id for c in commits]
    message = "semspec: start from " + ", ".join(str(i)[:10] for i in ids) + "\n"
    merge_id = repo.create_commit(None, signature, signature, message, tree_id, ids)
    merge = repo[merge_id]
    assert isinstance(merge, pygit2.Commit)
    return merge


def _merge_base_tree(
    repo: pygit2.Repository, theirs: pygit2.Commit, merged: list[pygit2.Commit]
) -> pygit2.Tree:
    """The tree of the best common ancestor of ``theirs`` and the merge of ``merged``."""
    base_id = repo.merge_base_many([theirs.id, *(c.id for c in merged)])
    if base_id is None:
        # Unrelated histories: merge as if from an empty tree.
        empty = repo[repo.TreeBuilder().write()]
        assert isinstance(empty, pygit2.Tree)
        return empty
    tree = repo[base_id].peel(pygit2.Tree)
    assert isinstance(tree, pygit2.Tree)
    return tree
