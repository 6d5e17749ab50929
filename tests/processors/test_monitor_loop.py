"""The risk monitor and the task loop together: real NATS, real Temporal, the real processor.

Each test gets its own NATS server (so the monitor's file index and state start empty), an
in-process task worker publishing loop events, and the risk monitor with its Temporal signal
bridge. Gates that must not finish before the monitor has acted wait for a file the test
creates once it has seen the signal arrive, so no test depends on timing.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import nats
import pytest
from nats.aio.client import Client as NATS
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError

from semspec.client.plan_client import escalated_tasks, plan_status, submit_plan
from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.processor import RiskMonitor
from semspec.processors.risk_monitor.signal_bridge import TemporalSignalBridge
from semspec.vocabulary.streams import CONSUMER
from semspec.vocabulary.subjects import MONITOR_STREAM
from semspec.vocabulary.workflow_names import (
    QUERY_STATUS,
    plan_workflow_id,
    task_workflow_id,
)
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.plan.messages import PlanInput, PlanResult, PlanTask
from semspec.workflow.task.messages import (
    Resolution,
    TaskInput,
    TaskResult,
    TaskStatus,
)
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.worker import build_worker
from tests.support.monitor_probe import stream_messages
from tests.support.owner import OWNER, answer
from tests.support.servers import NatsServer
from tests.support.tasks import (
    BROKEN_CALC,
    GOOD_CALC,
    check_gate,
    start,
    task_input,
    write_script,
)

T = TypeVar("T")
APPROVE = {"verdict": "approve", "summary": "looks right"}
WAIT_S = 45.0


@dataclass
class Stack:
    """What a test drives: Temporal, the task queue, NATS and the running monitor."""

    client: Client
    task_queue: str
    nc: NATS
    monitor: RiskMonitor


@pytest.fixture
async def stack(temporal_client: Client, task_queue: str, tmp_path: Path) -> AsyncIterator[Stack]:
    server = NatsServer(tmp_path / "nats").start()
    publisher = EventPublisher(server.url)
    nc = await nats.connect(server.url)
    monitor = RiskMonitor(
        nc, RiskConfig(), TemporalSignalBridge.for_client(temporal_client, OWNER.sign)
    )
    stop = asyncio.Event()
    runner: asyncio.Task[None] | None = None
    try:
        await monitor.start()
        runner = asyncio.create_task(monitor.run(stop, idle_wait=0.1))
        async with build_worker(temporal_client, task_queue, publisher, owner=OWNER):
            yield Stack(temporal_client, task_queue, nc, monitor)
    finally:
        stop.set()
        if runner is not None:
            await asyncio.wait_for(runner, WAIT_S)
        await publisher.close()
        await nc.close()
        server.stop()


async def eventually(
    probe: Callable[[], Awaitable[T | None]], what: str, timeout_s: float = WAIT_S
) -> T:
    """Poll ``probe`` until it returns a value (bounded); fail saying what never happened."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        value = await probe()
        if value is not None and value is not False:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.1)


def release_gate(tmp_path: Path) -> tuple[GateSpec, Path]:
    """A gate that passes once its release file exists (it gives up after a minute)."""
    release = tmp_path / f"release-{uuid.uuid4().hex[:6]}"
    code = (
        "import os, time; end = time.time() + 60; "
        f"[time.sleep(0.05) for _ in iter(lambda: os.path.exists({str(release)!r}) "
        "or time.time() > end, True)]; "
        f"assert os.path.exists({str(release)!r}), 'not released'"
    )
    return GateSpec("wait-for-release", f'{sys.executable} -c "{code}"', True, 90.0, "."), release


async def status_of(client: Client, task_id: str) -> TaskStatus:
    status: TaskStatus = await client.get_workflow_handle(task_workflow_id(task_id)).query(
        QUERY_STATUS, result_type=TaskStatus
    )
    return status


async def status_once_started(client: Client, task_id: str) -> TaskStatus | None:
    """The task's status, or ``None`` while its workflow does not exist or is starting."""
    try:
        return await status_of(client, task_id)
    except (RPCError, WorkflowQueryFailedError):
        return None


async def messages(nc: NATS, subject: str, task_id: str) -> list[dict[str, Any]]:
    """Every message on ``subject`` (a stream subject) about ``task_id``, oldest first."""
    return await stream_messages(nc.jetstream(), subject, task_id)


async def monitor_caught_up(stack: Stack) -> bool:
    """Whether the monitor has processed (and acked) every loop event published so far."""
    info = await stack.nc.jetstream().consumer_info(MONITOR_STREAM, CONSUMER)
    return bool(info.num_pending == 0 and info.num_ack_pending == 0)


def tid(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:6]}"


# ----- conflicting changes -------------------------------------------------------------------


@pytest.mark.usefixtures("unfenced_gates")
async def test_two_parallel_plan_tasks_editing_one_file_are_halted_until_a_human_answers(
    stack: Stack, git_repo: Path, tmp_path: Path
) -> None:
    gate, release = release_gate(tmp_path)
    script = write_script(
        tmp_path / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    plan_id = tid("plan")
    tasks = []
    # The right task declares no file: plan tasks that declare one file wait for each other
    # (docs/landing.md); the halt is for what was not known in advance.
    for name, files in (("left", ["calc.py"]), ("right", [])):
        inp = task_input(git_repo, script, tid(name), gates=[gate])
        spec = replace(inp.spec, plan_id=plan_id, task_files=files)
        tasks.append(PlanTask(replace(inp, spec=spec)))
    left, right = (t.input.spec.task_id for t in tasks)
    await submit_plan(stack.client, stack.task_queue, PlanInput(plan_id, "conflict", tasks), OWNER)

    async def both_signalled() -> bool:
        for task_id in (left, right):
            status = await status_once_started(stack.client, task_id)
            log = status.log if status else []
            if not any(e.kind == "signal" and e.message.startswith("halt") for e in log):
                return False
        return True

    await eventually(both_signalled, "the monitor halts both tasks")
    release.touch()

    async def both_escalated() -> list[str] | None:
        escalated = escalated_tasks(await plan_status(stack.client, plan_id))
        return escalated if len(escalated) == 2 else None

    assert sorted(await eventually(both_escalated, "both tasks escalate")) == sorted([left, right])
    for task_id in (left, right):
        status = await status_of(stack.client, task_id)
        assert status.halted
        assert status.commit_id is None  # halted before the commit
        assert status.pending_escalation is not None
        assert status.pending_escalation.source == "halt"
        assert status.pending_escalation.reason == "conflicting_changes"
        halts = await messages(stack.nc, "user.signal.halt", task_id)
        assert [h["reason"] for h in halts] == ["conflicting_changes"]

    # A human keeps one change and drops the other.
    await answer(
        stack.client.get_workflow_handle(task_workflow_id(left)),
        Resolution("approve", resolved_by="alice"),
    )
    await answer(
        stack.client.get_workflow_handle(task_workflow_id(right)),
        Resolution("abort", resolved_by="alice"),
    )
    handle = stack.client.get_workflow_handle(plan_workflow_id(plan_id), result_type=PlanResult)
    result = await asyncio.wait_for(handle.result(), WAIT_S)
    rows = {row.task_id: row for row in result.status.tasks}
    assert rows[left].state == "approved" and rows[left].commit_id
    assert rows[right].state == "aborted" and rows[right].commit_id is None
    assert result.outcome == "incomplete"


# ----- scope creep ---------------------------------------------------------------------------


@pytest.mark.usefixtures("unfenced_gates")
async def test_scope_creep_is_flagged_to_the_workflow_and_reaches_the_reviewer(
    stack: Stack, git_repo: Path, tmp_path: Path
) -> None:
    gate, release = release_gate(tmp_path)
    script = write_script(
        tmp_path / "s.yaml",
        [
            {
                "developer": {"write": {"calc.py": GOOD_CALC, "notes.txt": "extra\n"}},
                "reviewer": APPROVE,
            }
        ],
    )
    task_id = tid("creep")
    handle = await start(
        stack.client, task_input(git_repo, script, task_id, gates=[gate]), stack.task_queue
    )

    async def flagged() -> TaskStatus | None:
        status = await status_once_started(stack.client, task_id)
        return status if status and status.flags else None

    status = await eventually(flagged, "the scope-creep flag reaches the workflow")
    # Flagged while the gate still holds the loop: the reviewer has not run yet.
    assert status.phase == "gates"
    assert status.last_verdict is None
    assert len(status.flags) == 1
    assert status.flags[0].startswith("scope_creep: ")
    assert "notes.txt" in status.flags[0]
    release.touch()

    result: TaskResult = await asyncio.wait_for(handle.result(), WAIT_S)
    assert result.outcome == "approved"
    reviews = await messages(stack.nc, "agent.monitor.review", task_id)
    assert [r["data"]["flagged"] for r in reviews] == [True]
    warns = await messages(stack.nc, "user.signal.warn", task_id)
    assert [w["reason"] for w in warns] == ["scope_creep"]


# ----- one escalation, not two ---------------------------------------------------------------


async def escalate_signals_once_settled(stack: Stack, task_id: str) -> list[dict[str, Any]]:
    """The task's ``user.signal.escalate`` messages once the monitor has seen every event."""

    async def loop_signal_published() -> bool:
        return bool(await messages(stack.nc, "user.signal.escalate", task_id))

    await eventually(loop_signal_published, "the loop publishes its escalation")
    await eventually(lambda: monitor_caught_up(stack), "the monitor catches up")
    return await messages(stack.nc, "user.signal.escalate", task_id)


async def run_until_escalated(stack: Stack, inp: TaskInput) -> TaskStatus:
    await start(stack.client, inp, stack.task_queue)

    async def escalated() -> TaskStatus | None:
        status = await status_once_started(stack.client, inp.spec.task_id)
        return status if status and status.pending_escalation is not None else None

    return await eventually(escalated, "the task escalates")


async def finish(stack: Stack, task_id: str) -> None:
    handle = stack.client.get_workflow_handle(task_workflow_id(task_id))
    await answer(handle, Resolution("abort"))
    await asyncio.wait_for(handle.result(), WAIT_S)


async def test_a_no_new_evidence_escalation_sends_exactly_one_escalate_signal(
    stack: Stack, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": BROKEN_CALC}}}])
    task_id = tid("same")
    status = await run_until_escalated(stack, task_input(git_repo, script, task_id))
    assert status.pending_escalation is not None
    assert status.pending_escalation.reason == "no_new_evidence"
    signals = await escalate_signals_once_settled(stack, task_id)
    assert [s["reason"] for s in signals] == ["no_new_evidence"]
    await finish(stack, task_id)


async def test_exhausted_retries_send_one_escalate_signal_not_one_from_each_side(
    stack: Stack, git_repo: Path, tmp_path: Path
) -> None:
    # Four different broken attempts: 4 retries > 3 trips the loop's bound and the monitor's
    # retry_count rule on the same escalation event.
    attempts = [
        {"developer": {"write": {"calc.py": BROKEN_CALC + f"# attempt {i}\n"}}} for i in range(5)
    ]
    script = write_script(tmp_path / "s.yaml", attempts)
    task_id = tid("retries")
    inp = task_input(git_repo, script, task_id, gates=[check_gate()], max_retries=3)
    status = await run_until_escalated(stack, inp)
    assert status.pending_escalation is not None
    assert status.pending_escalation.reason == "budget_exhausted"
    signals = await escalate_signals_once_settled(stack, task_id)
    assert [s["reason"] for s in signals] == ["budget_exhausted"]
    state = await stack.monitor.store.load_task(task_id)
    assert state is not None and state.retries == 4  # the monitor did see the retries
    await finish(stack, task_id)


async def test_after_an_extended_budget_the_monitor_waits_for_the_granted_retries(
    stack: Stack, git_repo: Path, tmp_path: Path
) -> None:
    # Two broken attempts exhaust max_retries=1; the human grants 6 more. The next five broken
    # attempts reach 5 retries, over the monitor's threshold of 3 but within the grant, and
    # must not bring a second escalation; the sixth attempt is approved.
    broken = [
        {"developer": {"write": {"calc.py": BROKEN_CALC + f"# attempt {i}\n"}}} for i in range(7)
    ]
    approved = {"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}
    script = write_script(tmp_path / "s.yaml", [*broken, approved])
    task_id = tid("extended")
    inp = task_input(git_repo, script, task_id, gates=[check_gate()], max_retries=1)
    status = await run_until_escalated(stack, inp)
    assert status.pending_escalation is not None
    assert status.pending_escalation.reason == "budget_exhausted"
    handle = stack.client.get_workflow_handle(task_workflow_id(task_id), result_type=TaskResult)
    await answer(handle, Resolution("extend_budget", resolved_by="bob", extra_retries=6))
    result = await asyncio.wait_for(handle.result(), WAIT_S)
    assert result.outcome == "approved" and result.iterations == 8
    await eventually(lambda: monitor_caught_up(stack), "the monitor catches up")
    signals = await messages(stack.nc, "user.signal.escalate", task_id)
    assert [s["reason"] for s in signals] == ["budget_exhausted"]
    state = await stack.monitor.store.load_task(task_id)
    assert state is not None and state.retry_allowance == 6
    assert state.retries == 5  # the monitor saw retries over its own threshold of 3
