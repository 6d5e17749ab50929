"""Opening repositories and looking up commits, with failures turned into GitError."""

from __future__ import annotations

from pathlib import Path

import pygit2

from semspec.core.errors import GitError


def open_repository(path: Path) -> pygit2.Repository:
    """The repository (or linked worktree) at ``path``; GitError with a hint if there is none."""
    try:
        return pygit2.Repository(str(path))
    except (pygit2.GitError, KeyError, OSError) as exc:
        raise GitError(
            f"not a git repository: {exc}",
            repo=str(path),
            hint="point semspec at the root of a git repository (run `git init` there first)",
        ) from exc


def commit_of(repo: pygit2.Repository, commit_id: str, repo_path: Path) -> pygit2.Commit:
    """The commit named by ``commit_id`` (a full or abbreviated hex id), else GitError."""
    try:
        commit = repo.revparse_single(commit_id).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise GitError(
            f"no commit {commit_id!r}", repo=str(repo_path), hint="pass an existing commit id"
        ) from exc
    assert isinstance(commit, pygit2.Commit)
    return commit
