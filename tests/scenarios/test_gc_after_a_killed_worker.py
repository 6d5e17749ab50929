"""Scenario: `semspec gc` after a worker was killed removes what a lost task left, nothing live.

Two tasks on a copy of mdurl sit in a slow gate; the worker is killed (SIGKILL) and one task's
workflow is terminated, as when a stack is torn down by hand: its worktree, gate lock and a
checkpoint branch stay behind. The other task still runs (it waits for a worker). `gc --dry-run`
lists the lost task's leftovers and removes nothing; `gc` removes exactly those; the live task's
worktree, branch and checkpoint are untouched, and its workflow is still running.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from temporalio.client import Client

from semspec.vocabulary.workflow_names import task_workflow_id
from tests.support.mdurl_project import (
    FORMAT_PY,
    make_project,
    original,
    project_config,
    sleep_gate,
    with_new_function,
)
from tests.support.scenario_tasks import APPROVE, new_id, submit
from tests.support.stack import Stack, check_gate, running_stack, sample_config

SLOW_GATE_S = 120.0
ENCODE_PY = "mdurl/_encode.py"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("gc"), sample_config([check_gate()])) as running:
        yield running


def worktree_names(repo: Path) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(
        Path(line.removeprefix("worktree ")).name
        for line in done.stdout.splitlines()
        if line.startswith("worktree ")
    )


LOCK_FREE_S = 60.0
"""How long the killed worker's gate may take to die (its parent-death signal) and let go."""


def wait_until_free(lock: Path) -> None:
    """Wait until no process holds ``lock`` (the kernel's flock, as gc asks), bounded: a gate of
    the killed worker holds it until the signal its death sent has ended it."""
    deadline = time.monotonic() + LOCK_FREE_S
    fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                assert time.monotonic() < deadline, f"{lock} is still held"
                time.sleep(0.2)
                continue
            fcntl.flock(fd, fcntl.LOCK_UN)
            return
    finally:
        os.close(fd)


async def terminate(address: str, task_id: str) -> None:
    client = await Client.connect(address)
    await client.get_workflow_handle(task_workflow_id(task_id)).terminate("lost with its worker")


async def state_of(address: str, task_id: str) -> str:
    client = await Client.connect(address)
    described = await client.get_workflow_handle(task_workflow_id(task_id)).describe()
    return described.status.name if described.status else ""


def test_gc_after_a_killed_worker_removes_a_lost_tasks_leftovers_and_nothing_live(
    stack: Stack,
) -> None:
    config = project_config(stack, "gc", gates={"additional": [sleep_gate(SLOW_GATE_S)]})
    repo = make_project(stack, "gc", config)
    run_dir = stack.root / "gc" / "run"
    live, lost = new_id("live"), new_id("lost")
    # Different files: the monitor's conflict halt stays out of it.
    changes = {
        live: (FORMAT_PY, with_new_function()),
        lost: (ENCODE_PY, original(ENCODE_PY) + "#\n"),
    }
    for task_id, (path, text) in changes.items():
        script = [{"developer": {"write": {path: text}}, "reviewer": APPROVE}]
        code, _ = submit(stack, repo, task_id, [path], script, wait=False)
        assert code == 0
    for task_id in (live, lost):
        stack.wait_status(task_id, lambda s: s["phase"] == "gates", timeout_s=90, repo=repo)
    git_repo = pygit2.Repository(str(repo))
    for task_id in (live, lost):
        # A checkpoint each, as a context-pressure checkpoint would have made.
        tip = git_repo.branches.local[f"semspec/task/{task_id}"].peel(pygit2.Commit)
        git_repo.branches.local.create(f"semspec/checkpoint/{task_id}/1", tip)
    stack.kill("worker")
    asyncio.run(terminate(stack.temporal_address(), lost))
    assert sorted(worktree_names(repo)) == sorted(["repo", live, lost])
    # gc leaves a lock a process holds: the lost task's gate must have died first.
    wait_until_free(run_dir / "worktrees" / f"{lost}.gate-lock")

    dry = stack.cli_json("gc", "--dry-run", repo=repo)
    would = {(item["kind"], item["owner"]) for item in dry["removed"]}
    assert would == {("worktree", lost), ("checkpoint", lost), ("lock", lost)}
    assert sorted(worktree_names(repo)) == sorted(["repo", live, lost])

    done = stack.cli_json("gc", repo=repo)
    removed = {(item["kind"], item["owner"]) for item in done["removed"]}
    assert removed == would
    kept = {(item["kind"], item["owner"]) for item in done["kept"]}
    assert {("worktree", live), ("checkpoint", live)} <= kept
    assert sorted(worktree_names(repo)) == sorted(["repo", live])
    assert (run_dir / "worktrees" / live).is_dir()
    assert not (run_dir / "worktrees" / lost).exists()
    assert not (run_dir / "worktrees" / f"{lost}.gate-lock").exists()
    branches = set(pygit2.Repository(str(repo)).branches.local)
    assert f"semspec/checkpoint/{live}/1" in branches
    assert f"semspec/checkpoint/{lost}/1" not in branches
    # Task branches hold approved work: gc never removes them.
    assert {f"semspec/task/{live}", f"semspec/task/{lost}"} <= branches
    assert asyncio.run(state_of(stack.temporal_address(), live)) == "RUNNING"

    again = stack.cli_json("gc", repo=repo)
    assert again["removed"] == []
