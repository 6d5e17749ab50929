"""Each iteration's change, for the task page: what the developer's turn of that iteration did.

The developer step writes the worktree's state after each turn as a git tree (``snapshot_tree``,
the checkpoint's machinery without a commit or branch) and its log entry names it (``tree``).
An iteration's diff is its tree against the one before it (the base commit's for the first, or
when the one before named none: then the page says so). pygit2 blocks, so ``iteration_diffs``
runs in a worker thread; each patch is masked as the whole task's is and cut to a bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread
import pygit2

from semspec.console.diff_files import FileDiff, split_patch
from semspec.core.errors import GitError
from semspec.core.secret_scan import SecretScan
from semspec.workflow.git.repository import commit_of, open_repository
from semspec.workflow.task.messages import TaskStatus
from semspec.workflow.task.secret_guard import change_scan

TREE_KEY = "tree"
"""The key of a developer log entry's ``data`` that names the worktree's tree after the turn."""
MAX_ITERATION_CHARS = 20_000
"""The most of one iteration's patch the page shows; the rest is cut, and the page says so."""
MAX_ITERATIONS_SHOWN = 10
"""Iterations whose diff the page shows, the newest; older ones say they are not shown. With
``MAX_ITERATION_CHARS`` it bounds what the page diffs and masks to twice the whole task's."""


@dataclass(frozen=True)
class IterationDiff:
    """One iteration's change, split per file."""

    iteration: int
    against: str
    """What it is diffed against: ``the base commit`` or ``iteration N``."""
    files: list[FileDiff] = field(default_factory=list)
    insertions: int = 0
    deletions: int = 0
    cut: bool = False
    problem: str = ""
    """Why there is no diff to show, when there is none."""


def iteration_trees(status: TaskStatus) -> dict[int, str]:
    """Each iteration's tree, as its last developer entry names it (a retried or resumed turn
    writes another entry for the same iteration: the last one is what the gates saw)."""
    trees: dict[int, str] = {}
    for entry in status.log:
        data = entry.data if isinstance(entry.data, Mapping) else {}
        tree = data.get(TREE_KEY)
        if entry.kind == "developer" and isinstance(tree, str) and tree:
            trees[entry.iteration] = tree
    return trees


async def iteration_diffs(status: TaskStatus, repo: Path) -> dict[int, IterationDiff]:
    """The diffs of the newest iterations that named a tree, by iteration, read off the loop."""
    return await anyio.to_thread.run_sync(diffs_of, status, repo)


def diffs_of(status: TaskStatus, repo_path: Path) -> dict[int, IterationDiff]:
    """``iteration_diffs`` in the calling thread."""
    trees = iteration_trees(status)
    if not trees or not status.base_commit:
        return {}
    try:
        repo = open_repository(repo_path)
        base = commit_of(repo, status.base_commit, repo_path).tree
    except GitError as exc:
        return {n: IterationDiff(n, "", problem=exc.message) for n in trees}
    shown = sorted(trees)[-MAX_ITERATIONS_SHOWN:]
    scan = change_scan(repo_path)  # the repository's secret names, read once for the page
    found: dict[int, IterationDiff] = {}
    for number in sorted(trees):
        before = trees.get(number - 1)
        against = f"iteration {number - 1}" if before else "the base commit"
        if number not in shown:
            problem = f"not shown: the page shows the newest {MAX_ITERATIONS_SHOWN} iterations"
            found[number] = IterationDiff(number, against, problem=problem)
            continue
        found[number] = _diff(repo, scan, number, against, before, base, trees[number])
    return found


def _diff(
    repo: pygit2.Repository,
    scan: SecretScan,
    number: int,
    against: str,
    before: str | None,
    base: pygit2.Tree,
    after: str,
) -> IterationDiff:
    old = _tree(repo, before) if before else base
    new = _tree(repo, after)
    if old is None or new is None:
        gone = "its tree is no longer in the repository (git gc prunes it after two weeks)"
        return IterationDiff(number, against, problem=gone)
    # One pass: every file's counts, and the text of the files up to the bound only.
    parts: list[str] = []
    size = insertions = deletions = 0
    cut = False
    for patch in old.diff_to_tree(new):
        if patch is None:
            continue
        _, added, removed = patch.line_stats
        insertions, deletions = insertions + added, deletions + removed
        if size >= MAX_ITERATION_CHARS:
            cut = True
            continue
        text = patch.text or ""
        parts.append(text[: MAX_ITERATION_CHARS - size])
        cut = cut or len(text) > MAX_ITERATION_CHARS - size
        size += len(parts[-1])
    shown = scan.mask("".join(parts))
    return IterationDiff(number, against, split_patch(shown), insertions, deletions, cut)


def _tree(repo: pygit2.Repository, tree_id: str) -> pygit2.Tree | None:
    try:
        found = repo.get(tree_id)
    except ValueError:  # not an object id at all
        return None
    return found if isinstance(found, pygit2.Tree) else None
