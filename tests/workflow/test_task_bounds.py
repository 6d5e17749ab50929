"""Bounds that hold over a checkpoint, and the configured context window, on a real Temporal server.

A checkpoint continues the task as a new run; what the new run carries is read from its status,
its recorded history and the performance record in the graph. The developer's window is
configured to 32,000 tokens: a developer step of 25,000 tokens is red pressure there (a
checkpoint before the next iteration) and green in a configured window of 100,000.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pygit2
import pytest
import yaml
from temporalio.client import Client, WorkflowHandle

from semspec.core.config.models import GraphConfig
from semspec.graph.access import open_store
from semspec.vocabulary.workflow_names import (
    QUERY_STATUS,
    subtask_id,
    task_workflow_id,
)
from semspec.workflow.performance_graph import GraphPerformanceHistory
from semspec.workflow.task.context_activities import check_budget
from semspec.workflow.task.messages import (
    BudgetInput,
    Resolution,
    RoleSpec,
    TaskResult,
    TaskStatus,
)
from semspec.workflow.worker import build_worker
from tests.support.owner import OWNER, answer
from tests.support.tasks import (
    BROKEN_CALC,
    GOOD_CALC,
    GOOD_CALC_V2,
    start,
    task_input,
    write_script,
)

APPROVE = {"verdict": "approve", "summary": "looks right"}
CHANGES = {
    "verdict": "request_changes",
    "summary": "criterion not met",
    "findings": [{"message": "mul is missing"}],
}
RED = 25_000
WAIT_S = 90.0


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[str]:
    async with build_worker(temporal_client, task_queue, None, owner=OWNER):
        yield task_queue


def _tid() -> str:
    return f"b{uuid.uuid4().hex[:8]}"


def broken(attempt: int, tokens: int = 0) -> dict[str, Any]:
    """An iteration whose change fails the gate, different each attempt (a new fingerprint)."""
    change = {"calc.py": f"{BROKEN_CALC}# attempt {attempt}\n"}
    return {"developer": {"write": change, "tokens": tokens}}


def configure(repo: Path, models: dict[str, Any]) -> None:
    """Write ``.semspec/config.yaml`` with a ``models`` section (untracked, as after init)."""
    (repo / ".semspec").mkdir(exist_ok=True)
    text = yaml.safe_dump({"models": models})
    (repo / ".semspec" / "config.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def git_repo(git_repo: Path) -> Path:
    """The shared repository with a 32,000-token developer window, where ``RED`` is red
    pressure (the registry's default profile has 128,000); a test may configure another."""
    configure(git_repo, {"developer": {"context_window": 32_000}})
    return git_repo


async def settled(handle: WorkflowHandle[Any, Any]) -> TaskStatus:
    """The task's status once it is done or waiting for a human (bounded)."""
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while True:
        status: TaskStatus = await handle.query(QUERY_STATUS, result_type=TaskStatus)
        if status.phase in ("done", "escalated"):
            return status
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"task never settled; last phase {status.phase}")
        await asyncio.sleep(0.1)


async def developer_inputs(client: Client, task_id: str) -> list[dict[str, Any]]:
    """The ``task.develop`` inputs recorded in the history of the task's latest run."""
    history = await client.get_workflow_handle(task_workflow_id(task_id)).fetch_history()
    inputs = []
    for event in history.events:
        attrs = event.activity_task_scheduled_event_attributes
        scheduled = event.HasField("activity_task_scheduled_event_attributes")
        if scheduled and attrs.activity_type.name == "task.develop":
            inputs.append(json.loads(attrs.input.payloads[0].data))
    return inputs


# ----- what a checkpoint carries ---------------------------------------------------------------


async def test_a_checkpoint_does_not_reset_the_retry_count(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.yaml", [broken(0, RED), broken(1), broken(2)])
    handle = await start(
        temporal_client, task_input(git_repo, script, _tid(), max_retries=2), worker
    )
    status = await settled(handle)
    assert status.pending_escalation is not None
    assert status.pending_escalation.reason == "budget_exhausted"
    assert len(status.checkpoints) == 1
    retries = [e.message.rsplit("; ", 1)[1] for e in status.log if e.kind == "retry"]
    assert retries == ["retry 1/2", "retry 2/2"]  # the third is the escalation, not a retry
    assert status.pending_escalation.message.endswith("no retry left (2 allowed)")
    assert (status.iteration, status.retries) == (3, 3)
    await answer(handle, Resolution("abort"))


async def test_the_developer_after_a_checkpoint_gets_the_last_review_findings(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.yaml",
        [
            {"developer": {"write": {"calc.py": GOOD_CALC}, "tokens": RED}, "reviewer": CHANGES},
            {"developer": {"write": {"calc.py": GOOD_CALC_V2}}, "reviewer": APPROVE},
        ],
    )
    task_id = _tid()
    handle = await start(temporal_client, task_input(git_repo, script, task_id), worker)
    result: TaskResult = await asyncio.wait_for(handle.result(), WAIT_S)
    assert result.outcome == "approved"
    assert len(result.status.checkpoints) == 1
    [after_checkpoint] = await developer_inputs(temporal_client, task_id)
    [feedback] = after_checkpoint["feedback"]
    assert feedback.startswith("Reviewer requested changes: criterion not met")
    assert "- error: mul is missing" in feedback


async def test_the_performance_record_counts_the_tokens_of_every_run(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.yaml",
        [
            broken(0, RED),
            {"developer": {"write": {"calc.py": GOOD_CALC}, "tokens": 1_000}, "reviewer": APPROVE},
        ],
    )
    handle = await start(temporal_client, task_input(git_repo, script, _tid()), worker)
    result: TaskResult = await asyncio.wait_for(handle.result(), WAIT_S)
    assert result.outcome == "approved"
    assert len(result.status.checkpoints) == 1
    store = open_store(GraphConfig(), git_repo)
    try:
        stats = GraphPerformanceHistory(store).stats("scripted", "developer")
    finally:
        store.close()
    assert stats.approved_tokens == RED + 1_000


async def test_retries_a_human_granted_still_hold_after_a_checkpoint(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    approve = {"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}
    script = write_script(
        tmp_path / "s.yaml", [broken(0), broken(1), broken(2, RED), broken(3), approve]
    )
    handle = await start(
        temporal_client, task_input(git_repo, script, _tid(), max_retries=1), worker
    )
    status = await settled(handle)
    assert status.pending_escalation is not None
    await answer(handle, Resolution("extend_budget", extra_retries=3))
    status = await settled(handle)
    assert status.pending_escalation is None, status.pending_escalation
    assert status.outcome == "approved"
    assert len(status.checkpoints) == 1
    assert status.max_retries == 4


# ----- the configured window ---------------------------------------------------------------------


async def test_the_configured_developer_window_sizes_the_pressure_tracker(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    configure(git_repo, {"developer": {"context_window": 100_000}})
    script = write_script(
        tmp_path / "s.yaml",
        [
            {"developer": {"write": {"calc.py": BROKEN_CALC}, "tokens": RED}},
            {"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE},
        ],
    )
    handle = await start(temporal_client, task_input(git_repo, script, _tid()), worker)
    result: TaskResult = await asyncio.wait_for(handle.result(), WAIT_S)
    assert result.outcome == "approved"
    assert result.status.context is not None
    assert result.status.context.window == 100_000
    assert result.status.checkpoints == []  # 25,000 of 100,000 is no pressure
    budget = next(e for e in result.status.log if e.kind == "budget")
    assert budget.message == "fits: window 100,000 tokens"


async def test_the_budget_check_of_an_unregistered_model_uses_the_configured_window(
    git_repo: Path, tmp_path: Path
) -> None:
    configure(git_repo, {"developer": {"context_window": 65_536}})
    inp = task_input(git_repo, tmp_path / "unused.yaml", _tid())
    spec = replace(inp.spec, developer=RoleSpec("scripted", "my-local-model"))
    outcome = check_budget(BudgetInput(spec))
    assert outcome.window == 65_536
    assert "  context window: 65,536" in outcome.lines
    assert outcome.fits


async def test_subtasks_of_a_split_task_track_their_context_in_the_parents_window(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    configure(git_repo, {"developer": {"context_window": 50_000}})
    names = [f"mod{i}.py" for i in range(6)]
    git = pygit2.Repository(str(git_repo))
    for name in names:
        (git_repo / name).write_text(f"VALUE = {name!r}\n")
        git.index.add(name)
    git.index.write()
    sig = pygit2.Signature("t", "t@example.invalid")
    parent = git.lookup_branch("main").peel(pygit2.Commit)
    git.create_commit("refs/heads/main", sig, sig, "six", git.index.write_tree(), [parent.id])
    script = write_script(
        tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}]
    )
    task_id = _tid()
    inp = task_input(git_repo, script, task_id)
    inp = replace(inp, spec=replace(inp.spec, task_files=names))
    result: TaskResult = await asyncio.wait_for(
        (await start(temporal_client, inp, worker)).result(), WAIT_S
    )
    assert result.outcome == "approved"
    assert len(result.status.subtasks) == 2
    for part in (1, 2):
        child = temporal_client.get_workflow_handle(
            task_workflow_id(subtask_id(task_id, part)), result_type=TaskResult
        )
        done = await child.result()
        assert done.status.context is not None
        assert done.status.context.window == 50_000
