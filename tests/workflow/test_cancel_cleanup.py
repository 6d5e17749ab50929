"""A task cancelled while it waits for a human removes its worktree on the way out, and that run
(with its ``finalize-at-cancel`` patch marker) replays; real Temporal, git and NATS."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pygit2
import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import CancelledError
from temporalio.worker import Replayer

from semspec.workflow.task.loop.finish import FINALIZE_AT_CANCEL
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.task.workflows import TaskWorkflow
from tests.support.tasks import (
    BROKEN_CALC,
    owner_worker,
    start,
    task_input,
    wait_for_phase,
    write_script,
)

REJECT = {"verdict": "reject", "summary": "not this way"}


@pytest.fixture
async def worker(
    temporal_client: Client, task_queue: str, nats_url: str
) -> AsyncIterator[EventPublisher]:
    async with owner_worker(temporal_client, task_queue, nats_url) as publisher:
        yield publisher


async def test_a_task_cancelled_while_escalated_removes_its_worktree_and_replays(
    temporal_client: Client,
    task_queue: str,
    worker: EventPublisher,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    task_id = f"c{uuid.uuid4().hex[:8]}"
    script = write_script(
        tmp_path / "reject.yaml",
        [{"developer": {"write": {"calc.py": BROKEN_CALC}}, "reviewer": REJECT}],
    )
    run_dir = tmp_path / "run"
    inp = task_input(git_repo, script, task_id, gates=[], run_dir=run_dir)
    handle = await start(temporal_client, inp, task_queue)
    status = await wait_for_phase(handle, "escalated")
    assert status.worktree and Path(status.worktree).is_dir()

    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as err:
        await asyncio.wait_for(handle.result(), 60)
    assert isinstance(err.value.cause, CancelledError)
    assert not (run_dir / "worktrees" / task_id).exists()
    repo = pygit2.Repository(str(git_repo))
    assert repo.list_worktrees() == []
    assert f"semspec/task/{task_id}" in repo.branches.local

    history = await handle.fetch_history()
    markers = [
        e for e in history.events if e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]
    assert markers, "the cancel path records its patch"
    assert FINALIZE_AT_CANCEL in str(markers[-1].marker_recorded_event_attributes.details)
    await Replayer(workflows=[TaskWorkflow]).replay_workflow(history)
