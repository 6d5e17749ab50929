"""A land runs gates, so only the owner starts one (ADR 0004, docs/landing.md).

A land started on our task queue with another key's signature, or with none, never runs its
gate and never moves the base branch; the same input signed by the owner does run the gate
(the control that shows the marker would appear).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pygit2
import pytest
from temporalio.client import Client, WorkflowFailureError

from semspec.core.owner_key import OwnerKey
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.land.landing import LandResult
from semspec.workflow.land.messages import LAND_START, LAND_WORKFLOW, LandInput, land_workflow_id
from semspec.workflow.task.messages import signed_start
from tests.support.repos import SIGNATURE, make_repo
from tests.support.scenario_tasks import new_id
from tests.support.stack import Stack, check_gate, running_stack, sample_config

TASK_QUEUE = "semspec"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    config = sample_config([check_gate()])
    with running_stack(tmp_path_factory.mktemp("signed-land") / "stack", config) as running:
        yield running


def diverged_repo(path: Path, task_id: str) -> str:
    """A repository whose task branch and main both moved on (a land must rebase and gate);
    returns main's tip."""
    repo = make_repo(path, {"a.txt": "a\n", "b.txt": "b\n"})
    root = repo.head.peel(pygit2.Commit)

    def commit_on(ref: str, name: str, text: str) -> pygit2.Oid:
        builder = repo.TreeBuilder(root.tree)
        builder.insert(name, repo.create_blob(text.encode()), pygit2.enums.FileMode.BLOB)
        return repo.create_commit(ref, SIGNATURE, SIGNATURE, name, builder.write(), [root.id])

    repo.branches.local.create(f"semspec/task/{task_id}", root)
    commit_on(f"refs/heads/semspec/task/{task_id}", "a.txt", "task\n")
    # main moves in a second branch checked out nowhere: the user's checkout is not involved.
    repo.branches.local.create("trunk", root)
    return str(commit_on("refs/heads/trunk", "b.txt", "user\n"))


async def run_land(address: str, inp: LandInput) -> str:
    """Start the land as a client of our Temporal would; its outcome or why it failed."""
    client = await Client.connect(address)
    workflow_id = land_workflow_id(inp.task_id)
    handle = await client.start_workflow(
        LAND_WORKFLOW, inp, id=workflow_id, task_queue=TASK_QUEUE, result_type=LandResult
    )
    try:
        result = await asyncio.wait_for(handle.result(), 90)
    except WorkflowFailureError as failed:
        # The workflow's own check fails it directly; the worker's guard fails its activity.
        cause: BaseException | None = failed.cause
        reasons = []
        while cause is not None:
            reasons.append(str(cause))
            cause = cause.__cause__
        return " / ".join(reasons)
    return result.outcome


@pytest.mark.parametrize("signed_by", ["attacker", "nobody", "owner"])
def test_only_a_land_the_owner_signed_runs_its_gate(
    stack: Stack, tmp_path: Path, signed_by: str
) -> None:
    task_id = new_id("land")
    repo = tmp_path / "repo"
    trunk = diverged_repo(repo, task_id)
    # Gates run fenced (they cannot write outside the worktree): the gate's log is the marker.
    marker = tmp_path / "run" / "logs" / task_id / "land" / "pwn.log"
    gate = GateSpec("pwn", "echo the gate ran", True, 60.0, ".")
    inp = LandInput(
        task_id=task_id,
        repo_path=str(repo),
        base_branch="trunk",
        run_dir=str(tmp_path / "run"),
        gates=[gate],
    )
    workflow_id = land_workflow_id(task_id)
    if signed_by == "attacker":
        inp = signed_start(OwnerKey.generate(), LAND_START, workflow_id, inp)
    elif signed_by == "owner":
        inp = signed_start(stack.owner(), LAND_START, workflow_id, inp)
    else:
        inp = replace(inp, owner_key=stack.owner().public_key)
    outcome = asyncio.run(run_land(stack.temporal_address(), inp))
    moved = str(pygit2.Repository(str(repo)).branches.local["trunk"].target) != trunk
    if signed_by == "owner":
        assert (outcome, marker.exists(), moved) == ("landed", True, True)
        return
    expected = "start signature is missing" if signed_by == "nobody" else "this stack's owner"
    assert expected in outcome, outcome
    assert (marker.exists(), moved) == (False, False)
