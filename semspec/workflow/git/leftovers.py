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
| ``registration`` | a registration on a semspec branch whose folder is gone | task or land |
| ``ref-lock`` | git's lock file of a semspec branch (``<ref>.lock``) | task or land |

A ``land-`` prefix on a kind names a land's. A dead registration of another name than ours is a
task branch checked out by hand in a folder deleted since: git refuses to check that branch out
anywhere else until it is pruned (``git worktree prune``, for semspec's branches only). A ref
lock is left when a process dies while it moves the branch; git refuses to move it after that.
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
TASK_PREFIX = "semspec/task/"
TASK_WORKTREE = "semspec-"
LAND_WORKTREE = "semspec-land-"
REF_LOCK = ".lock"
HEAD_BYTES = 4096
"""More than a worktree's ``HEAD`` file ever holds; a larger one is not read."""


@dataclass(frozen=True)
class Leftover:
    """One thing semspec left: its kind (see the module docstring), owner id and name."""

    kind: str
    owner: str
    """The task id it belongs to."""
    name: str
    """The branch, or the path of the worktree or lock file."""

    @property
    def registered(self) -> bool:
        """Whether it is a task's worktree as git registers it (not a folder left beside)."""
        return self.kind == "worktree" and self.name == TASK_WORKTREE + self.owner

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
        elif (dead := _dead_registration(repo, name)) is not None:
            found.add(dead)
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
    found.update(_ref_locks(Path(repo.path)))
    # A branch's lock goes before the branch: git cannot delete a branch it cannot lock.
    return sorted(found, key=lambda i: (i.owner, "ref-lock" not in i.kind, i.kind, i.name))


def remove_leftover(repo_path: Path, run_dir: Path, item: Leftover) -> bool:
    """Remove one leftover; False when it is gone already or (a lock) a process holds it."""
    repo = open_repository(repo_path)
    if item.kind == "worktree":
        if item.registered:
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
        try:
            branch.delete()
        except (pygit2.GitError, OSError):
            return False  # locked by a git process that runs, or a lock gc did not remove
        return True
    if item.kind == "lock":
        return remove_free_lock(Path(item.name))
    if item.kind in ("registration", "land-registration"):
        return _prune(repo, item.name)
    if item.kind in ("ref-lock", "land-ref-lock"):
        path = Path(item.name)
        if not path.is_file() or path.is_symlink():
            return False
        path.unlink()
        return True
    return False


def _owner_of_branch(branch: str) -> tuple[str, str] | None:
    """(owner, "" for a task or "land-" for a land) of a semspec branch; None for others."""
    if branch.startswith(TASK_PREFIX):
        return branch.removeprefix(TASK_PREFIX), ""
    if branch.startswith(CHECKPOINT_PREFIX):
        return branch.removeprefix(CHECKPOINT_PREFIX).split("/", 1)[0], ""
    if branch.startswith(LAND_BRANCH_PREFIX):
        return branch.removeprefix(LAND_BRANCH_PREFIX), "land-"
    return None


def _dead_registration(repo: pygit2.Repository, name: str) -> Leftover | None:
    """A registration whose folder is gone, on a semspec branch (a task branch checked out
    by hand in a folder deleted since): git would refuse to check that branch out elsewhere."""
    try:
        if not repo.lookup_worktree(name).is_prunable:
            return None
    except pygit2.GitError:
        return None
    head = Path(repo.path) / "worktrees" / name / "HEAD"
    if not head.is_file() or head.is_symlink() or head.stat().st_size > HEAD_BYTES:
        return None
    text = head.read_text(encoding="utf-8", errors="replace").strip()
    owner = _owner_of_branch(text.removeprefix("ref: refs/heads/"))
    if not text.startswith("ref: refs/heads/") or owner is None:
        return None
    return Leftover(f"{owner[1]}registration", owner[0], name)


def _prune(repo: pygit2.Repository, name: str) -> bool:
    try:
        worktree = repo.lookup_worktree(name)
    except pygit2.GitError:
        return False
    if not worktree.is_prunable:
        return False  # its folder is back: not a leftover now
    worktree.prune(True)
    return True


def _ref_locks(git_dir: Path) -> list[Leftover]:
    """Lock files of semspec's own branches under ``refs/heads/semspec/``."""
    root = git_dir / "refs" / "heads" / "semspec"
    if not root.is_dir() or root.is_symlink():
        return []
    found = []
    for path in sorted(root.rglob(f"*{REF_LOCK}")):
        if not path.is_file() or path.is_symlink():
            continue
        branch = "semspec/" + path.relative_to(root).as_posix().removesuffix(REF_LOCK)
        owner = _owner_of_branch(branch)
        if owner is not None and owner[0]:
            found.append(Leftover(f"{owner[1]}ref-lock", owner[0], str(path)))
    return found


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


def remove_free_lock(path: Path) -> bool:
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
