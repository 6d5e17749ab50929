"""The ``land.run`` activity: one land at a time per base branch, then an optional push.

The queue of a base branch is a lock file in the repository's git folder, held while a land
plans, gates and moves the ref: lands of one base run one after the other, in the order they
took the lock, and the compare-and-swap in ``move_base`` still guards against anyone else
(the user committing meanwhile).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pygit2
from temporalio import activity

from semspec.core.errors import GitError
from semspec.core.sandbox import ChildLimits, choose_sandbox
from semspec.workflow.activity_errors import activity_errors
from semspec.workflow.context.checkpoint import delete_checkpoints
from semspec.workflow.gates.runner import GateFencing
from semspec.workflow.git.repository import open_repository
from semspec.workflow.git.worktree import remove_worktree
from semspec.workflow.land.landing import LANDED, LandRequest, LandResult, land_task
from semspec.workflow.land.messages import LAND_ACTIVITY, LandInput
from semspec.workflow.task.context_activities import repo_config

QUEUE_POLL_S = 0.5


@activity.defn(name=LAND_ACTIVITY)
@activity_errors
async def land(inp: LandInput) -> LandResult:
    """Land the task once the base branch's queue is free (see the module docstring)."""
    repo = Path(inp.repo_path)
    run_dir = Path(inp.run_dir)
    fencing = await asyncio.to_thread(_fencing, repo, run_dir)
    request = LandRequest(
        repo_path=inp.repo_path,
        task_id=inp.task_id,
        base_branch=inp.base_branch,
        strategy=inp.strategy,
        scratch_root=str(run_dir / "land"),
        log_dir=str(run_dir / "logs" / inp.task_id / "land"),
        max_output_bytes=inp.max_output_bytes,
        run_dir=inp.run_dir,
    )
    lock = await asyncio.to_thread(_queue_file, repo, inp.base_branch)
    with _held(lock) as fd:
        while not _try_lock(fd):
            activity.heartbeat("waiting for the land queue")
            await asyncio.sleep(QUEUE_POLL_S)
        result = await land_task(request, inp.gates, fencing, activity.heartbeat)
    if result.outcome == LANDED:
        # The work is on the base: the task's worktree and checkpoints have served (the task
        # branch stays, as the record of what was approved).
        await asyncio.to_thread(_tidy, repo, run_dir, inp.task_id)
        if inp.push_remote:
            await asyncio.to_thread(push, repo, inp.push_remote, inp.base_branch)
    return result


def _tidy(repo: Path, run_dir: Path, task_id: str) -> None:
    remove_worktree(repo, task_id, run_dir / "worktrees")
    delete_checkpoints(repo, task_id)


def push(repo_path: Path, remote_name: str, branch: str) -> None:
    """Push ``branch`` to the remote (fast-forward only, as git would without --force)."""
    repo = open_repository(repo_path)
    names = [name for name in repo.remotes.names() if name]
    if remote_name not in names:
        raise GitError(
            f"no remote {remote_name!r}",
            repo=str(repo_path),
            hint=f"the repository's remotes: {', '.join(names) or 'none'}",
        )
    remote = repo.remotes[remote_name]
    try:
        remote.push([f"refs/heads/{branch}:refs/heads/{branch}"])
    except pygit2.GitError as exc:
        raise GitError(
            f"landed, but the push of {branch} to {remote_name} failed: {exc}",
            repo=str(repo_path),
            hint=f"push it yourself: git push {remote_name} {branch}",
        ) from exc


def _fencing(repo: Path, run_dir: Path) -> GateFencing:
    gates = repo_config(repo).gates
    sandbox = choose_sandbox(gates.sandbox)
    limits = ChildLimits.of(gates.limits)
    return GateFencing(sandbox, tuple(gates.env), (run_dir,), limits, gates.max_log_bytes)


def _queue_file(repo_path: Path, base_branch: str) -> Path:
    repo = open_repository(repo_path)
    common = Path(repo.path)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", base_branch)
    return common / f"semspec-land-{name}.queue"


@contextmanager
def _held(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        yield fd
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
