"""The step rules on the real stack: an agent's steps go through the develop activity's step
observer (``TurnObserver``: queued, validated, published by the worker's JetStream publisher) to
a running monitor on a real NATS server, which signals each pattern at its threshold and not one
step before; the pause reaches the observer, so the agent stops before its next step."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from semspec.agents.steps import StepRecord
from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.processor import RiskMonitor
from semspec.processors.risk_monitor.replay.command import replay_files
from semspec.vocabulary.events import UserSignal
from semspec.vocabulary.signal_evidence import StepPatternEvidence
from semspec.vocabulary.subjects import MONITOR_STREAM, SIGNAL_STREAM
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.task.messages import EventContext
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.task.step_events import TurnObserver, step_event_id
from tests.support.running_monitor import Running

TASK = "stuck-1"
CTX = EventContext(
    task_id=TASK, plan_id=None, workflow_id=task_workflow_id(TASK), run_id="run-1", iteration=1
)
TURN = "act-1"


@dataclass
class Agent:
    """One developer turn: each step handed to the observer as the agents hand theirs."""

    observer: TurnObserver
    monitor: RiskMonitor
    number: int = 0
    ids: list[str] = field(default_factory=list)

    async def step(self, kind: str, **data: Any) -> None:
        self.number += 1
        tool = data.pop("tool", "bash" if kind == "tool" else None)
        record = StepRecord(
            "developer",
            self.number,
            "model" if kind == "model" else "tool",
            action_hash=data.pop("action_hash", ""),
            observation_hash=data.pop("observation_hash", ""),
            tool=tool,
            input_tokens=1_000 * self.number if kind == "model" else 0,
            **data,
        )
        self.observer.step(record)
        self.ids.append(step_event_id(CTX, "developer", TURN, self.number))
        await self.evaluated()

    async def call(self, action: str, output: str, error: bool = False) -> None:
        await self.step("model", action_hash=f"asks-{action}", observation_hash="thinking")
        await self.step("tool", action_hash=action, observation_hash=output, error=error)

    async def evaluated(self) -> None:
        """Wait until the monitor has evaluated every step handed over so far."""
        for _ in range(400):
            if self.monitor.stats.events >= len(self.ids):
                return
            await asyncio.sleep(0.025)
        raise AssertionError(f"the monitor evaluated {self.monitor.stats.events} of {self.ids}")


@asynccontextmanager
async def developer_turn(nc: NATS, nats_url: str) -> AsyncIterator[Agent]:
    """A monitor on the stack and one developer turn publishing to it."""
    publisher = EventPublisher(nats_url)
    try:
        async with Running(nc) as monitor, TurnObserver(publisher, CTX, "developer", TURN) as seen:
            yield Agent(seen, monitor)
    finally:
        await publisher.close()


async def stored(nc: NATS, stream: str) -> list[bytes]:
    """Every message ``stream`` holds, oldest first."""
    js = nc.jetstream()
    info = await js.stream_info(stream)
    if info.state.messages == 0:
        return []
    found = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(stream, seq)
        found.append(msg.data or b"")
    return found


async def signals(nc: NATS) -> list[UserSignal]:
    return [UserSignal.from_json(raw) for raw in await stored(nc, SIGNAL_STREAM)]


async def stop_reaches(observer: TurnObserver) -> str | None:
    """What the observer tells the agent before its next step, once the signal had time."""
    for _ in range(200):
        if observer.stop_requested() is not None:
            break
        await asyncio.sleep(0.025)
    return observer.stop_requested()


async def same_call(agent: Agent) -> None:
    await agent.call("ls", "a.py b.py")


async def same_failure(agent: Agent) -> None:
    await agent.call("pytest", "1 failed", error=True)


async def silent(agent: Agent) -> None:
    await agent.step("model", observation_hash="I think it is done")


async def over_window(agent: Agent) -> None:
    await agent.step("model", error=True, error_kind="context_window", observation_hash="400")


async def edit_or_test(agent: Agent) -> None:
    """Edit, test, edit, test, ...: the same two calls taking turns."""
    if agent.number % 4 == 0:
        await agent.call("edit", "applied")
    else:
        await agent.call("pytest", "1 failed")


PATTERNS: dict[str, tuple[Callable[[Agent], Awaitable[None]], int]] = {
    "repeated_action": (same_call, 4),
    "repeated_failure": (same_failure, 3),
    "no_tool_call": (silent, 3),
    "context_window_errors": (over_window, 2),
    "alternating_actions": (edit_or_test, 6),
}


@pytest.mark.parametrize("rule", sorted(PATTERNS))
async def test_each_step_pattern_pauses_at_its_threshold_and_not_before(
    nc: NATS, nats_url: str, rule: str
) -> None:
    repeat, times = PATTERNS[rule]
    async with developer_turn(nc, nats_url) as agent:
        for _ in range(times - 1):
            await repeat(agent)
        assert await signals(nc) == []
        assert agent.observer.stop_requested() is None
        await repeat(agent)
        assert await stop_reaches(agent.observer) == "pause"
    found = await signals(nc)
    assert [(s.task_id, s.reason, s.level) for s in found] == [(TASK, rule, "pause")]
    evidence = found[0].evidence
    assert isinstance(evidence, StepPatternEvidence)
    assert evidence.event_id == agent.ids[-1] == evidence.steps[-1]
    assert len(evidence.steps) == times and set(evidence.steps) <= set(agent.ids)


async def test_polling_with_changing_output_and_waits_never_signals(
    nc: NATS, nats_url: str
) -> None:
    async with developer_turn(nc, nats_url) as agent:
        for n in range(10):
            await agent.call("gh run view", f"{n}/10 jobs done")
            await agent.step("tool", tool="sleep", action_hash="sleep 5", wait=True)
            await agent.call("curl :8000", "refused", error=True)
        assert agent.observer.stop_requested() is None
    assert await signals(nc) == []


async def test_a_paused_turns_late_steps_stay_a_pause_and_the_fresh_run_that_loops_halts(
    nc: NATS, nats_url: str, tmp_path: Path
) -> None:
    publisher = EventPublisher(nats_url)
    try:
        async with Running(nc) as monitor:
            async with TurnObserver(publisher, CTX, "developer", TURN) as seen:
                agent = Agent(seen, monitor)
                await agent.call("pytest", "1 failed", error=True)
                # A pause at the fourth; the agent goes on while it travels (issue 24).
                for _ in range(8):
                    await agent.call("ls", "a.py")
                for _ in range(3):
                    await silent(agent)
                await agent.evaluated()
            # The fresh run the pause continues in: the same iteration, steps from 1 again.
            async with TurnObserver(publisher, CTX, "developer", "act-2") as seen:
                fresh = Agent(seen, monitor, ids=agent.ids)
                for _ in range(4):
                    await fresh.call("ls", "a.py")
                await fresh.evaluated()
    finally:
        await publisher.close()
    recorded = tmp_path / "stream.jsonl"
    recorded.write_bytes(b"".join(raw + b"\n" for raw in await stored(nc, MONITOR_STREAM)))
    (report,), errors = replay_files([recorded], RiskConfig(), lambda model: None)
    assert errors == []
    found = await signals(nc)
    assert all(isinstance(s.evidence, StepPatternEvidence) for s in found)
    live = [(s.reason, s.level, getattr(s.evidence, "event_id", "")) for s in found]
    replayed = [(f.rule, f.level, f.event_id) for f in report.firings]
    assert replayed == live
    assert live == [
        ("repeated_action", "pause", step_event_id(CTX, "developer", TURN, 10)),
        ("repeated_action", "halt", step_event_id(CTX, "developer", "act-2", 8)),
    ]
