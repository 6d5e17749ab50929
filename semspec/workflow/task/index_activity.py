"""``task.reindex``: after approval, the code graph takes the files the task's commit changed.

The paths come from git (the commit against the task's base), at most ``MAX_PATHS`` of them,
and their contents from the commit itself, so the worktree need not exist any more. A task
that changed more than that leaves the rest to ``semspec index``. Failing to index never
fails the task: the workflow logs it and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from temporalio import activity

from semspec.knowledge.code_index.index_changes import Change, index_changes
from semspec.knowledge.code_index.index_record import record_path
from semspec.workflow.activity_errors import activity_errors
from semspec.workflow.task.context_activities import graph_of, repo_config

MAX_PATHS = 500
"""Paths one approval re-indexes; a task's diff is rarely larger, a vendored drop may be."""


@dataclass(frozen=True)
class ReindexInput:
    """The repository and the two commits between which the task's changes lie."""

    repo_path: str
    base_commit: str
    commit_id: str


@dataclass(frozen=True)
class ReindexStep:
    """What the graph took: indexed, removed and failed paths; paths over the bound."""

    indexed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    left_over: int = 0


def changed_paths(repo: pygit2.Repository, base: str, commit: str) -> list[str]:
    """Every path the diff from ``base`` to ``commit`` touches (both sides of a rename)."""
    old = repo.revparse_single(base).peel(pygit2.Commit).tree
    new = repo.revparse_single(commit).peel(pygit2.Commit).tree
    paths: set[str] = set()
    for delta in old.diff_to_tree(new).deltas:
        paths.update((delta.old_file.path, delta.new_file.path))
    return sorted(paths)


def change_at(tree: pygit2.Tree, path: str, max_bytes: int) -> Change:
    """``path`` as ``tree`` holds it: content, gone (None), or why it is not read."""
    try:
        entry = tree[path]
    except KeyError:
        return Change(path, None)
    if entry.filemode == pygit2.enums.FileMode.LINK:
        return Change(path, None, "symlink not followed")
    blob = entry.peel(pygit2.Blob)
    if blob.size > max_bytes:
        return Change(path, None, f"too large ({blob.size} bytes > {max_bytes})")
    return Change(path, blob.data)


@activity.defn(name="task.reindex")
@activity_errors
def reindex_changes(inp: ReindexInput) -> ReindexStep:
    """Bring the code graph's facts of the task's changed files up to its approved commit."""
    repo = Path(inp.repo_path)
    config = repo_config(repo)
    git = pygit2.Repository(inp.repo_path)
    paths = changed_paths(git, inp.base_commit, inp.commit_id)
    tree = git.revparse_single(inp.commit_id).peel(pygit2.Commit).tree
    max_bytes = config.index.max_file_bytes
    changes = (change_at(tree, path, max_bytes) for path in paths[:MAX_PATHS])
    with graph_of(repo, config, create=True) as store:
        assert store is not None
        report = index_changes(store, changes, config.index, record_path(config, repo))
    return ReindexStep(
        indexed=report.indexed,
        removed=report.removed,
        failed=[f"{f.path}:{f.line}: {f.message}" for f in report.failed],
        left_over=max(0, len(paths) - MAX_PATHS),
    )
