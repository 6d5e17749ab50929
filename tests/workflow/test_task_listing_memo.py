"""A task keeps its list row (``TaskListing``) in its workflow's memo, equal to its status at
each stop, and a run that wrote it replays: the memo watcher is deterministic (ADR 0007)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.worker import Replayer

from semspec.client.task_client import list_tasks
from semspec.vocabulary.workflow_names import QUERY_STATUS
from semspec.workflow.task.listing import TaskListing, listing_from_memo, listing_of
from semspec.workflow.task.loop.listing_memo import LISTING_MEMO_PATCH
from semspec.workflow.task.messages import Resolution, TaskResult, TaskStatus
from semspec.workflow.task.workflows import TaskWorkflow
from tests.support.owner import answer
from tests.support.tasks import (
    BROKEN_CALC,
    owner_worker,
    start,
    task_input,
    wait_for_phase,
    write_script,
)


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str, nats_url: str) -> AsyncIterator[None]:
    async with owner_worker(temporal_client, task_queue, nats_url):
        yield


async def _memo(client: Client, handle: WorkflowHandle[TaskWorkflow, TaskResult]) -> TaskListing:
    """The task's listing as visibility lists it (bounded wait for visibility to catch up)."""
    status: TaskStatus = await handle.query(QUERY_STATUS, result_type=TaskStatus)
    for _ in range(100):
        listing = (await list_tasks(client, None, None)).listings.get(status.task_id)
        if listing == listing_of(status):
            return listing
        await asyncio.sleep(0.1)
    raise AssertionError(f"the memo never matched the status {listing_of(status)}")


async def test_the_memo_follows_the_status_and_the_run_replays(
    temporal_client: Client, task_queue: str, worker: None, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": BROKEN_CALC}}}])
    task_id = f"memo-{uuid.uuid4().hex[:8]}"
    inp = task_input(git_repo, script, task_id, max_retries=0)
    handle: WorkflowHandle[TaskWorkflow, TaskResult] = await start(temporal_client, inp, task_queue)
    escalated = await wait_for_phase(handle, "escalated")
    listing = await _memo(temporal_client, handle)
    assert escalated.pending_escalation is not None
    assert listing.pending_escalation == asdict(escalated.pending_escalation)
    page = await list_tasks(temporal_client, "escalated", None)
    assert task_id in [row.task_id for row in page.rows]
    assert page.listings[task_id].phase == "escalated"

    await answer(handle, Resolution("abort", "stop here"))
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.outcome == "aborted"
    final = await _memo(temporal_client, handle)
    assert (final.phase, final.outcome) == ("done", "aborted")

    history = await handle.fetch_history()
    events = [
        e for e in history.events if e.HasField("workflow_properties_modified_event_attributes")
    ]
    assert len(events) >= 3  # at the start, at the escalation, at the end
    markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
    assert any(LISTING_MEMO_PATCH.encode() in e.SerializeToString() for e in markers)
    await Replayer(workflows=[TaskWorkflow]).replay_workflow(history)


async def test_a_listing_reads_back_as_written_through_temporals_converter() -> None:
    written = TaskListing(
        "t", "plan", "escalated", "", "", 2, 1, 1, True, 0.25, ["local"], "high", 0.5,
        {"escalation_id": "t-1", "task_id": "t", "reason": "budget_exhausted"},
    )  # fmt: skip
    payloads = await DataConverter.default.encode([written])
    [raw] = await DataConverter.default.decode(payloads)
    assert listing_from_memo(raw) == written


def test_a_memo_of_another_shape_reads_as_defaults_not_an_error() -> None:
    assert listing_from_memo("a string") is None
    odd = {"title": 5, "iteration": "2", "halted": 1, "retries": True, "cost_usd": 3, "x": 1}
    assert listing_from_memo(odd) == TaskListing(cost_usd=3.0)
