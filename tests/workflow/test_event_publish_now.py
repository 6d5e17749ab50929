"""A step's loop events reach the stream before its activity returns, without the outbox
(issue 26: events an activity made waited for the workflow task that took its result and for the
outbox's call after it, up to seconds on a crowded worker).

Real Temporal dev server, real NATS, real git, scripted agents. The worker runs its loop half
only, so no outbox call is ever taken (the event queue has no poller): what reaches the stream
was published by the activity that made it. Then the event half starts and the outbox sends
the rest; it never carried what the steps stored themselves.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from semspec.core.config.models import RiskConfig
from semspec.vocabulary.events import MonitorEvent, monitor_event
from semspec.vocabulary.streams import ensure_streams
from semspec.vocabulary.workflow_names import QUERY_STATUS
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.task.messages import TaskResult, TaskStatus
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.worker import build_worker
from tests.support.owner import OWNER
from tests.support.servers import NatsServer
from tests.support.stream_reads import task_events
from tests.support.tasks import GOOD_CALC, start, task_input, write_script

HOLD = (
    "import os, time; open('gate-started', 'w').close(); "
    "[time.sleep(0.1) for _ in iter(lambda: os.path.exists('release'), True)]"
)
"""A gate that holds its activity until the test creates ``release`` in the worktree."""
WAIT_S = 60.0
"""Bound on each wait for the stream or the task (a crowded CI machine is slow, never this)."""


@pytest.fixture
async def nats_server(tmp_path: Path) -> AsyncIterator[NatsServer]:
    server = NatsServer(tmp_path / "nats").start()
    try:
        nc = await nats.connect(server.url)
        await ensure_streams(nc.jetstream(), RiskConfig())
        await nc.close()
        yield server
    finally:
        server.stop()


async def _gate_started(run_dir: Path) -> Path:
    """The worktree whose held gate has started (bounded wait)."""
    for _ in range(int(WAIT_S * 10)):
        if markers := list((run_dir / "worktrees").glob("*/gate-started")):
            return markers[0].parent
        await asyncio.sleep(0.1)
    raise AssertionError("the gate never started")


async def _stored_kinds(url: str, task_id: str, want: set[str]) -> list[str]:
    """The task's stored event kinds (steps left out), once ``want`` are all among them."""
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while True:
        kinds: list[str] = [e.kind for e in await task_events(url, task_id) if e.kind != "step"]
        if want <= set(kinds):
            return kinds
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never stored {sorted(want - set(kinds))}; stored {kinds}")
        await asyncio.sleep(0.2)


async def _outbox_kinds(handle: WorkflowHandle[object, object]) -> list[str]:
    """The kinds of every event the run's outbox calls (``task.publish_events``) carried."""
    kinds = []
    async for event in handle.fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        scheduled = event.activity_task_scheduled_event_attributes
        if scheduled.activity_type.name == "task.publish_events":
            batch = json.loads(scheduled.input.payloads[0].data)
            kinds += [queued["kind"] for queued in batch["events"]]
    return kinds


async def test_a_steps_events_reach_the_stream_while_the_outbox_cannot_drain(
    temporal_client: Client,
    task_queue: str,
    nats_server: NatsServer,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    nats_url = nats_server.url
    script = write_script(
        tmp_path / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": {"verdict": "approve"}}],
    )
    gate = GateSpec("hold", f'{sys.executable} -c "{HOLD}"', True, 300.0, ".")
    run_dir = tmp_path / "run"
    task_id = f"t{uuid.uuid4().hex[:8]}"
    publisher = EventPublisher(nats_url)
    workers = build_worker(temporal_client, task_queue, publisher, owner=OWNER)
    try:
        async with workers.loop:  # no event worker: the outbox's calls wait, untaken
            handle = await start(
                temporal_client, task_input(git_repo, script, task_id, [gate], run_dir=run_dir),
                task_queue,
            )  # fmt: skip
            # The developer's step has returned and the gate holds its activity: ``files``
            # is in the stream, and the outbox still holds everything.
            kinds = await _stored_kinds(nats_url, task_id, {"files"})
            assert kinds == ["files"]
            status: TaskStatus = await handle.query(QUERY_STATUS, result_type=TaskStatus)
            assert status.phase == "gates" and status.events_pending >= 1  # ``iteration``
            ((await _gate_started(run_dir)) / "release").touch()
            # The gates' step publishes its own two when it returns (and the reviewer's step,
            # which may follow at once, its own); ``iteration`` still waits in the outbox.
            kinds = await _stored_kinds(nats_url, task_id, {"files", "gate", "context"})
            assert kinds[:3] == ["files", "gate", "context"] and "iteration" not in kinds
            # The outbox drains once the event half runs: each event stored once, in the
            # loop's order except the steps' events that went ahead, ``finished`` last.
            async with workers.events:
                result: TaskResult = await asyncio.wait_for(handle.result(), WAIT_S)
    finally:
        await publisher.close()
    assert result.status.outcome == "approved"
    assert (result.status.events_dropped, result.status.events_pending) == (0, 0)
    events = await task_events(nats_url, task_id)
    kinds = [e.kind for e in events if e.kind != "step"]
    # ``review`` goes out at its step's end too, ahead of ``iteration`` or not.
    in_loop_order = ["files", "gate", "context", "review", "finished"]
    assert [k for k in kinds if k != "iteration"] == in_loop_order
    assert kinds.count("iteration") == 1
    assert await _outbox_kinds(handle) == ["iteration", "finished"]
    assert len({e.event_id for e in events}) == len(events)


def _event(n: int) -> MonitorEvent:
    return monitor_event(
        "iteration",
        {"phase": "developer", "retries": 0},
        event_id=f"task-q/r1/{n}/iteration",
        task_id="q",
        plan_id=None,
        run_id="r1",
        iteration=n,
        at="2026-01-01T00:00:00+00:00",
    )


async def test_after_nats_failed_a_worker_leaves_events_to_the_outbox_for_a_while(
    nats_server: NatsServer,
) -> None:
    # Events queued in outboxes during an outage go out before newer ones: after a failure,
    # ``publish_now`` sends nothing for ``quiet_s`` while the outbox's path still works.
    publisher = EventPublisher(nats_server.url, attempt_s=1.0, quiet_s=3600.0)
    try:
        assert await publisher.publish_now([_event(1)]) == 1
        nats_server.stop()
        assert await publisher.publish_now([_event(2)]) == 0
        nats_server.start()
        for _ in range(100):  # the outbox's path: bounded attempts until NATS is back
            try:
                await publisher.deliver(_event(2))
                break
            except Exception:
                await asyncio.sleep(0.2)
        else:
            raise AssertionError("NATS never came back")
        assert await publisher.publish_now([_event(3)]) == 0
    finally:
        await publisher.close()
    stored = [e.iteration for e in await task_events(nats_server.url, "q")]
    assert stored == [1, 2]
