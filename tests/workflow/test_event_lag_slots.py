"""Loop events are published while gates hold every activity slot of the worker (issue 26:
publishing waited behind gates, so events reached the monitor up to 22 s late).

Real Temporal dev server, real NATS, real git, scripted agents. ``TASKS`` tasks, more than the
worker's activity slots, each with a gate that holds its slot until the test releases it. While
every slot is held by a gate, each task whose developer step is done (phase ``gates``) must get
its events out: ``events_pending`` reaches 0 and its ``files`` event is in the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from temporalio.client import Client, WorkflowHandle

from semspec.core.config.models import RiskConfig
from semspec.vocabulary.streams import ensure_streams
from semspec.vocabulary.workflow_names import QUERY_STATUS
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.task.messages import TaskStatus
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.worker import MAX_CONCURRENT_ACTIVITIES, build_worker
from tests.support.owner import OWNER
from tests.support.servers import NatsServer
from tests.support.stream_reads import task_events
from tests.support.tasks import GOOD_CALC, start, task_input, write_script

TASKS = MAX_CONCURRENT_ACTIVITIES + 4
HOLD = (
    "import os, time; open('gate-started', 'w').close(); "
    "[time.sleep(0.1) for _ in iter(lambda: os.path.exists('release'), True)]"
)


@pytest.fixture
async def nats_url(tmp_path: Path) -> AsyncIterator[str]:
    server = NatsServer(tmp_path / "nats").start()
    try:
        nc = await nats.connect(server.url)
        await ensure_streams(nc.jetstream(), RiskConfig())
        await nc.close()
        yield server.url
    finally:
        server.stop()


async def _status(handle: WorkflowHandle[object, object]) -> TaskStatus:
    status: TaskStatus = await handle.query(QUERY_STATUS, result_type=TaskStatus)
    return status


async def test_loop_events_go_out_while_gates_hold_every_activity_slot(
    temporal_client: Client, task_queue: str, nats_url: str, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": {"verdict": "approve"}}],
    )
    gate = GateSpec("hold", f'{sys.executable} -c "{HOLD}"', True, 300.0, ".")
    run_dir = tmp_path / "run"
    ids = [f"t{uuid.uuid4().hex[:6]}-{i}" for i in range(TASKS)]
    publisher = EventPublisher(nats_url)
    try:
        async with build_worker(temporal_client, task_queue, publisher, owner=OWNER):
            handles = [
                await start(
                    temporal_client,
                    task_input(git_repo, script, task_id, [gate], run_dir=run_dir),
                    task_queue,
                )
                for task_id in ids
            ]

            def started() -> list[Path]:
                return list((run_dir / "worktrees").glob("*/gate-started"))

            for _ in range(1200):
                if len(started()) >= MAX_CONCURRENT_ACTIVITIES:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError(f"only {len(started())} gates started")
            # Every slot is a gate now; a task past its developer step still gets its events out.
            in_gates: dict[str, TaskStatus] = {}
            for _ in range(200):
                statuses = {i: await _status(h) for i, h in zip(ids, handles, strict=True)}
                in_gates = {i: s for i, s in statuses.items() if s.phase == "gates"}
                if in_gates and all(s.events_pending == 0 for s in in_gates.values()):
                    break
                await asyncio.sleep(0.1)
            waiting = {i: s.events_pending for i, s in in_gates.items() if s.events_pending}
            assert not waiting, f"events wait behind the gates: {waiting}"
            assert len(in_gates) >= MAX_CONCURRENT_ACTIVITIES
            for task_id in in_gates:
                kinds = [e.kind for e in await task_events(nats_url, task_id)]
                assert "files" in kinds, (task_id, kinds)
            # Release every gate, those that start only now too, until every task has ended.
            results = asyncio.gather(*(asyncio.wait_for(h.result(), 180) for h in handles))
            while not results.done():
                for marker in started():
                    # A finished task's worktree may go between the glob and the touch.
                    with contextlib.suppress(FileNotFoundError):
                        (marker.parent / "release").touch()
                await asyncio.wait({results}, timeout=0.2)
            await results
    finally:
        await publisher.close()
