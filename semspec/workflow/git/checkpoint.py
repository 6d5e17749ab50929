"""Branch helpers for checkpoints (``semspec/checkpoint/<id>/<n>``): create, list, delete."""

from __future__ import annotations

from pathlib import Path

import pygit2

from semspec.core.errors import GitError, InputError
from semspec.workflow.git.repository import commit_of, open_repository


def valid_branch_name(name: str) -> None:
    """InputError unless ``name`` can be a local branch."""
    if not pygit2.reference_is_valid_name(f"refs/heads/{name}"):
        raise InputError(
            f"{name!r} is not a valid branch name", hint="avoid '..', spaces and '~^:'"
        )


def create_branch_at(repo_path: Path, name: str, commit_id: str) -> None:
    """Create branch ``name`` at ``commit_id``; a no-op if it already points there."""
    valid_branch_name(name)
    repo = open_repository(repo_path)
    commit = commit_of(repo, commit_id, repo_path)
    existing = repo.branches.local.get(name)
    if existing is not None:
        if existing.target == commit.id:
            return
        raise GitError(
            f"branch {name!r} already exists at {existing.target}, not at {commit.id}",
            repo=str(repo_path),
            hint="checkpoint branches are never moved; use the next checkpoint number",
        )
    repo.branches.local.create(name, commit)


def list_branches(repo_path: Path, prefix: str) -> list[str]:
    """Names of local branches starting with ``prefix``, sorted."""
    repo = open_repository(repo_path)
    return sorted(name for name in repo.branches.local if name.startswith(prefix))


def delete_branches(repo_path: Path, prefix: str) -> list[str]:
    """Delete local branches starting with ``prefix`` and return their names.

    Branches checked out in some worktree are kept (and not returned): deleting them would
    leave that checkout on a missing branch.
    """
    if not prefix:
        raise InputError("refusing to delete branches with an empty prefix", hint="pass a prefix")
    repo = open_repository(repo_path)
    deleted = []
    for name in list_branches(repo_path, prefix):
        branch = repo.branches.local[name]
        if branch.is_checked_out():
            continue
        branch.delete()
        deleted.append(name)
    return deleted
