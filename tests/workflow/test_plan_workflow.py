"""``PlanWorkflow`` on a real Temporal server: parallel tasks, dependencies, skips, status."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pygit2
import pytest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
)
from temporalio.exceptions import CancelledError
from temporalio.worker import Replayer

from semspec.client.plan_client import escalated_tasks, plan_status, submit_plan
from semspec.vocabulary.workflow_names import plan_workflow_id, task_workflow_id
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.plan.messages import (
    PlanInput,
    PlanResult,
    PlanStatus,
    PlanTask,
)
from semspec.workflow.plan.workflows import PlanWorkflow
from semspec.workflow.task.messages import Resolution
from semspec.workflow.task.workflows import TaskWorkflow
from semspec.workflow.worker import build_worker
from tests.support.owner import OWNER, answer
from tests.support.tasks import BROKEN_CALC, GOOD_CALC, task_input, write_script

APPROVE = {"verdict": "approve", "summary": "looks right"}


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[None]:
    async with build_worker(temporal_client, task_queue, None, owner=OWNER):
        yield


def plan_of(repo: Path, scripts: dict[str, Path], deps: dict[str, list[str]]) -> PlanInput:
    """A plan whose tasks (ids made unique per test) are played by the given scripts.

    Each task declares a file of its own: plan tasks that declare one file wait for each other
    to land (docs/landing.md), which these tests of the plan's order do not exercise."""
    suffix = uuid.uuid4().hex[:6]
    plan_id = f"plan-{suffix}"
    tasks = []
    for name, script in scripts.items():
        inp = task_input(repo, script, f"{name}-{suffix}")
        spec = replace(inp.spec, plan_id=plan_id, task_files=[f"{name}_part.py"])
        inp = replace(inp, spec=spec)
        tasks.append(PlanTask(inp, [f"{d}-{suffix}" for d in deps.get(name, [])]))
    return PlanInput(plan_id, "test plan", tasks)


def approving(tmp_path: Path, name: str = "approve") -> Path:
    """A script that fixes calc.py and adds a note of its own: a task that depends on another
    still changes something (a turn that changes nothing escalates ``no_change``)."""
    return write_script(
        tmp_path / f"{name}.yaml",
        [
            {
                "developer": {"write": {"calc.py": GOOD_CALC, f"{name}_note.txt": f"{name}\n"}},
                "reviewer": APPROVE,
            }
        ],
    )


async def wait_until_escalated(client: Client, plan_id: str) -> PlanStatus:
    for _ in range(300):  # bounded: at most ~30 s
        status = await plan_status(client, plan_id)
        if escalated_tasks(status):
            return status
        await asyncio.sleep(0.1)
    raise AssertionError(f"no task of {plan_id} escalated")


async def test_independent_tasks_start_together_and_a_dependent_waits_for_both(
    temporal_client: Client, task_queue: str, worker: None, git_repo: Path, tmp_path: Path
) -> None:
    scripts = {name: approving(tmp_path, name) for name in ("a", "b", "c")}
    plan = plan_of(git_repo, scripts, {"c": ["a", "b"]})
    handle = await submit_plan(temporal_client, task_queue, plan, OWNER)
    result: PlanResult = await handle.result()
    assert result.outcome == "approved"
    a, b, c = (t.input.spec.task_id for t in plan.tasks)
    steps = [(e.kind, e.task_id) for e in result.status.log]
    # a and b start before either finishes; c starts only after both finished.
    assert steps[:2] == [("started", a), ("started", b)]
    assert steps.index(("started", c)) > max(
        steps.index(("finished", a)), steps.index(("finished", b))
    )
    assert all(row.state == "approved" and row.commit_id for row in result.status.tasks)
    # The children are ordinary task workflows, addressable as task-<id>.
    child = await temporal_client.get_workflow_handle(task_workflow_id(c)).describe()
    assert child.parent_id == plan_workflow_id(plan.plan_id)


async def test_a_task_whose_dependency_was_aborted_is_skipped_with_its_dependents(
    temporal_client: Client, task_queue: str, worker: None, git_repo: Path, tmp_path: Path
) -> None:
    broken = write_script(
        tmp_path / "broken.yaml", [{"developer": {"write": {"calc.py": BROKEN_CALC}}}]
    )
    script = approving(tmp_path)
    plan = plan_of(
        git_repo,
        {"a": broken, "b": script, "c": script, "d": script},
        {"b": ["a"], "c": ["b"]},
    )
    a, b, c, d = (t.input.spec.task_id for t in plan.tasks)
    await submit_plan(temporal_client, task_queue, plan, OWNER)
    status = await wait_until_escalated(temporal_client, plan.plan_id)
    rows = {row.task_id: row for row in status.tasks}
    assert escalated_tasks(status) == [a]
    assert rows[b].state == "waiting" and rows[c].state == "waiting"
    await answer(temporal_client.get_workflow_handle(task_workflow_id(a)), Resolution("abort"))
    handle = temporal_client.get_workflow_handle(
        plan_workflow_id(plan.plan_id), result_type=PlanResult
    )
    result = await handle.result()
    final = {row.task_id: row for row in result.status.tasks}
    assert result.outcome == "incomplete"
    assert [final[t].state for t in (a, b, c, d)] == ["aborted", "skipped", "skipped", "approved"]
    assert final[b].reason == f"dependency {a} ended aborted"
    assert final[c].reason == f"dependency {b} ended skipped"


async def test_status_of_an_unknown_plan_is_a_not_found_error(temporal_client: Client) -> None:
    from semspec.core.errors import NotFoundError

    with pytest.raises(NotFoundError, match="plan 'no-such-plan' not found"):
        await plan_status(temporal_client, "no-such-plan")


async def test_a_cancelled_plan_cancels_its_running_tasks(
    temporal_client: Client, task_queue: str, worker: None, git_repo: Path, tmp_path: Path
) -> None:
    broken = write_script(
        tmp_path / "broken.yaml", [{"developer": {"write": {"calc.py": BROKEN_CALC}}}]
    )
    plan = plan_of(git_repo, {"a": broken, "b": approving(tmp_path)}, {"b": ["a"]})
    handle = await submit_plan(temporal_client, task_queue, plan, OWNER)
    await wait_until_escalated(temporal_client, plan.plan_id)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as err:
        await asyncio.wait_for(handle.result(), 60)
    assert isinstance(err.value.cause, CancelledError)
    a = plan.tasks[0].input.spec.task_id
    child = await temporal_client.get_workflow_handle(task_workflow_id(a)).describe()
    assert child.status == WorkflowExecutionStatus.CANCELED


async def test_a_finished_plan_replays_deterministically(
    temporal_client: Client, task_queue: str, worker: None, git_repo: Path, tmp_path: Path
) -> None:
    scripts = {name: approving(tmp_path, name) for name in ("a", "b")}
    plan = plan_of(git_repo, scripts, {"b": ["a"]})
    handle = await submit_plan(temporal_client, task_queue, plan, OWNER)
    await handle.result()
    history = await handle.fetch_history()
    await Replayer(workflows=[PlanWorkflow, TaskWorkflow]).replay_workflow(history)


async def test_a_dependent_task_starts_from_the_work_of_the_tasks_it_depends_on(
    temporal_client: Client, task_queue: str, worker: None, git_repo: Path, tmp_path: Path
) -> None:
    # a and b each add a module; c's gate passes only if both are in its worktree.
    def adding(name: str) -> Path:
        return write_script(
            tmp_path / f"{name}.yaml",
            [
                {
                    "developer": {"write": {f"{name}_part.py": f"{name.upper()} = 1\n"}},
                    "reviewer": APPROVE,
                }
            ],
        )

    plan = plan_of(
        git_repo, {"a": adding("a"), "b": adding("b"), "c": adding("c")}, {"c": ["a", "b"]}
    )
    code = "import a_part, b_part, c_part"
    needs_both = GateSpec("needs-deps", f'{sys.executable} -c "{code}"', True, 60.0, ".")
    dependent = plan.tasks[2]
    plan.tasks[2] = replace(dependent, input=replace(dependent.input, gates=[needs_both]))
    handle = await submit_plan(temporal_client, task_queue, plan, OWNER)
    # Bounded: without its dependencies' work c's gate fails and the task waits for a human.
    result: PlanResult = await asyncio.wait_for(handle.result(), 60)
    assert result.outcome == "approved"
    rows = {row.task_id: row for row in result.status.tasks}
    a, b, c = (t.input.spec.task_id for t in plan.tasks)
    assert rows[c].iterations == 1  # its gate passed at once
    repo = pygit2.Repository(str(git_repo))
    tip = repo.lookup_branch(f"semspec/task/{c}").peel(pygit2.Commit)
    assert {"a_part.py", "b_part.py", "c_part.py"} <= {entry.name for entry in tip.tree}
    start = tip.parents[0]
    assert {str(p) for p in start.parent_ids} == {rows[a].commit_id, rows[b].commit_id}
