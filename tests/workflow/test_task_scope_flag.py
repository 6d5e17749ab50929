"""The loop flags files outside the task to the reviewer itself, from the developer's diff, so
the flag never depends on the risk monitor's signal arriving before the reviewer runs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle

from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.workflow_names import SIGNAL_FLAG
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.task.messages import TaskResult, TaskStatus
from semspec.workflow.worker import build_worker
from tests.support.owner import OWNER, send
from tests.support.tasks import (
    GOOD_CALC,
    GOOD_CALC_V2,
    start,
    task_input,
    wait_for_phase,
    write_script,
)

CHANGES = {"verdict": "request_changes", "findings": [{"message": "mul is missing"}]}
APPROVE = {"verdict": "approve", "summary": "looks right"}
NOTE = "scope_creep: files outside the task: README.md"


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[str]:
    """An in-process worker with no event publisher: no risk monitor can send a flag."""
    async with build_worker(temporal_client, task_queue, None, owner=OWNER):
        yield task_queue


async def test_a_file_outside_the_task_is_flagged_before_the_first_review_and_only_once(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    stray = {"calc.py": GOOD_CALC, "README.md": "# edited\n"}
    script = write_script(
        tmp_path / "s.yaml",
        [
            {"developer": {"write": stray}, "reviewer": CHANGES},
            # The README edit stays in the diff of the next iteration: the same creep.
            {"developer": {"write": {"calc.py": GOOD_CALC_V2}}, "reviewer": APPROVE},
        ],
    )
    task_id = f"t{uuid.uuid4().hex[:8]}"
    handle = await start(temporal_client, task_input(git_repo, script, task_id), worker)
    result: TaskResult = await handle.result()

    assert result.outcome == "approved"
    assert result.status.flags == [NOTE]
    kinds = [(e.iteration, e.kind) for e in result.status.log if e.kind in ("flag", "review")]
    assert kinds == [(1, "flag"), (1, "review"), (2, "review")]


@pytest.mark.usefixtures("unfenced_gates")
async def test_the_monitors_flag_about_the_same_files_adds_no_second_note(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    # The gate holds the task until the test has delivered the monitor's flag.
    held = GateSpec("held", f"sh -c 'while [ ! -f {go} ]; do sleep 0.1; done'", True, 60.0, ".")
    script = write_script(
        tmp_path / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC, "README.md": "x\n"}}, "reviewer": APPROVE}],
    )
    inp = task_input(git_repo, script, f"t{uuid.uuid4().hex[:8]}", gates=[held])
    handle = await start(temporal_client, inp, worker)
    await wait_for_phase(handle, "gates")
    monitor_flag = RiskSignalInput(
        "scope_creep", "warn", "s1", "outside: README.md", {"outside": ["README.md"]}
    )
    await send(handle, SIGNAL_FLAG, monitor_flag)
    await wait_for_log(handle, "signal")
    go.touch()
    result: TaskResult = await handle.result()

    assert result.status.flags == [NOTE]
    assert [e.kind for e in result.status.log if e.kind in ("flag", "signal")] == ["flag", "signal"]


async def wait_for_log(handle: WorkflowHandle[Any, Any], kind: str) -> None:
    """Poll the status query until the log has an entry of ``kind`` (bounded)."""
    for _ in range(300):
        status = await handle.query("status", result_type=TaskStatus)
        if any(e.kind == kind for e in status.log):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {kind} entry in the task log")


async def test_the_monitors_flag_before_the_steps_result_still_leaves_the_loops_flag_entry(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    # A developer step publishes its files event before it returns (docs/events.md), so the
    # monitor's flag can reach the workflow first; sent at once, it does here every time.
    script = write_script(
        tmp_path / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC, "README.md": "x\n"}}, "reviewer": APPROVE}],
    )
    handle = await start(
        temporal_client, task_input(git_repo, script, f"t{uuid.uuid4().hex[:8]}"), worker
    )
    monitor_flag = RiskSignalInput(
        "scope_creep", "warn", "s1", "outside: README.md", {"outside": ["README.md"]}
    )
    await send(handle, SIGNAL_FLAG, monitor_flag)
    result: TaskResult = await handle.result()

    assert result.status.flags == ["scope_creep: outside: README.md"]  # the reviewer is told once
    flags = [(e.kind, e.data.get("files")) for e in result.status.log if e.kind == "flag"]
    assert flags == [("flag", ["README.md"])]
    assert [e.kind for e in result.status.log if e.kind in ("flag", "signal")] == ["signal", "flag"]
