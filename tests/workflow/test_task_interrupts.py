"""A halt or pause from the risk monitor stops the step that is running, on a real Temporal server.

The gate hangs on its first run (``tests/support/slow_gate.py``) and the fake LLM holds the
developer's first request until the test releases it, so each signal surely arrives mid-step.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client, WorkflowHandle

from semspec.client.task_client import submit
from semspec.client.task_spec import TaskDraft, build_task_input
from semspec.core.config import load_config
from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.workflow_names import (
    SIGNAL_HALT,
    SIGNAL_PAUSE,
    task_workflow_id,
)
from semspec.workflow.task.messages import Resolution, RoleSpec, TaskResult
from semspec.workflow.worker import build_worker
from tests.fakes.llm_server import FakeLLMServer, FakeReply, RecordedRequest, call
from tests.fakes.llm_task import (
    TASK_CRITERION,
    TASK_TITLE,
    approve_reply,
    developer_replies,
    sample_repo,
)
from tests.support.owner import OWNER, answer, send
from tests.support.polling import until
from tests.support.slow_gate import gate_pid, is_running, slow_gate
from tests.support.tasks import GOOD_CALC, start, task_input, wait_for_phase, write_script

APPROVE = {"verdict": "approve", "summary": "looks right"}
HALT = RiskSignalInput("conflicting_changes", "halt", "h1", "calc.py is also changed by task b")
WAIT_S = 90.0
PAUSE = RiskSignalInput("context_pressure", "pause", "p1", "context at 72%")


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[str]:
    async with build_worker(temporal_client, task_queue, None, owner=OWNER):
        yield task_queue


def _tid() -> str:
    return f"int-{uuid.uuid4().hex[:8]}"


async def _start_on_slow_gate(
    client: Client, queue: str, repo: Path, task_id: str, tmp_path: Path
) -> tuple[WorkflowHandle[Any, Any], int]:
    """Start a task whose gate hangs on its first run; return once that gate runs (its pid)."""
    script = write_script(
        tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}]
    )
    gates = tmp_path / "gate"
    handle = await start(client, task_input(repo, script, task_id, gates=[slow_gate(gates)]), queue)
    return handle, await gate_pid(gates)


@pytest.mark.usefixtures("unfenced_gates")
async def test_a_halt_cancels_the_running_gate_and_escalates_naming_the_halt(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    handle, pid = await _start_on_slow_gate(temporal_client, worker, git_repo, _tid(), tmp_path)
    await send(handle, SIGNAL_HALT, HALT)
    status = await wait_for_phase(handle, "escalated")
    escalation = status.pending_escalation
    assert escalation is not None and status.halted
    assert (escalation.source, escalation.reason) == ("halt", "conflicting_changes")
    assert escalation.message.startswith("halt (conflicting_changes): calc.py is also changed")
    assert escalation.message.endswith("the running gates step was cancelled")
    assert not is_running(pid)  # the escalation waited until the gate's group was ended
    cancelled = [e.message for e in status.log if e.kind == "cancelled"]
    assert cancelled == ["gates step cancelled: halt from the risk monitor"]
    await answer(handle, Resolution("retry", "go on"))
    result: TaskResult = await asyncio.wait_for(handle.result(), WAIT_S)
    assert result.outcome == "approved"
    assert result.iterations == 2  # the human's retry ran the step again, in a new iteration
    assert [e.message.split(":")[0] for e in result.status.log if e.kind == "gate"] == ["slow"]


@pytest.mark.usefixtures("unfenced_gates")
async def test_a_pause_cancels_the_running_gate_and_checkpoints_at_once(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    task_id = _tid()
    handle, pid = await _start_on_slow_gate(temporal_client, worker, git_repo, task_id, tmp_path)
    await send(handle, SIGNAL_PAUSE, PAUSE)
    result: TaskResult = await asyncio.wait_for(handle.result(), WAIT_S)
    assert result.outcome == "approved"
    assert not is_running(pid)
    kinds = [e.kind for e in result.status.log]
    assert kinds.index("cancelled") < kinds.index("checkpoint") < kinds.index("resumed")
    checkpoint = next(e.message for e in result.status.log if e.kind == "checkpoint")
    assert checkpoint.startswith("pause (context_pressure); the running gates step was cancelled")
    assert checkpoint.split(": ")[1].startswith(f"semspec/checkpoint/{task_id}/1")
    assert "escalation" not in kinds  # a pause needs no human while checkpoints are left


def _held(release: threading.Event, reply: FakeReply) -> FakeReply:
    """Stand-in for a slow LLM: holds the request until the test releases it (bounded)."""
    release.wait(timeout=120)
    return reply


async def test_a_halt_stops_the_llm_developer_and_no_llm_call_follows_it(
    temporal_client: Client, worker: str, tmp_path: Path
) -> None:
    release = threading.Event()

    def first(_request: RecordedRequest) -> FakeReply:
        return _held(release, call("list_dir", {"path": "."}))

    guidance = "carry on from the start"
    llm = FakeLLMServer.for_roles(
        developer=[first, *developer_replies()], reviewer=[approve_reply()]
    )
    with llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url)
        task_id = _tid()
        draft = TaskDraft(
            title=TASK_TITLE, files=["calc.py"], criteria=[TASK_CRITERION], task_id=task_id
        )
        await submit(
            temporal_client, worker, build_task_input(draft, load_config(repo), repo), OWNER
        )
        handle = temporal_client.get_workflow_handle(
            task_workflow_id(task_id), result_type=TaskResult
        )
        await until(lambda: bool(llm.requests_for("developer")), "the developer calls the LLM")
        await send(handle, SIGNAL_HALT, HALT)
        status = await wait_for_phase(handle, "escalated")
        assert status.pending_escalation is not None
        assert status.pending_escalation.source == "halt"
        assert "developer step was cancelled" in status.pending_escalation.message
        # The held call gets its answer only now: a developer that was not stopped would act
        # on it and call the LLM again, in the conversation of the cancelled step.
        release.set()
        await answer(handle, Resolution("retry", guidance))
        result = await asyncio.wait_for(handle.result(), WAIT_S)
        developer_calls = llm.requests_for("developer")
    assert result.outcome == "approved"
    assert len(developer_calls) == 1 + len(developer_replies())
    # Every call after the halt belongs to the retried step, which carries the guidance.
    for request in developer_calls[1:]:
        assert guidance in str(request.body["messages"])


@pytest.mark.usefixtures("unfenced_gates")
async def test_a_halt_ends_a_command_developer_with_its_process_group(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    pid_path = tmp_path / "agent.pid"
    # An external coding agent that never finishes on its own.
    command = f"sh -c 'echo $$ > {pid_path}.tmp && mv {pid_path}.tmp {pid_path}; exec sleep 600'"
    (git_repo / ".semspec").mkdir()
    config = {"models": {"developer": {"provider": "command", "command": command}}}
    (git_repo / ".semspec" / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    inp = task_input(git_repo, tmp_path / "unused.yaml", _tid())
    inp = replace(inp, spec=replace(inp.spec, developer=RoleSpec("command", "agent-cli")))
    handle = await start(temporal_client, inp, worker)
    await until(pid_path.exists, "the command agent starts")
    pid = int(pid_path.read_text(encoding="utf-8"))
    await send(handle, SIGNAL_HALT, HALT)
    status = await wait_for_phase(handle, "escalated")
    assert status.pending_escalation is not None
    assert status.pending_escalation.message.endswith("the running developer step was cancelled")
    assert not is_running(pid)
    await answer(handle, Resolution("abort"))
    result: TaskResult = await asyncio.wait_for(handle.result(), WAIT_S)
    assert result.outcome == "aborted"
