"""Snapshot commits: the worktree's state as a commit, built from trees, touching no index.

A checkpoint only needs the files the loop already knows changed (the developer step's diff
against the base commit): the base tree is rebuilt along their paths alone, so the cost
follows the change, not the size of the repository. The new blobs, trees and commit are
written as one pack (``pack_writer``), which appears whole or not at all.
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
from pygit2.enums import FileMode

from semspec.core.errors import GitError
from semspec.workflow.git.checkpoint import valid_branch_name
from semspec.workflow.git.names import SEMSPEC_AUTHOR
from semspec.workflow.git.pack_writer import BLOB, COMMIT, TREE, PendingObjects
from semspec.workflow.git.repository import commit_of, open_repository

_BLOB, _EXECUTABLE, _LINK = int(FileMode.BLOB), int(FileMode.BLOB_EXECUTABLE), int(FileMode.LINK)
_TREE, _GITLINK = int(FileMode.TREE), int(FileMode.COMMIT)


class _Unchanged(enum.Enum):
    """What a changed path that is a plain directory contributes: nothing of its own."""

    TOKEN = 0


_UNCHANGED = _Unchanged.TOKEN
_Content = tuple[int, bytes] | Literal[_Unchanged.TOKEN] | None
# A path (as name bytes) and its new content: git mode and raw object id, None when deleted.
_Updates = dict[tuple[bytes, ...], tuple[int, bytes] | None]


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
    base = commit_of(repo, base_commit, repo_path)
    parent_commit = commit_of(repo, parent, repo_path)
    if len(base.id.raw) != 20:
        raise GitError(
            "snapshots support SHA-1 repositories only",
            repo=str(repo_path),
            hint="checkpoints need a repository in git's default object format",
        )
    root = os.path.realpath(worktree)
    pending = PendingObjects()
    updates: _Updates = {}
    for rel in sorted(set(changed)):
        parts = tuple(p for p in rel.replace(os.sep, "/").split("/") if p not in ("", "."))
        if not parts or ".." in parts or parts[0] == ".git":
            raise GitError(f"path {rel!r} cannot be part of a snapshot", repo=str(repo_path))
        content = _content_of(repo, pending, root + "/" + "/".join(parts))
        if content is not _UNCHANGED:
            updates[tuple(os.fsencode(p) for p in parts)] = content
    tree = _rebuild(repo, pending, base.tree, updates) or pending.add(TREE, b"")
    commit = pending.add(COMMIT, _commit_text(tree, parent_commit.id.raw, message))
    pending.write(_pack_dir(repo), durable=_wants_sync(repo))
    return pygit2.Oid(raw=commit)


def _commit_text(tree: bytes, parent: bytes, message: str) -> bytes:
    who = f"{SEMSPEC_AUTHOR[0]} <{SEMSPEC_AUTHOR[1]}> {int(time.time())} +0000"
    text = f"tree {tree.hex()}\nparent {parent.hex()}\nauthor {who}\ncommitter {who}\n\n"
    return (text + message.rstrip("\n") + "\n").encode()


def _pack_dir(repo: pygit2.Repository) -> Path:
    """``objects/pack`` of the repository's common directory (shared by its worktrees)."""
    git_dir = Path(repo.path)
    # Only a linked worktree's git directory (.git/worktrees/<name>) points elsewhere.
    if git_dir.parent.name == "worktrees" and (git_dir / "commondir").is_file():
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
        git_dir = (git_dir / common).resolve()
    return git_dir / "objects" / "pack"


def _content_of(repo: pygit2.Repository, pending: PendingObjects, path: str) -> _Content:
    """The git mode and object id the worktree has at ``path``: None when nothing is there any
    more (the path is deleted), ``_UNCHANGED`` for a plain directory (its files are listed on
    their own when they changed).

    A file is hashed in libgit2 and only read into Python when the object database lacks it:
    files already snapshotted, the common case in a growing diff, cost a hash and a lookup. A
    submodule is recorded at the commit its checkout is on.
    """
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # gone, or a parent became a file
        return None
    if stat.S_ISLNK(info.st_mode):
        return _LINK, pending.add(BLOB, os.readlink(os.fsencode(path)))
    if stat.S_ISDIR(info.st_mode):
        return _submodule_head(path)
    if not stat.S_ISREG(info.st_mode):
        return None  # a socket or fifo: git cannot hold it
    mode = _EXECUTABLE if info.st_mode & 0o111 else _BLOB
    oid = pygit2.hashfile(path)
    if oid in repo.odb:
        return mode, oid.raw
    with open(path, "rb") as handle:
        return mode, pending.add(BLOB, handle.read())


def _submodule_head(path: str) -> _Content:
    if not os.path.lexists(os.path.join(path, ".git")):
        return _UNCHANGED
    try:
        head = pygit2.Repository(path).head.peel(pygit2.Commit).id
    except (pygit2.GitError, KeyError, OSError):
        return _UNCHANGED  # no commit to record: keep what the base tree has
    return _GITLINK, head.raw


def _wants_sync(repo: pygit2.Repository) -> bool:
    """Whether the repository asks git to sync new objects to disk before using them."""
    config = repo.config
    if "core.fsyncObjectFiles" in config:
        try:
            if config.get_bool("core.fsyncObjectFiles"):
                return True
        except (pygit2.GitError, ValueError):
            pass  # not a boolean: git would refuse it too; do not sync on its say-so
    if "core.fsync" not in config:
        return False
    wanted = {"all", "committed", "objects", "loose-object", "pack"}
    return any(part.strip() in wanted for part in str(config["core.fsync"]).split(","))


def _rebuild(
    repo: pygit2.Repository, pending: PendingObjects, tree: pygit2.Tree | None, updates: _Updates
) -> bytes | None:
    """The id of ``tree`` with ``updates`` applied (None if it ends up empty), queueing the
    subtrees the updates touch; the others are reused as they are."""
    entries: dict[bytes, tuple[int, bytes]] = {
        entry.raw_name or b"": (int(entry.filemode), entry.id.raw) for entry in tree or ()
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
        mode, oid = entries.get(name, (0, b""))
        subtree = repo[pygit2.Oid(raw=oid)] if mode == _TREE else None
        assert subtree is None or isinstance(subtree, pygit2.Tree)
        new_id = _rebuild(repo, pending, subtree, sub_updates)
        if new_id is None:
            entries.pop(name, None)
        else:
            entries[name] = (_TREE, new_id)
    if not entries:
        return None
    # git orders entries by name, a directory's name compared as if it ended with "/".
    ordered = sorted(
        entries.items(), key=lambda item: item[0] + b"/" if item[1][0] == _TREE else item[0]
    )
    return pending.add(
        TREE, b"".join(b"%o %s\0%s" % (mode, name, oid) for name, (mode, oid) in ordered)
    )
