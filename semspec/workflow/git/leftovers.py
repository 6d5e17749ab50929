"""What semspec leaves in a repository and its run folder per task, found and removed by id.

``semspec gc`` (docs/landing.md) lists these, asks Temporal which of their tasks still run, and
removes the rest. Task branches (``semspec/task/<id>``) are never leftovers: they hold the
approved work until it lands and after.

| kind | what | whose |
|---|---|---|
| ``worktree`` | a task's worktree (``semspec-<id>``), or a folder of one in the run folder | task |
| ``checkpoint`` | a branch ``semspec/checkpoint/<id>/<n>`` | task |
| ``land-worktree``, ``land-branch`` | a land's scratch worktree and branch | land |
| ``lock`` | a gate lock file beside a worktree, held by no process | task or land |
"""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pygit2

from semspec.core.run_lock import SUFFIX as LOCK_SUFFIX
from semspec.workflow.git.land import LAND_BRANCH_PREFIX, close_scratch
from semspec.workflow.git.repository import open_repository
from semspec.workflow.git.worktree import remove_worktree

CHECKPOINT_PREFIX = "semspec/checkpoint/"
TASK_WORKTREE = "semspec-"
LAND_WORKTREE = "semspec-land-"


@dataclass(frozen=True)
class Leftover:
    """One thing semspec left: its kind (see the module docstring), owner id and name."""

    kind: str
    owner: str
    """The task id it belongs to."""
    name: str
    """The branch, or the path of the worktree or lock file."""

    @property
    def of_land(self) -> bool:
        """Whether it belongs to a land (whose workflow is ``land-<id>``) rather than a task."""
        return self.kind.startswith("land-") or (
            self.kind == "lock" and Path(self.name).parent.name == "land"
        )


def find_leftovers(repo_path: Path, run_dir: Path) -> list[Leftover]:
    """Everything of the module's table in the repository and the run folder, sorted."""
    repo = open_repository(repo_path)
    found: set[Leftover] = set()
    for name in repo.list_worktrees():
        if name.startswith(LAND_WORKTREE):
            found.add(Leftover("land-worktree", name.removeprefix(LAND_WORKTREE), name))
        elif name.startswith(TASK_WORKTREE):
            found.add(Leftover("worktree", name.removeprefix(TASK_WORKTREE), name))
    for branch in repo.branches.local:
        if branch.startswith(CHECKPOINT_PREFIX):
            owner = branch.removeprefix(CHECKPOINT_PREFIX).split("/", 1)[0]
            found.add(Leftover("checkpoint", owner, branch))
        elif branch.startswith(LAND_BRANCH_PREFIX):
            found.add(Leftover("land-branch", branch.removeprefix(LAND_BRANCH_PREFIX), branch))
    registered = {Path(wt.path).resolve() for wt in _worktrees(repo)}
    folder = run_dir / "worktrees"
    for entry in _entries(folder):
        if entry.name.endswith(LOCK_SUFFIX):
            found.add(Leftover("lock", entry.name.removesuffix(LOCK_SUFFIX), str(entry)))
        elif entry.is_dir() and not entry.is_symlink() and entry.resolve() not in registered:
            owner = entry.name.split(".stale-", 1)[0]
            found.add(Leftover("worktree", owner, str(entry)))
    for entry in _entries(run_dir / "land"):
        if entry.name.endswith(LOCK_SUFFIX):
            found.add(Leftover("lock", entry.name.removesuffix(LOCK_SUFFIX), str(entry)))
    return sorted(found, key=lambda item: (item.owner, item.kind, item.name))


def remove_leftover(repo_path: Path, run_dir: Path, item: Leftover) -> bool:
    """Remove one leftover; False when it is gone already or (a lock) a process holds it."""
    repo = open_repository(repo_path)
    if item.kind == "worktree":
        if item.name.startswith(TASK_WORKTREE) and "/" not in item.name:
            remove_worktree(repo_path, item.owner, run_dir / "worktrees")
            return True
        return _remove_dir(Path(item.name))
    if item.kind in ("land-worktree", "land-branch"):
        close_scratch(repo_path, item.owner, run_dir / "land")
        return True
    if item.kind == "checkpoint":
        branch = repo.branches.local.get(item.name)
        if branch is None or branch.is_checked_out():
            return False
        branch.delete()
        return True
    if item.kind == "lock":
        return _remove_free_lock(Path(item.name))
    return False


def _worktrees(repo: pygit2.Repository) -> list[pygit2.Worktree]:
    found = []
    for name in repo.list_worktrees():
        try:
            found.append(repo.lookup_worktree(name))
        except pygit2.GitError:
            continue
    return found


def _entries(folder: Path) -> list[Path]:
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(folder.iterdir())


def _remove_dir(path: Path) -> bool:
    if not path.is_dir() or path.is_symlink():
        return False
    shutil.rmtree(path)
    return True


def _remove_free_lock(path: Path) -> bool:
    """Delete the lock file only if no process holds its lock (the kernel says, not the file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        path.unlink(missing_ok=True)
        return True
    finally:
        os.close(fd)
