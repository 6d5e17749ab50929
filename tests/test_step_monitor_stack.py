"""The step rules on the real stack: step events published through the worker's JetStream
publisher reach a running monitor on a real NATS server, which signals each pattern at its
threshold and not one step before."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from semspec.vocabulary.events import UserSignal, monitor_event
from semspec.vocabulary.signal_evidence import StepPatternEvidence
from semspec.vocabulary.subjects import SIGNAL_STREAM
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.task.publisher import EventPublisher
from tests.support.running_monitor import Running

TASK = "stuck-1"


@dataclass
class Agent:
    """One developer turn's steps, published as the task loop's worker publishes them."""

    publisher: EventPublisher
    number: int = 0
    ids: list[str] = field(default_factory=list)

    async def step(self, kind: str, **data: Any) -> str:
        self.number += 1
        event_id = f"{task_workflow_id(TASK)}/run-1/1/step/developer/act-1/{self.number}"
        payload = {
            "role": "developer",
            "step": self.number,
            "kind": kind,
            "tool": "bash" if kind == "tool" else None,
            "action_hash": "",
            "observation_hash": "",
            "error": False,
            "input_tokens": 1_000 * self.number if kind == "model" else 0,
            **data,
        }
        event = monitor_event(
            "step", payload, event_id=event_id, task_id=TASK, run_id="run-1", iteration=1
        )
        await self.publisher.deliver(event)
        self.ids.append(event_id)
        return event_id

    async def call(self, action: str, output: str, error: bool = False) -> str:
        await self.step("model", action_hash=f"asks-{action}", observation_hash="thinking")
        return await self.step("tool", action_hash=action, observation_hash=output, error=error)


Pattern = Callable[[Agent], Any]


async def same_call(agent: Agent) -> None:
    await agent.call("ls", "a.py b.py")


async def same_failure(agent: Agent) -> None:
    await agent.call("pytest", "1 failed", error=True)


async def silent(agent: Agent) -> None:
    await agent.step("model", observation_hash="I think it is done")


async def over_window(agent: Agent) -> None:
    await agent.step("model", error=True, error_kind="context_window", observation_hash="400")


PATTERNS: dict[str, tuple[list[Pattern], int]] = {
    "repeated_action": ([same_call], 4),
    "repeated_failure": ([same_failure], 3),
    "no_tool_call": ([silent], 3),
    "context_window_errors": ([over_window], 2),
}


async def signals(nc: NATS) -> list[UserSignal]:
    js = nc.jetstream()
    info = await js.stream_info(SIGNAL_STREAM)
    if info.state.messages == 0:
        return []
    found = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(SIGNAL_STREAM, seq)
        found.append(UserSignal.from_json(msg.data or b""))
    return found


async def processed(monitor: Any, count: int) -> None:
    for _ in range(400):
        if monitor.stats.events >= count:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"the monitor processed {monitor.stats.events} of {count} events")


async def run_until(
    nc: NATS, nats_url: str, repeat: Callable[[Agent], Any], times: int
) -> tuple[list[UserSignal], list[UserSignal], Agent]:
    """Repeat a pattern ``times - 1`` times, then once more; the signals after each part."""
    publisher = EventPublisher(nats_url)
    agent = Agent(publisher)
    try:
        async with Running(nc) as monitor:
            for _ in range(times - 1):
                await repeat(agent)
            await processed(monitor, len(agent.ids))
            before = await signals(nc)
            await repeat(agent)
            await processed(monitor, len(agent.ids))
        return before, await signals(nc), agent
    finally:
        await publisher.close()


@pytest.mark.parametrize("rule", sorted(PATTERNS))
async def test_each_step_pattern_pauses_at_its_threshold_and_not_before(
    nc: NATS, nats_url: str, rule: str
) -> None:
    (repeat,), times = PATTERNS[rule]
    before, after, agent = await run_until(nc, nats_url, repeat, times)
    assert before == []
    assert [(s.task_id, s.reason, s.level) for s in after] == [(TASK, rule, "pause")]
    evidence = after[0].evidence
    assert isinstance(evidence, StepPatternEvidence)
    assert evidence.event_id == agent.ids[-1] and evidence.steps[-1] == agent.ids[-1]
    assert len(evidence.steps) == times


async def test_two_calls_alternating_pause_at_the_sixth_tool_step_and_not_before(
    nc: NATS, nats_url: str
) -> None:
    async def edit_then_test(agent: Agent) -> None:
        await agent.call("edit", "applied")
        await agent.call("pytest", "1 failed")

    publisher = EventPublisher(nats_url)
    agent = Agent(publisher)
    try:
        async with Running(nc) as monitor:
            await edit_then_test(agent)
            await edit_then_test(agent)
            await agent.call("edit", "applied")
            await processed(monitor, len(agent.ids))
            assert await signals(nc) == []
            await agent.call("pytest", "1 failed")
            await processed(monitor, len(agent.ids))
    finally:
        await publisher.close()
    found = await signals(nc)
    assert [(s.reason, s.level) for s in found] == [("alternating_actions", "pause")]
    evidence = found[0].evidence
    assert isinstance(evidence, StepPatternEvidence)
    assert evidence.step_numbers == [2, 4, 6, 8, 10, 12]


async def test_polling_with_changing_output_and_waits_never_signals(
    nc: NATS, nats_url: str
) -> None:
    publisher = EventPublisher(nats_url)
    agent = Agent(publisher)
    try:
        async with Running(nc) as monitor:
            for n in range(10):
                await agent.call("gh run view", f"{n}/10 jobs done")
                await agent.step("tool", tool="sleep", action_hash="sleep", wait=True)
                await agent.call("curl :8000", "refused", error=True)
            await processed(monitor, len(agent.ids))
    finally:
        await publisher.close()
    assert await signals(nc) == []
