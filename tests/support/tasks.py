"""Build task inputs and scripts for task-loop tests."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from semspec.vocabulary.workflow_names import QUERY_STATUS, task_workflow_id
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.task.messages import (
    LoopLimits,
    RoleSpec,
    TaskInput,
    TaskSpec,
    TaskStatus,
)
from semspec.workflow.task.publisher import EventPublisher
from tests.support.owner import OWNER, signed
from tests.support.stack import write_script as write_script

GOOD_CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BROKEN_CALC = "def add(a, b):\n    return a - b\n"
GOOD_CALC_V2 = GOOD_CALC + "\n\ndef mul(a, b):\n    return a * b\n"


def check_gate(required: bool = True, name: str = "check") -> GateSpec:
    """A fast gate that imports calc.py from the worktree and checks add()."""
    code = "import calc; assert calc.add(2, 3) == 5, 'add(2, 3) should be 5'"
    return GateSpec(name, f'{sys.executable} -c "{code}"', required, 60.0, ".")


@asynccontextmanager
async def owner_worker(
    client: Client, task_queue: str, nats_url: str
) -> AsyncIterator[EventPublisher]:
    """An in-process worker on ``task_queue`` serving the tests' owner key (``OWNER``), its loop
    events published to the NATS at ``nats_url``."""
    from semspec.workflow.worker import build_worker

    publisher = EventPublisher(nats_url)
    try:
        async with build_worker(client, task_queue, publisher, owner=OWNER):
            yield publisher
    finally:
        await publisher.close()


def task_input(
    repo: Path,
    script: Path,
    task_id: str,
    gates: list[GateSpec] | None = None,
    max_retries: int = 3,
    run_dir: Path | None = None,
) -> TaskInput:
    """A task on the sample repository played by scripted agents."""
    role = RoleSpec("scripted", "scripted", str(script))
    spec = TaskSpec(
        task_id=task_id,
        title=f"test task {task_id}",
        repo_path=str(repo),
        criteria=["sub(a, b) returns a - b"],
        task_files=["calc.py"],
        developer=role,
        reviewer=role,
    )
    return TaskInput(
        spec=spec,
        gates=gates if gates is not None else [check_gate()],
        limits=LoopLimits(max_retries=max_retries, activity_attempts=3),
        run_dir=str(run_dir or repo.parent / "run"),
    )


async def wait_for_phase(
    handle: WorkflowHandle[Any, Any], phase: str, timeout_s: float = 60.0
) -> TaskStatus:
    """Poll the status query until the task reaches ``phase`` (bounded)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status: TaskStatus = await handle.query(QUERY_STATUS, result_type=TaskStatus)
        if status.phase == phase:
            return status
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"task never reached {phase}; last phase {status.phase}")
        await asyncio.sleep(0.1)


async def start(client: Client, inp: TaskInput, task_queue: str) -> WorkflowHandle[Any, Any]:
    """Start ``inp`` signed by the tests' owner key (``tests.support.owner``)."""
    from semspec.workflow.task.workflows import TaskWorkflow

    return await client.start_workflow(
        TaskWorkflow.run, signed(inp), id=task_workflow_id(inp.spec.task_id), task_queue=task_queue
    )
