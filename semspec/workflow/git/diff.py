"""The task's change as one patch: committed and uncommitted work, new files included."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import DiffOption

from semspec.workflow.git.repository import commit_of, open_repository

DEFAULT_MAX_PATCH_CHARS = 200_000
# Tree-to-workdir shows what `git diff <base>` shows plus untracked (not ignored) files in full.
_FLAGS = (
    DiffOption.INCLUDE_UNTRACKED
    | DiffOption.RECURSE_UNTRACKED_DIRS
    | DiffOption.SHOW_UNTRACKED_CONTENT
)


@dataclass
class DiffInfo:
    """A worktree's change against its base commit; ``diff_hash`` covers the whole patch."""

    patch: str
    files: list[str]
    insertions: int
    deletions: int
    diff_hash: str
    patch_truncated: bool = False


def worktree_diff(
    worktree: Path, base_commit: str, max_patch_chars: int = DEFAULT_MAX_PATCH_CHARS
) -> DiffInfo:
    """Diff ``base_commit`` against the worktree's files as they are now (ignored files left out).

    The patch text is cut to ``max_patch_chars``; the hash is of the full patch, so equal
    changes hash equally whatever the cut.
    """
    repo = open_repository(worktree)
    base_tree = commit_of(repo, base_commit, worktree).tree
    diff = base_tree.diff_to_workdir(_FLAGS)
    full = diff.patch or ""
    files = sorted({_path_of(delta) for delta in diff.deltas})
    patch, truncated = _bounded(full, max_patch_chars)
    return DiffInfo(
        patch=patch,
        files=files,
        insertions=diff.stats.insertions,
        deletions=diff.stats.deletions,
        diff_hash=hashlib.sha256(full.encode("utf-8")).hexdigest(),
        patch_truncated=truncated,
    )


def commit_patch(
    repo_path: Path, base_commit: str, head: str, max_patch_chars: int = DEFAULT_MAX_PATCH_CHARS
) -> str:
    """The patch from ``base_commit`` to ``head`` (a commit id or a branch), cut to
    ``max_patch_chars``: a task's change once its worktree is gone."""
    repo = open_repository(repo_path)
    diff = repo.diff(commit_of(repo, base_commit, repo_path), commit_of(repo, head, repo_path))
    return _bounded(diff.patch or "", max_patch_chars)[0]


def _path_of(delta: pygit2.DiffDelta) -> str:
    path = delta.new_file.path or delta.old_file.path
    assert isinstance(path, str)
    return path


def _bounded(patch: str, max_chars: int) -> tuple[str, bool]:
    if len(patch) <= max_chars:
        return patch, False
    marker = f"\n[... patch cut: {len(patch) - max_chars} more characters ...]\n"
    return patch[:max_chars] + marker, True


def added_lines(worktree: Path, base_commit: str) -> list[tuple[str, int, str]]:
    """``(path, line number, text)`` of every line the worktree adds against ``base_commit``
    (untracked files in full, ignored files left out): what a commit of it would bring in."""
    repo = open_repository(worktree)
    diff = commit_of(repo, base_commit, worktree).tree.diff_to_workdir(_FLAGS)
    found: list[tuple[str, int, str]] = []
    for patch in diff:
        if patch is None:
            continue
        path = _path_of(patch.delta)
        for hunk in patch.hunks:
            for line in hunk.lines:
                if line.origin == "+":
                    found.append((path, line.new_lineno, line.content.rstrip("\r\n")))
    return found
