"""Every model call and tool call of a task's agents reaches ``agent.monitor.step``, and a halt
for the task on NATS stops its agent before the next step.

Real Temporal dev server, real NATS (the worker's JetStream publisher; events read back from the
``AGENT_MONITOR`` stream), the fake OpenAI-compatible server playing both agents.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
from temporalio.client import Client

from semspec.agents.steps import StepRecord, action_hash, observation_hash
from semspec.client.task_client import submit
from semspec.client.task_spec import TaskDraft, build_task_input
from semspec.core.config import load_config
from semspec.core.config.models import RiskLevel
from semspec.vocabulary.events import MonitorEvent, UserSignal
from semspec.vocabulary.signal_evidence import ConflictEvidence
from semspec.vocabulary.subjects import signal_intake_subject
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.task.messages import EventContext, TaskResult
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.task.step_events import TurnObserver, step_outbox
from tests.agents.test_llm_task_e2e_retries import run_task
from tests.fakes.llm_server import FakeLLMServer, FakeReply, cached, call, slow
from tests.fakes.llm_task import (
    TASK_CRITERION,
    TASK_TITLE,
    approve_reply,
    developer_replies,
    sample_repo,
)
from tests.support.owner import OWNER
from tests.support.polling import until
from tests.support.servers import NatsServer
from tests.support.stream_reads import task_events
from tests.support.tasks import owner_worker, wait_for_phase

COST = {"input_per_1m": 500.0, "output_per_1m": 1_000.0, "cached_input_per_1m": 50.0}
"""The fake model's price: a call of 10 input and 5 output tokens costs $0.01."""
LISTING = call("list_dir", {"path": "."})


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str, nats_url: str) -> AsyncIterator[str]:
    """An in-process worker publishing to the test's NATS."""
    async with owner_worker(temporal_client, task_queue, nats_url):
        yield task_queue


def steps_of(events: list[MonitorEvent], role: str) -> list[dict[str, Any]]:
    """The payloads of ``role``'s step events, in stream order."""
    steps = [e.data.model_dump() for e in events if e.kind == "step"]
    return [s for s in steps if s["role"] == role]


async def test_a_developer_turn_publishes_one_step_per_model_call_and_tool_call_in_order(
    temporal_client: Client, worker: str, nats_url: str, tmp_path: Path
) -> None:
    task_id = f"steps-{uuid.uuid4().hex[:8]}"
    developer = [cached(LISTING, 4), *developer_replies()[1:]]
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url, price=COST)
        result = await run_task(temporal_client, worker, repo, task_id)
    events = await task_events(nats_url, task_id)

    assert result.outcome == "approved"
    steps = steps_of(events, "developer")
    tools = ["list_dir", "search", "read", "write_file", "submit"]
    expected: list[tuple[int, str, str | None]] = []
    for i, tool in enumerate(tools):
        expected += [(2 * i + 1, "model", None), (2 * i + 2, "tool", tool)]
    assert [(s["step"], s["kind"], s["tool"]) for s in steps] == expected
    first, listing = steps[0], steps[1]
    assert (first["input_tokens"], first["output_tokens"], first["cached_tokens"]) == (10, 5, 4)
    assert first["cost_usd"] == pytest.approx((6 * 500 + 4 * 50 + 5 * 1000) / 1e6)
    assert [s["cost_usd"] for s in steps[2::2]] == [pytest.approx(0.01)] * 4
    assert first["model"] == "fake-model"
    assert first["action_hash"] == action_hash("tool_calls", [["list_dir", {"path": "."}]])
    assert first["observation_hash"] == observation_hash("")
    assert listing["action_hash"] == action_hash("list_dir", {"path": "."})
    assert not any(s["error"] for s in steps)
    assert all(s["cost_usd"] is None and s["input_tokens"] == 0 for s in steps[1::2])
    (review,) = steps_of(events, "reviewer")
    assert (review["kind"], review["cost_usd"]) == ("model", pytest.approx(0.01))
    ids = [e.event_id for e in events if e.kind == "step"]
    assert ids[0].startswith(f"{task_workflow_id(task_id)}/") and "/1/step/developer/" in ids[0]


async def test_a_retried_activity_publishes_no_step_twice(
    temporal_client: Client, worker: str, nats_url: str, tmp_path: Path
) -> None:
    task_id = f"steps-{uuid.uuid4().hex[:8]}"
    developer = [
        LISTING,
        FakeReply(status=429, error_message="rate limit reached", retry_after=0.1),
        *developer_replies(),
    ]
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url, price=COST)
        result = await run_task(temporal_client, worker, repo, task_id)
        calls = len(llm.requests_for("developer"))
    events = await task_events(nats_url, task_id)

    assert result.outcome == "approved" and calls == 7  # 2 in the failed attempt, 5 in its retry
    steps = steps_of(events, "developer")
    # The retry takes steps 1 to 10 again; the first attempt's 1 to 3 are already out.
    assert [s["step"] for s in steps] == list(range(1, 11))
    assert (steps[2]["error"], steps[2]["error_kind"]) == (True, "rate_limited")
    ids = [e.event_id for e in events if e.kind == "step"]
    assert len(ids) == len(set(ids))


async def publish_halt(nats_url: str, task_id: str) -> None:
    """A halt for ``task_id`` published to NATS as the risk monitor publishes one."""
    await publish_signal(nats_url, task_id, "halt")


async def publish_signal(nats_url: str, task_id: str, level: RiskLevel) -> None:
    """A signal at ``level`` for ``task_id`` (after a malformed one), as the monitor publishes."""
    signal = UserSignal(
        signal_id=f"{level}-{uuid.uuid4().hex[:8]}",
        task_id=task_id,
        level=level,
        reason="conflicting_changes",
        evidence=ConflictEvidence(event_id="e1", files=["calc.py"], other_tasks=["other"]),
        message="calc.py is also changed by task other",
    )
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        subject = signal_intake_subject(level)
        await js.publish(subject, b"{not a signal", headers={"Nats-Msg-Id": signal.signal_id + "x"})
        await js.publish(subject, signal.to_json(), headers={"Nats-Msg-Id": signal.signal_id})
    finally:
        await nc.close()


async def submit_task(client: Client, queue: str, repo: Path, task_id: str) -> None:
    draft = TaskDraft(
        title=TASK_TITLE, files=["calc.py"], criteria=[TASK_CRITERION], task_id=task_id
    )
    await submit(client, queue, build_task_input(draft, load_config(repo), repo), OWNER)


async def test_a_halt_for_the_task_on_nats_stops_its_developer_before_the_next_model_call(
    temporal_client: Client, worker: str, nats_url: str, tmp_path: Path
) -> None:
    task_id = f"halt-{uuid.uuid4().hex[:8]}"
    developer = [slow(LISTING, 0.3)] * 12
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url, price=COST)
        await submit_task(temporal_client, worker, repo, task_id)
        handle = temporal_client.get_workflow_handle(task_workflow_id(task_id))
        try:
            await until(lambda: len(llm.requests_for("developer")) == 3, "a third model call")
            # The third reply is still 0.3 s away: the halt arrives while the call is made.
            await publish_halt(nats_url, task_id)
            # Nothing signals the workflow here, so the step ends on its own and escalates.
            status = await wait_for_phase(handle, "escalated")
            calls = len(llm.requests_for("developer"))
        finally:
            await handle.terminate("test over")
    events = await task_events(nats_url, task_id)

    assert calls == 3
    assert status.pending_escalation is not None
    assert "halt from the risk monitor" in status.pending_escalation.message
    # Three model calls, the tool calls of the first two; the third's tool call never ran.
    assert [s["kind"] for s in steps_of(events, "developer")] == ["model", "tool"] * 2 + ["model"]


async def test_a_halt_for_another_task_does_not_stop_the_developer(
    temporal_client: Client, worker: str, nats_url: str, tmp_path: Path
) -> None:
    task_id = f"go-on-{uuid.uuid4().hex[:8]}"
    developer = [slow(LISTING, 0.3)] * 3 + developer_replies()
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url, price=COST)
        await submit_task(temporal_client, worker, repo, task_id)
        await until(lambda: len(llm.requests_for("developer")) == 2, "a second model call")
        await publish_halt(nats_url, f"other-{task_id}")
        handle = temporal_client.get_workflow_handle(
            task_workflow_id(task_id), result_type=TaskResult
        )
        result = await asyncio.wait_for(handle.result(), 120)
        calls = len(llm.requests_for("developer"))
    events = await task_events(nats_url, task_id)
    assert result.outcome == "approved"
    assert calls == 3 + len(developer_replies())
    assert len(steps_of(events, "developer")) == 2 * calls  # every call took its tool step


def a_step(n: int) -> StepRecord:
    return StepRecord("developer", n, "tool", action_hash("x", {}), observation_hash("y"), "x")


async def test_the_observer_stops_on_a_pause_for_its_task_only(nats_url: str) -> None:
    publisher = EventPublisher(nats_url)
    task_id = f"pause-{uuid.uuid4().hex[:8]}"
    ctx = EventContext(task_id, None, f"task-{task_id}", "r1", 1)
    try:
        async with TurnObserver(publisher, ctx, "developer", "a1") as observer:
            await publisher.publish("agent.monitor.warmup", b"{}", "warm")  # streams exist
            await publish_signal(nats_url, f"other-{task_id}", "pause")
            await publish_signal(nats_url, task_id, "warn")
            await asyncio.sleep(0.5)
            assert observer.stop_requested() is None
            await publish_signal(nats_url, task_id, "pause")
            await until(lambda: observer.stop_requested() is not None, "the pause", 10)
            assert observer.stop_requested() == "pause"
    finally:
        await publisher.close()


async def test_steps_that_cannot_reach_nats_go_to_the_outbox_in_order_within_bounds(
    tmp_path: Path,
) -> None:
    server = NatsServer(tmp_path / "nats").start()
    publisher = EventPublisher(server.url, attempt_s=0.5)
    await publisher.publish("agent.monitor.warmup", b"{}", "warm")  # connected, streams made
    server.stop()
    ctx = EventContext("gone", None, "task-gone", "r1", 1)
    started = asyncio.get_running_loop().time()
    try:
        async with TurnObserver(publisher, ctx, "developer", "a1", drain_s=1.0) as observer:
            for n in range(1, 4):
                observer.step(a_step(n))  # returns at once, whatever NATS does
    finally:
        await publisher.close()
    # Nothing is lost: the turn hands the three to the workflow's outbox, under their own ids.
    queued, dropped = step_outbox(observer)
    assert (observer.dropped, dropped) == (0, 0)
    assert [q.kind for q in queued] == ["step"] * 3
    assert [q.data["event_key"] for q in queued] == [f"developer/a1/{n}" for n in (1, 2, 3)]
    assert [q.data["step"] for q in queued] == [1, 2, 3]
    assert asyncio.get_running_loop().time() - started < 10
