"""Where rule files are read from: the repository's working tree or one commit's tree.

Rule files are hostile input (a task's change or a cloned repository may hold anything), so
both readers open only regular files of bounded size: the working-tree reader ``lstat``-s the
path, opens it with ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO cannot stall the sync, a symlink swapped
in after the check is refused) and checks that no folder on the way is a link out of the
repository; the commit reader takes blobs only (a symlink is a blob of mode 120000 in git and is
refused, a submodule has no blob). Candidates come from git (the index, or the commit's tree),
so vendored folders git ignores (``node_modules``, a virtual environment) are never read.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path
from typing import Protocol

import pygit2

MAX_RULE_BYTES = 256 * 1024
"""Largest rule file read; real ones are a few KB (a bigger one is refused by name)."""
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


class RuleProblem(Exception):
    """What is wrong with one rule file or one of its imports (the caller names the file)."""


class RuleReader(Protocol):
    """Lists the repository's paths and reads one of them, refusing what is not a regular file
    inside the repository."""

    def paths(self) -> list[str]:
        """Repo-relative ``/``-separated paths of the files the repository holds."""

    def read(self, path: str, limit: int = MAX_RULE_BYTES) -> bytes:
        """The bytes of ``path``; ``RuleProblem`` when it is missing, not a regular file,
        outside the repository or larger than ``limit``."""


def inside_path(path: str) -> str:
    """``path`` normalized, or ``RuleProblem`` when it is absolute or leaves the repository."""
    if not path or path.startswith(("/", "~", "\\")) or "\0" in path:
        raise RuleProblem(f"{path!r} is not a path inside the repository")
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../") or normal == ".":
        raise RuleProblem(f"{path!r} leads out of the repository")
    return normal


class WorkingTreeReader:
    """Files of the repository's working tree, as git's index lists them."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._root = Path(os.path.realpath(repo))

    def paths(self) -> list[str]:
        try:
            index = pygit2.Repository(str(self.repo)).index
        except (pygit2.GitError, KeyError, OSError):
            return []  # not a git repository: only the SOP folder is read
        return sorted(entry.path for entry in index)

    def read(self, path: str, limit: int = MAX_RULE_BYTES) -> bytes:
        rel = inside_path(path)
        full = self._root / rel
        # A folder on the way may be a link leading out; the file itself is never followed.
        if not Path(os.path.realpath(full.parent)).is_relative_to(self._root):
            raise RuleProblem(f"{rel} is under a folder that links out of the repository")
        try:
            info = os.lstat(full)
        except FileNotFoundError:
            raise RuleProblem(f"{rel} does not exist") from None
        except OSError as exc:
            raise RuleProblem(f"{rel} cannot be read ({exc.strerror})") from None
        if not stat.S_ISREG(info.st_mode):
            raise RuleProblem(f"{rel} is not a regular file (a link, folder, FIFO or device)")
        if info.st_size > limit:
            raise RuleProblem(f"{rel} is {info.st_size} bytes, more than the {limit} read")
        try:
            fd = os.open(full, _FLAGS)
        except OSError as exc:
            raise RuleProblem(f"{rel} cannot be opened ({exc.strerror})") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise RuleProblem(f"{rel} is not a regular file")
            data = os.read(fd, limit + 1)
        finally:
            os.close(fd)
        if len(data) > limit:
            raise RuleProblem(f"{rel} is more than the {limit} bytes read")
        return data


class CommitReader:
    """Files of one commit's tree: what a task's base commit holds, whatever its worktree
    holds now."""

    def __init__(self, repo: Path, commit_id: str) -> None:
        self._git = pygit2.Repository(str(repo))
        self.commit_id = str(self._git.revparse_single(commit_id).peel(pygit2.Commit).id)
        self._tree = self._git.revparse_single(self.commit_id).peel(pygit2.Tree)
        self._paths: list[str] | None = None

    def paths(self) -> list[str]:
        if self._paths is None:
            found: list[str] = []
            self._walk(self._tree, "", found)
            self._paths = sorted(found)
        return self._paths

    def _walk(self, tree: pygit2.Tree, prefix: str, found: list[str]) -> None:
        for entry in tree:
            name = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                sub = self._git[entry.id]
                if isinstance(sub, pygit2.Tree):
                    self._walk(sub, f"{name}/", found)
            elif entry.type_str == "blob":
                found.append(name)

    def read(self, path: str, limit: int = MAX_RULE_BYTES) -> bytes:
        rel = inside_path(path)
        try:
            entry = self._tree[rel]
        except KeyError:
            raise RuleProblem(f"{rel} does not exist on commit {self.commit_id[:12]}") from None
        if entry.type_str != "blob" or entry.filemode not in (
            pygit2.enums.FileMode.BLOB,
            pygit2.enums.FileMode.BLOB_EXECUTABLE,
        ):
            raise RuleProblem(f"{rel} is not a regular file on commit {self.commit_id[:12]}")
        blob = self._git[entry.id]
        if not isinstance(blob, pygit2.Blob):
            raise RuleProblem(f"{rel} is not a file on commit {self.commit_id[:12]}")
        if blob.size > limit:
            raise RuleProblem(f"{rel} is {blob.size} bytes, more than the {limit} read")
        data: bytes = blob.data
        return data
