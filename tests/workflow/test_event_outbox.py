"""No loop event is dropped: the task loop queues its events and they reach NATS once it is back.

Real Temporal dev server, real NATS (a server of the test's own, stopped and started again on
the same port and store), real git and gates, scripted agents.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import nats
import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer

from semspec.core.config.models import RiskConfig
from semspec.vocabulary.streams import ensure_streams
from semspec.vocabulary.workflow_names import QUERY_STATUS
from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.messages import (
    EventContext,
    PublishBatch,
    PublishInput,
    TaskInput,
    TaskResult,
    TaskStatus,
)
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.task.workflows import TaskWorkflow
from semspec.workflow.worker import build_worker
from tests.support.owner import OWNER
from tests.support.servers import NatsServer
from tests.support.stream_reads import task_events
from tests.support.tasks import BROKEN_CALC, GOOD_CALC, start, task_input, write_script

OUTAGE_S = 15.0
"""Longer than the 5 s the publisher once retried before dropping an event."""
EXPECTED = ["iteration", "files", "gate", "context", "iteration", "files", "gate", "context"]
EXPECTED += ["review", "finished"]
"""A gate failure, then an approval: every event the loop sends for it, in order (each agent
turn's ``step`` events come before its own event; see ``STEPS``)."""
STEPS = 3
"""Step events of that run: one per scripted developer turn (two) and one for the review."""


@dataclass
class Outage:
    """The test's NATS server, and when it was stopped."""

    server: NatsServer
    stopped_at: float = 0.0

    def stop(self) -> None:
        self.server.stop()
        self.stopped_at = asyncio.get_running_loop().time()

    async def restart_after(self, seconds: float) -> None:
        """Start the server again (same port, same store) once it has been down ``seconds``."""
        left = self.stopped_at + seconds - asyncio.get_running_loop().time()
        await asyncio.sleep(max(0.0, left))
        self.server.start()


@pytest.fixture
async def outage(tmp_path: Path) -> AsyncIterator[Outage]:
    server = NatsServer(tmp_path / "nats").start()
    nc = await nats.connect(server.url)
    await ensure_streams(nc.jetstream(), RiskConfig())
    await nc.close()
    try:
        yield Outage(server)
    finally:
        server.stop()


def _script(tmp_path: Path) -> Path:
    return write_script(
        tmp_path / "s.yaml",
        [
            {"developer": {"write": {"calc.py": BROKEN_CALC}}},
            {
                "developer": {"write": {"calc.py": GOOD_CALC}},
                "reviewer": {"verdict": "approve", "summary": "looks right"},
            },
        ],
    )


@asynccontextmanager
async def _worker(client: Client, task_queue: str, outage: Outage) -> AsyncIterator[None]:
    """A task-loop worker with a publisher of its own to the test's NATS."""
    publisher = EventPublisher(outage.server.url)
    try:
        async with build_worker(client, task_queue, publisher, owner=OWNER):
            yield
    finally:
        await publisher.close()


async def _approved_while_nats_is_down(
    client: Client, task_queue: str, outage: Outage, task: TaskInput
) -> WorkflowHandle[object, object]:
    """Stop NATS, start ``task`` and wait (bounded) until the loop has approved and committed
    it; the test's worker must be running."""
    outage.stop()
    handle = await start(client, task, task_queue)
    for _ in range(600):
        status: TaskStatus = await handle.query(QUERY_STATUS, result_type=TaskStatus)
        if status.outcome is not None:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"the loop stalled in {status.phase} while NATS was down")
    assert status.outcome == "approved" and status.commit_id
    assert (status.events_dropped, status.events_pending) == (0, len(EXPECTED) + STEPS)
    return handle


async def test_a_task_runs_through_a_nats_outage_and_every_event_arrives_once_in_order(
    temporal_client: Client, task_queue: str, outage: Outage, git_repo: Path, tmp_path: Path
) -> None:
    task = task_input(git_repo, _script(tmp_path), f"t{uuid.uuid4().hex[:8]}")
    async with _worker(temporal_client, task_queue, outage):
        # The loop does not wait for NATS: it reviews and commits while NATS is down.
        handle = await _approved_while_nats_is_down(temporal_client, task_queue, outage, task)
        await outage.restart_after(OUTAGE_S)
        result: TaskResult = await asyncio.wait_for(handle.result(), 120)
    assert (result.status.events_dropped, result.status.events_pending) == (0, 0)
    events = await task_events(outage.server.url, task.spec.task_id)
    assert [e.kind for e in events if e.kind != "step"] == EXPECTED
    assert [e.kind for e in events].count("step") == STEPS
    assert len({e.event_id for e in events}) == len(events)
    # The drainer's retries are part of the history: the run replays deterministically.
    await Replayer(workflows=[TaskWorkflow]).replay_workflow(await handle.fetch_history())


async def test_events_queued_on_a_worker_that_stopped_are_sent_by_the_next_one(
    temporal_client: Client, task_queue: str, outage: Outage, git_repo: Path, tmp_path: Path
) -> None:
    task = task_input(git_repo, _script(tmp_path), f"t{uuid.uuid4().hex[:8]}")
    async with _worker(temporal_client, task_queue, outage):
        handle = await _approved_while_nats_is_down(temporal_client, task_queue, outage, task)
    # The outbox is in the workflow's history: a fresh worker replays it and drains it.
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    await outage.restart_after(0)
    async with _worker(temporal_client, task_queue, outage):
        result = await asyncio.wait_for(handle.result(), 120)
    assert (result.status.events_dropped, result.status.events_pending) == (0, 0)
    events = await task_events(outage.server.url, task.spec.task_id)
    assert [e.kind for e in events if e.kind != "step"] == EXPECTED
    assert [e.kind for e in events].count("step") == STEPS


CTX = EventContext("t1", None, "task-t1", "r1", iteration=1)


def _iteration(retries: object) -> PublishInput:
    return PublishInput(CTX, "iteration", {"phase": "developer", "retries": retries})


async def test_publishing_while_nats_is_down_fails_for_temporal_to_retry(outage: Outage) -> None:
    publisher = EventPublisher(outage.server.url, attempt_s=1.0)
    outage.stop()
    try:
        with pytest.raises(ApplicationError) as failed:
            await TaskActivities(publisher).publish_events(PublishBatch([_iteration(0)]))
    finally:
        await publisher.close()
    assert not failed.value.non_retryable  # Temporal retries it: the event is not dropped


async def test_an_invalid_event_in_a_batch_is_refused_and_the_rest_goes_out(
    outage: Outage,
) -> None:
    publisher = EventPublisher(outage.server.url)
    try:
        batch = PublishBatch([_iteration("4"), _iteration(4)])
        done = await TaskActivities(publisher).publish_events(batch)
    finally:
        await publisher.close()
    assert (done.sent, done.refused, publisher.refused) == (2, 1, 1)
    [event] = await task_events(outage.server.url, "t1")
    assert event.kind == "iteration" and event.data.retries == 4
