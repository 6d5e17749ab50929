"""The signal bridge against a real Temporal dev server and a real NATS server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from nats.aio.client import Client as NATS

    from semspec.processors.risk_monitor.signal_bridge import TemporalSignalBridge
    from semspec.vocabulary.events import RiskSignalInput
    from semspec.vocabulary.subjects import (
        monitor_subject,
    )
    from semspec.vocabulary.workflow_names import (
        SIGNAL_FLAG,
        SIGNAL_HALT,
        SIGNAL_PAUSE,
        task_workflow_id,
    )
    from tests.support.monitor_events import loop_event, pause_signal
    from tests.support.owner import OWNER
    from tests.support.running_monitor import Running


@dataclass
class Received:
    name: str
    reason: str
    level: str
    signal_id: str


@workflow.defn(name="RecordingTaskWorkflow")
class RecordingTaskWorkflow:
    """Stands in for the task workflow: records pause/halt/flag, dropping repeated ids."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.done = False

    def _record(self, name: str, arg: RiskSignalInput) -> None:
        if all(r.signal_id != arg.signal_id for r in self.received):
            self.received.append(Received(name, arg.reason, arg.level, arg.signal_id))

    @workflow.signal(name=SIGNAL_PAUSE)
    def pause(self, arg: RiskSignalInput) -> None:
        self._record(SIGNAL_PAUSE, arg)

    @workflow.signal(name=SIGNAL_HALT)
    def halt(self, arg: RiskSignalInput) -> None:
        self._record(SIGNAL_HALT, arg)

    @workflow.signal(name=SIGNAL_FLAG)
    def flag(self, arg: RiskSignalInput) -> None:
        self._record(SIGNAL_FLAG, arg)

    @workflow.signal(name="finish")
    def finish(self) -> None:
        self.done = True

    @workflow.query(name="received")
    def get_received(self) -> list[Received]:
        return self.received

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self.done)


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[Worker]:
    async with Worker(
        temporal_client, task_queue=task_queue, workflows=[RecordingTaskWorkflow]
    ) as running:
        yield running


def files_event(task: str, files: list[str], task_files: list[str] | None = None) -> bytes:
    return loop_event("files", task, files=files, task_files=task_files or []).to_json()


async def start_task(client: Client, task_queue: str, task: str) -> None:
    await client.start_workflow(
        RecordingTaskWorkflow.run, id=task_workflow_id(task), task_queue=task_queue
    )


async def received(client: Client, task: str) -> list[Received]:
    handle = client.get_workflow_handle_for(RecordingTaskWorkflow.run, task_workflow_id(task))
    return await handle.query(RecordingTaskWorkflow.get_received)


async def eventually(check: Callable[[], Any], what: str) -> None:
    for _ in range(400):
        if await check():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"never happened: {what}")


async def finish(client: Client, *tasks: str) -> None:
    for task in tasks:
        await client.get_workflow_handle(task_workflow_id(task)).signal("finish")


async def test_two_tasks_changing_one_file_are_both_halted(
    nc: NATS, temporal_client: Client, task_queue: str, worker: Worker
) -> None:
    a, b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    for task in (a, b):
        await start_task(temporal_client, task_queue, task)
    async with Running(nc, temporal_client):
        js = nc.jetstream()
        await js.publish(monitor_subject("files"), files_event(a, ["shared.py"]))
        await js.publish(monitor_subject("files"), files_event(b, ["shared.py", "other.py"]))

        async def both_halted() -> bool:
            return [len(await received(temporal_client, t)) for t in (a, b)] == [1, 1]

        await eventually(both_halted, "both workflows signalled")
    for task in (a, b):
        [got] = await received(temporal_client, task)
        assert (got.name, got.reason, got.level) == ("halt", "conflicting_changes", "halt")
    await finish(temporal_client, a, b)


async def test_scope_creep_flags_the_workflow(
    nc: NATS, temporal_client: Client, task_queue: str, worker: Worker
) -> None:
    task = f"s-{uuid.uuid4().hex[:8]}"
    await start_task(temporal_client, task_queue, task)
    async with Running(nc, temporal_client):
        event = files_event(task, ["calc.py", "setup.cfg"], task_files=["calc.py"])
        await nc.jetstream().publish(monitor_subject("files"), event)

        async def flagged() -> bool:
            return len(await received(temporal_client, task)) == 1

        await eventually(flagged, "workflow flagged")
    [got] = await received(temporal_client, task)
    assert (got.name, got.reason, got.level) == ("flag", "scope_creep", "warn")
    await finish(temporal_client, task)


async def test_a_missing_or_closed_workflow_is_skipped_and_the_monitor_goes_on(
    nc: NATS, temporal_client: Client, task_queue: str, worker: Worker
) -> None:
    closed = f"c-{uuid.uuid4().hex[:8]}"
    await start_task(temporal_client, task_queue, closed)
    await finish(temporal_client, closed)
    await temporal_client.get_workflow_handle(task_workflow_id(closed)).result()
    async with Running(nc, temporal_client) as monitor:
        js = nc.jetstream()
        await js.publish(monitor_subject("files"), files_event(closed, ["x.py"], ["y.py"]))
        await js.publish(monitor_subject("files"), files_event("never-started", ["q.py"], ["r.py"]))

        async def both_processed() -> bool:
            return monitor.stats.events == 2

        await eventually(both_processed, "both events processed")
    assert monitor.stats.signals == 2 and monitor.stats.failed_batches == 0


async def test_the_bridge_delivers_every_time_and_ignores_other_actions(
    temporal_client: Client, task_queue: str, worker: Worker
) -> None:
    task = f"d-{uuid.uuid4().hex[:8]}"
    await start_task(temporal_client, task_queue, task)
    bridge = TemporalSignalBridge.for_client(temporal_client, OWNER.sign)
    signal = pause_signal(task)
    assert await bridge.deliver(task, "pause", signal)
    assert await bridge.deliver(task, "pause", signal)
    assert not await bridge.deliver(task, "escalate", signal)
    assert [r.signal_id for r in await received(temporal_client, task)] == ["sig-1"]
    await finish(temporal_client, task)
