"""LandWorkflow on a real Temporal dev server: a signed land runs, an unsigned one does not, and
the recorded history of a land replays (a non-deterministic change to the workflow fails here).

Set ``SEMSPEC_RECORD_LAND_HISTORY=1`` to write ``tests/histories/land_workflow.json`` again.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHistory
from temporalio.worker import Replayer, Worker

from semspec.core.owner_key import OwnerKey
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.git.commit import commit_task
from semspec.workflow.git.worktree import ensure_worktree
from semspec.workflow.land import activities as land_activities
from semspec.workflow.land.landing import LandResult
from semspec.workflow.land.messages import LAND_START, LAND_WORKFLOW, LandInput, land_workflow_id
from semspec.workflow.land.workflows import LandWorkflow
from semspec.workflow.task.messages import signed_start
from semspec.workflow.worker import activity_threads
from tests.support.mdurl_project import FORMAT_PY, package_sources, with_new_function
from tests.support.repos import make_repo

HISTORY = Path(__file__).parents[1] / "histories" / "land_workflow.json"
RECORDED_ID = "land-recorded"


def approved_task(tmp_path: Path, task_id: str) -> Path:
    repo = tmp_path / "mdurl"
    make_repo(repo, {**package_sources(), ".gitignore": "__pycache__/\n"})
    info = ensure_worktree(repo, task_id, "main", tmp_path / "run" / "worktrees")
    (Path(info.path) / FORMAT_PY).write_text(with_new_function(), encoding="utf-8")
    commit_task(Path(info.path), task_id, "add format_without_hash", f"{task_id}-1")
    return repo


def land_of(repo: Path, tmp_path: Path, task_id: str) -> LandInput:
    gate = GateSpec("imports", "python3 -c 'import mdurl'", True, 60.0, ".")
    return LandInput(task_id, str(repo), "main", str(tmp_path / "run"), gates=[gate])


async def run(client: Client, task_queue: str, inp: LandInput, workflow_id: str) -> LandResult:
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[LandWorkflow],
        activities=[land_activities.land],
        activity_executor=activity_threads(),
    ):
        result: LandResult = await client.execute_workflow(
            LAND_WORKFLOW, inp, id=workflow_id, task_queue=task_queue, result_type=LandResult
        )
        return result


async def test_a_signed_land_lands_and_its_history_replays(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    task_id = f"t-{uuid.uuid4().hex[:8]}"
    repo = approved_task(tmp_path, task_id)
    recording = bool(os.environ.get("SEMSPEC_RECORD_LAND_HISTORY"))
    workflow_id = RECORDED_ID if recording else land_workflow_id(task_id)
    inp = signed_start(
        OwnerKey.generate(), LAND_START, workflow_id, land_of(repo, tmp_path, task_id)
    )
    result = await run(temporal_client, task_queue, inp, workflow_id)
    assert (result.outcome, result.method) == ("landed", "fast-forward")
    history = await temporal_client.get_workflow_handle(workflow_id).fetch_history()
    await Replayer(workflows=[LandWorkflow]).replay_workflow(history)
    if recording:
        HISTORY.write_text(history.to_json(), encoding="utf-8")


async def test_an_unsigned_land_fails_before_any_activity(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    task_id = f"t-{uuid.uuid4().hex[:8]}"
    repo = approved_task(tmp_path, task_id)
    before = (repo / ".git" / "refs" / "heads" / "main").read_text()
    inp = replace(land_of(repo, tmp_path, task_id), owner_key=OwnerKey.generate().public_key)
    with pytest.raises(WorkflowFailureError) as failed:
        await run(temporal_client, task_queue, inp, land_workflow_id(task_id))
    assert "start signature is missing" in str(failed.value.cause)
    assert (repo / ".git" / "refs" / "heads" / "main").read_text() == before


@pytest.mark.skipif(not HISTORY.exists(), reason="no recorded land history yet")
async def test_the_recorded_land_history_replays() -> None:
    history = WorkflowHistory.from_json(RECORDED_ID, HISTORY.read_text(encoding="utf-8"))
    await Replayer(workflows=[LandWorkflow]).replay_workflow(history)
