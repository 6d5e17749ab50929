"""Snapshot commits: the worktree's state as a commit, built from trees, touching no index.

A checkpoint only needs the files the loop already knows changed (the developer step's diff
against the base commit): the base tree is rebuilt along their paths alone, so the cost
follows the change, not the size of the repository. libgit2 writes the new blobs, trees and
commit into the object database; the branch is created last, so nothing names a checkpoint
before all of its objects are stored (ADR 0002).
"""

from __future__ import annotations

import enum
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import pygit2
from pygit2.enums import FileMode, ObjectType

from semspec.core.errors import GitError
from semspec.workflow.git.checkpoint import valid_branch_name
from semspec.workflow.git.names import SEMSPEC_AUTHOR
from semspec.workflow.git.repository import commit_of, open_repository

_BLOB, _EXECUTABLE, _LINK = int(FileMode.BLOB), int(FileMode.BLOB_EXECUTABLE), int(FileMode.LINK)
_TREE, _GITLINK = int(FileMode.TREE), int(FileMode.COMMIT)
_TREE_OBJECT = int(ObjectType.TREE)


class _Unchanged(enum.Enum):
    """What a changed path that is a plain directory contributes: nothing of its own."""

    TOKEN = 0


_UNCHANGED = _Unchanged.TOKEN
_Content = tuple[int, pygit2.Oid] | Literal[_Unchanged.TOKEN] | None
# A path (as name bytes) and its new content: git mode and object id, None when deleted.
_Updates = dict[tuple[bytes, ...], tuple[int, pygit2.Oid] | None]


def snapshot_branch(
    repo_path: Path,
    worktree: Path,
    base_commit: str,
    parent: str,
    changed: Iterable[str],
    message: str,
    branch: str,
) -> str:
    """Commit ``base_commit``'s tree with ``changed`` paths taken from ``worktree`` (missing
    ones deleted), as a child of ``parent`` (a commit id or revision), onto the new branch
    ``branch``; no other branch moves. Returns the commit id.

    Idempotent: when ``branch`` already exists (a retried checkpoint), nothing is written and
    its tip is returned, since a checkpoint branch is never moved.
    """
    valid_branch_name(branch)
    repo = open_repository(repo_path)
    existing = repo.branches.local.get(branch)
    if existing is not None:
        return str(existing.target)
    commit_id = _snapshot(repo, repo_path, worktree, base_commit, parent, changed, message)
    try:
        repo.references.create(f"refs/heads/{branch}", commit_id)
    except pygit2.AlreadyExistsError:
        raise GitError(
            f"branch {branch!r} was created by someone else during the snapshot",
            repo=str(repo_path),
            hint="checkpoint numbers must be unique per task; retry to reuse the branch",
        ) from None
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
    tree = _tree_of(repo, repo_path, worktree, base_commit, changed)
    parent_commit = commit_of(repo, parent, repo_path)
    who = pygit2.Signature(*SEMSPEC_AUTHOR, int(time.time()), 0)
    return repo.create_commit(None, who, who, message.rstrip("\n") + "\n", tree, [parent_commit.id])


def snapshot_tree(worktree: Path, base_commit: str, changed: Iterable[str]) -> str:
    """The id of ``base_commit``'s tree with the ``changed`` paths as ``worktree`` has them
    (missing ones deleted): the worktree's state, written to the object database as a checkpoint
    writes it, with no index, commit or branch (the console diffs one iteration's tree against
    the one before). Unreferenced, it lasts until ``git gc`` prunes it (two weeks by default).
    """
    repo = open_repository(worktree)
    return str(_tree_of(repo, worktree, worktree, base_commit, changed))


def _tree_of(
    repo: pygit2.Repository,
    repo_path: Path,
    worktree: Path,
    base_commit: str,
    changed: Iterable[str],
) -> pygit2.Oid:
    base = commit_of(repo, base_commit, repo_path)
    root = os.path.realpath(worktree)
    updates: _Updates = {}
    for rel in sorted(set(changed)):
        parts = tuple(p for p in rel.replace(os.sep, "/").split("/") if p not in ("", "."))
        if not parts or ".." in parts or parts[0] == ".git":
            raise GitError(f"path {rel!r} cannot be part of a snapshot", repo=str(repo_path))
        content = _content_of(repo, root + "/" + "/".join(parts))
        if content is not _UNCHANGED:
            updates[tuple(os.fsencode(p) for p in parts)] = content
    return _rebuild(repo, base.tree, updates) or repo.TreeBuilder().write()


def _content_of(repo: pygit2.Repository, path: str) -> _Content:
    """The git mode and object id the worktree has at ``path``: None when nothing is there any
    more (the path is deleted), ``_UNCHANGED`` for a plain directory (its files are listed on
    their own when they changed).

    A file is stored as its bytes are, like a symlink's target; libgit2 skips objects the
    database already has. A submodule is recorded at the commit its checkout is on.
    """
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # gone, or a parent became a file
        return None
    if stat.S_ISLNK(info.st_mode):
        return _LINK, repo.create_blob(os.readlink(os.fsencode(path)))
    if stat.S_ISDIR(info.st_mode):
        return _submodule_head(path)
    if not stat.S_ISREG(info.st_mode):
        return None  # a socket or fifo: git cannot hold it
    # Not create_blob_fromdisk: it applies the repository's filters (line endings, ident) only
    # to files that happen to lie inside its working directory, which a task's worktree may not.
    with open(path, "rb") as handle:
        blob = repo.create_blob(handle.read())
    return (_EXECUTABLE if info.st_mode & 0o111 else _BLOB), blob


def _submodule_head(path: str) -> _Content:
    if not os.path.lexists(os.path.join(path, ".git")):
        return _UNCHANGED
    try:
        head = pygit2.Repository(path).head.peel(pygit2.Commit).id
    except (pygit2.GitError, KeyError, OSError):
        return _UNCHANGED  # no commit to record: keep what the base tree has
    return _GITLINK, head


def _rebuild(
    repo: pygit2.Repository, tree: pygit2.Tree | None, updates: _Updates
) -> pygit2.Oid | None:
    """The id of ``tree`` with ``updates`` applied (None if it ends up empty), writing the
    subtrees the updates touch; the others are reused as they are."""
    entries: dict[bytes, tuple[int, pygit2.Oid]] = {
        entry.raw_name or b"": (int(entry.filemode), entry.id) for entry in tree or ()
    }
    nested: dict[bytes, _Updates] = {}
    # A name that became a file (or submodule) here takes the place of the directory it was;
    # the deletions listed beneath that directory have nothing left to act on.
    replaced = {parts[0] for parts, content in updates.items() if len(parts) == 1 and content}
    for parts, content in updates.items():
        if len(parts) > 1:
            if parts[0] not in replaced:
                nested.setdefault(parts[0], {})[parts[1:]] = content
        elif content is None:
            entries.pop(parts[0], None)
        else:
            entries[parts[0]] = content
    for name, sub_updates in nested.items():
        mode, oid = entries.get(name, (0, None))
        subtree = repo[oid] if mode == _TREE and oid is not None else None
        assert subtree is None or isinstance(subtree, pygit2.Tree)
        new_id = _rebuild(repo, subtree, sub_updates)
        if new_id is None:
            entries.pop(name, None)
        else:
            entries[name] = (_TREE, new_id)
    if not entries:
        return None
    # pygit2's TreeBuilder takes names as UTF-8 text only, and git names are bytes (a Latin-1
    # file name is valid), so the tree is laid out here in git's format and libgit2 stores it:
    # entries ordered by name, a directory's name compared as if it ended with "/".
    ordered = sorted(
        entries.items(), key=lambda item: item[0] + b"/" if item[1][0] == _TREE else item[0]
    )
    data = b"".join(b"%o %s\0%s" % (mode, name, oid.raw) for name, (mode, oid) in ordered)
    return repo.odb.write(_TREE_OBJECT, data)
