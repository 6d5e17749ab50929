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
from workflow.git.repository import commit_of, open_repository

_SIGNATURE = ("semspec", "semspec@localhost")
_BLOB, _EXECUTABLE, _LINK = int(FileMode.BLOB), int(FileMode.BLOB_EXECUTABLE), int(FileMode.LINK)
_Updates = dict[tuple[str, ...], tuple[bytes, int] | None]


def snapshot_commit(
    repo_path: Path,
    worktree: Path,
    base_commit: str,
    parent_commit: str,
    changed: Iterable[str],
    message: str,
) -> str:
    """Commit ``base_commit``'s tree with ``changed`` paths taken from ``worktree`` (missing
    ones deleted), as a child of ``parent_commit``; no branch moves. Returns the commit id."""
    repo = open_repository(repo_path)
    base = commit_of(repo, base_commit, repo_path)
    parent = commit_of(repo, parent_commit, repo_path)
    root = str(worktree.resolve())
    updates: _Updates = {}
    for rel in sorted(set(changed)):
        parts = tuple(p for p in Path(rel).parts if p not in ("", "."))
        if not parts or ".." in parts or parts[0] == ".git":
            raise GitError(f"path {rel!r} cannot be part of a snapshot", repo=str(repo_path))
        updates[parts] = _read(os.path.join(root, *parts))
    tree_id = _rebuild(repo, base.tree, updates)
    signature = pygit2.Signature(*_SIGNATURE)
    commit_id = repo.create_commit(None, signature, signature, message, tree_id, [parent.id])
    return str(commit_id)


def _read(path: str) -> tuple[bytes, int] | None:
    """File content and git mode, or None when the path no longer exists (one ``lstat``)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return os.readlink(path).encode(), _LINK
    if not stat.S_ISREG(info.st_mode):
        return None
    with open(path, "rb") as handle:
        data = handle.read()
    return data, (_EXECUTABLE if info.st_mode & 0o111 else _BLOB)


def _blob(repo: pygit2.Repository, data: bytes) -> pygit2.Oid:
    """The blob's id, writing it only when the object database lacks it (the common case for
    files already snapshotted is a hash and a lookup, no file written)."""
    oid = pygit2.hash(data)
    return oid if oid in repo.odb else repo.create_blob(data)


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
            data, mode = content
            builder.insert(parts[0], _blob(repo, data), mode)
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
