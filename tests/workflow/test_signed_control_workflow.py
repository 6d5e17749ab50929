"""The owner's signatures, checked by the task and plan workflows on an in-process worker.

The attacks as another local user are in ``tests/security/test_signed_control.py``; these run
anywhere (no second user needed) and cover what the workflow itself decides (ADR 0004).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError

from semspec.core.owner_key import OwnerKey
from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.workflow_names import (
    SIGNAL_HALT,
    UPDATE_RESOLVE,
    plan_workflow_id,
    task_workflow_id,
)
from semspec.workflow.plan.messages import PlanInput, PlanTask
from semspec.workflow.plan.workflows import PlanWorkflow
from semspec.workflow.task.messages import TASK_START, Resolution, TaskStatus, signed_start
from semspec.workflow.task.workflows import TaskWorkflow
from semspec.workflow.worker import build_worker
from tests.support.owner import OWNER, OWNER_KEY, answer, signal_for
from tests.support.tasks import BROKEN_CALC, start, task_input, wait_for_phase, write_script


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[str]:
    async with build_worker(temporal_client, task_queue, None, owner=OWNER):
        yield task_queue


def _tid() -> str:
    return f"s{uuid.uuid4().hex[:8]}"


async def _failure(client: Client, workflow_id: str) -> str:
    with pytest.raises(WorkflowFailureError) as failed:
        await client.get_workflow_handle(workflow_id).result()
    return str(failed.value.cause)


async def test_a_task_signed_with_another_key_fails_before_its_workspace(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    task_id = _tid()
    script = write_script(tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": "x = 1\n"}}}])
    inp = task_input(git_repo, script, task_id, run_dir=tmp_path / "run")
    foreign = signed_start(OwnerKey.generate(), TASK_START, task_workflow_id(task_id), inp)
    await temporal_client.start_workflow(
        TaskWorkflow.run, foreign, id=task_workflow_id(task_id), task_queue=worker
    )
    why = await _failure(temporal_client, task_workflow_id(task_id))
    assert "was not started by this stack's owner" in why
    assert not (tmp_path / "run" / "worktrees" / task_id).exists()


async def test_a_plan_started_without_a_signature_fails_before_any_task(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    task_id = _tid()
    script = write_script(tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": "x = 1\n"}}}])
    plan = PlanInput(
        f"plan-{task_id}", "unsigned", [PlanTask(task_input(git_repo, script, task_id))]
    )
    plan = replace(plan, owner_key=OWNER_KEY)  # the right key, but nobody signed
    await temporal_client.start_workflow(
        PlanWorkflow.run, plan, id=plan_workflow_id(plan.plan_id), task_queue=worker
    )
    assert "start signature is missing" in await _failure(
        temporal_client, plan_workflow_id(plan.plan_id)
    )
    with pytest.raises(Exception, match="not found"):
        await temporal_client.get_workflow_handle(task_workflow_id(task_id)).describe()


async def test_wrong_answers_and_signals_are_refused_counted_and_the_owners_answer_works(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    task_id = _tid()
    script = write_script(tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": BROKEN_CALC}}}])
    handle = await start(
        temporal_client, task_input(git_repo, script, task_id, max_retries=0), worker
    )
    status = await wait_for_phase(handle, "escalated")
    assert status.pending_escalation is not None and status.pending_escalation.nonce

    intruder = OwnerKey.generate()
    for wrong in (
        Resolution("approve"),
        Resolution("approve", signature="AAAA" * 22),
        Resolution("approve").signed_by(intruder, status.pending_escalation),
    ):
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(UPDATE_RESOLVE, wrong)
        assert "signed answer to" in str(refused.value.cause)
    halt = RiskSignalInput("conflicting_changes", "halt", "h-forged")
    await handle.signal(SIGNAL_HALT, halt)
    await handle.signal(SIGNAL_HALT, signal_for("another-task", SIGNAL_HALT, halt))

    await answer(handle, Resolution("abort"))
    result = await handle.result()
    final: TaskStatus = result.status
    assert result.outcome == "aborted" and final.commit_id is None
    assert final.refused == 5
    assert [e.message for e in final.log if e.kind == "refused"] == [
        "unsigned halt signal h-forged dropped",
        "wrongly signed halt signal h-forged dropped",
    ]
