"""Snapshot commits: the worktree's state as a commit, built from trees, touching no index.

A checkpoint only needs the files the loop already knows changed (the developer step's diff
against the base commit): their blobs are written and the base tree is rebuilt along their
paths alone, so the cost follows the change, not the size of the repository.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from semspec.errors import GitError
from workflow.git.checkpoint import branch_at, valid_branch_name
from workflow.git.repository import commit_of, open_repository

_SIGNATURE = ("semspec", "semspec@localhost")
_BLOB, _EXECUTABLE, _LINK = int(FileMode.BLOB), int(FileMode.BLOB_EXECUTABLE), int(FileMode.LINK)
# A path's new content: a blob id and git mode, or None when the path was deleted.
_Updates = dict[tuple[str, ...], tuple[pygit2.Oid, int] | None]


def snapshot_commit(
    repo_path: Path,
    worktree: Path,
    base_commit: str,
    parent: str,
    changed: Iterable[str],
    message: str,
) -> str:
    """Commit ``base_commit``'s tree with ``changed`` paths taken from ``worktree`` (missing
    ones deleted), as a child of ``parent`` (a commit id or revision); no branch moves.
    Returns the commit id."""
    repo = open_repository(repo_path)
    return str(_snapshot(repo, repo_path, worktree, base_commit, parent, changed, message))


def snapshot_branch(
    repo_path: Path,
    worktree: Path,
    base_commit: str,
    parent: str,
    changed: Iterable[str],
    message: str,
    branch: str,
) -> str:
    """``snapshot_commit`` onto a new branch ``branch``, with the repository opened once.

    Idempotent: when ``branch`` already exists (a retried checkpoint), nothing is written and
    its tip is returned, since a checkpoint branch is never moved.
    """
    valid_branch_name(branch)
    repo = open_repository(repo_path)
    existing = repo.branches.local.get(branch)
    if existing is not None:
        return str(existing.target)
    commit_id = _snapshot(repo, repo_path, worktree, base_commit, parent, changed, message)
    branch_at(repo, repo_path, branch, repo[commit_id].peel(pygit2.Commit))
    return str(commit_id)


def _snapshot(
    repo: pygit2.Repository,
    repo_path: Path,
    worktree: Path,
    base_commit: str,
    parent: str,
    changed: Iterable[str],
    message: str,
) -> pygit2.Oid:
    base = commit_of(repo, base_commit, repo_path)
    parent_commit = commit_of(repo, parent, repo_path)
    root = os.path.realpath(worktree)
    updates: _Updates = {}
    for rel in sorted(set(changed)):
        parts = tuple(p for p in rel.replace(os.sep, "/").split("/") if p not in ("", "."))
        if not parts or ".." in parts or parts[0] == ".git":
            raise GitError(f"path {rel!r} cannot be part of a snapshot", repo=str(repo_path))
        updates[parts] = _blob_of(repo, root + "/" + "/".join(parts))
    tree_id = _rebuild(repo, base.tree, updates)
    signature = pygit2.Signature(*_SIGNATURE)
    return repo.create_commit(None, signature, signature, message, tree_id, [parent_commit.id])


def _blob_of(repo: pygit2.Repository, path: str) -> tuple[pygit2.Oid, int] | None:
    """The blob id and git mode of the file at ``path`` (None if it no longer exists).

    The file is hashed in libgit2 and only read into Python and written when the object
    database lacks it: files already snapshotted, the common case in a growing diff, cost a
    hash and a lookup.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return repo.create_blob(os.readlink(path).encode()), _LINK
    if not stat.S_ISREG(info.st_mode):
        return None
    mode = _EXECUTABLE if info.st_mode & 0o111 else _BLOB
    oid = pygit2.hashfile(path)
    if oid not in repo.odb:
        with open(path, "rb") as handle:
            oid = repo.create_blob(handle.read())
    return oid, mode


def _rebuild(repo: pygit2.Repository, tree: pygit2.Tree | None, updates: _Updates) -> pygit2.Oid:
    """Write ``tree`` with ``updates`` applied, rebuilding only the subtrees they touch."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    nested: dict[str, _Updates] = {}
    for parts, content in updates.items():
        if len(parts) > 1:
            nested.setdefault(parts[0], {})[parts[1:]] = content
        elif content is None:
            if builder.get(parts[0]) is not None:
                builder.remove(parts[0])
        else:
            builder.insert(parts[0], *content)
    for name, sub_updates in nested.items():
        entry = builder.get(name)
        subtree = entry if isinstance(entry, pygit2.Tree) else None
        new_id = _rebuild(repo, subtree, sub_updates)
        if len(repo[new_id]) == 0:  # type: ignore[arg-type]
            if entry is not None:
                builder.remove(name)
        else:
            builder.insert(name, new_id, int(FileMode.TREE))
    return builder.write()
