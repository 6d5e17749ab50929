"""The monitor over a real NATS server: KV state, dedupe, outbox recovery and dead letters."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.processor import RiskMonitor
from semspec.processors.risk_monitor.rules import apply_event
from semspec.processors.risk_monitor.state import FileIndex
from semspec.processors.risk_monitor.store import StateStore
from semspec.processors.risk_monitor.streams import STATE_BUCKET, ensure_bucket, ensure_streams
from semspec.vocabulary.events import MonitorEvent, UserSignal
from semspec.vocabulary.subjects import (
    DEAD_LETTER_STREAM,
    DEAD_LETTER_SUBJECT,
    MONITOR_STREAM,
    SIGNAL_STREAM,
    monitor_subject,
)

RISK = RiskConfig(ack_wait_s=2.0)
_ids = itertools.count()


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NATS]:
    """A connection to a JetStream with none of the monitor's streams or state left over."""
    conn = await nats.connect(nats_url)
    js = conn.jetstream()
    for stream in (MONITOR_STREAM, SIGNAL_STREAM, DEAD_LETTER_STREAM, f"KV_{STATE_BUCKET}"):
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(stream)
    await ensure_streams(js, RISK)
    try:
        yield conn
    finally:
        await conn.close()


def make_event(
    kind: str, task: str = "t1", event_id: str | None = None, **data: Any
) -> MonitorEvent:
    return MonitorEvent(
        event_id=event_id or f"ev-{next(_ids)}",
        kind=kind,
        task_id=task,
        run_id="run",
        iteration=1,
        data=data,
        at="2026-01-01T00:00:00Z",
    )


async def publish(nc: NATS, ev: MonitorEvent, msg_id: str | None = None) -> None:
    headers = {"Nats-Msg-Id": msg_id or ev.event_id}
    await nc.jetstream().publish(monitor_subject(ev.kind), ev.to_json(), headers=headers)


async def eventually(check: Callable[[], bool], what: str) -> None:
    for _ in range(400):
        if check():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"never happened: {what}")


async def signals_on_stream(nc: NATS) -> list[UserSignal]:
    info = await nc.jetstream().stream_info(SIGNAL_STREAM)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        if info.state.messages == 0:
            break
        msg = await nc.jetstream().get_msg(SIGNAL_STREAM, seq)
        out.append(UserSignal.from_json(msg.data or b""))
    return out


class Running:
    """A monitor consuming in the background of the test."""

    def __init__(self, nc: NATS) -> None:
        self.monitor = RiskMonitor(nc, RISK)
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> RiskMonitor:
        await self.monitor.start()
        self.task = asyncio.create_task(self.monitor.run(self.stop, idle_wait=0.05))
        return self.monitor

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        assert self.task is not None
        await self.task


async def test_a_signal_is_published_once_with_its_id_as_message_id(nc: NATS) -> None:
    async with Running(nc) as monitor:
        await publish(nc, make_event("iteration", retries=4))
        await eventually(lambda: monitor.stats.events == 1, "event processed")
    signals = await signals_on_stream(nc)
    assert [(s.task_id, s.level, s.reason) for s in signals] == [("t1", "escalate", "retry_limit")]
    commands = [a.command for a in signals[0].suggested_actions]
    assert "semspec task status t1" in commands
    assert any(c.startswith("semspec escalations resolve t1 --action retry") for c in commands)


async def test_a_duplicate_event_with_a_new_message_id_emits_nothing_new(nc: NATS) -> None:
    ev = make_event("context", utilization=0.9)
    async with Running(nc) as monitor:
        await publish(nc, ev, msg_id="first")
        await publish(nc, ev, msg_id="second")  # past JetStream's dedupe: the monitor's job
        await eventually(lambda: monitor.stats.duplicates == 1, "duplicate seen")
    assert [s.level for s in await signals_on_stream(nc)] == ["pause"]
    assert monitor.stats.events == 1


async def test_state_survives_a_restart_and_the_ladder_continues(nc: NATS) -> None:
    async with Running(nc) as monitor:
        await publish(nc, make_event("context", utilization=0.9))
        await eventually(lambda: monitor.stats.events == 1, "first event")
    async with Running(nc) as monitor:
        await publish(nc, make_event("context", utilization=0.9))
        await eventually(lambda: monitor.stats.events == 1, "second event")
    assert [s.level for s in await signals_on_stream(nc)] == ["pause", "halt"]
    stored = await StateStore(await ensure_bucket(nc.jetstream())).load_task("t1")
    assert stored is not None and stored.levels == {"context_pressure": "halt"}
    assert stored.outbox == []


async def test_an_outbox_left_by_a_crash_is_published_once_on_start(nc: NATS) -> None:
    # What a monitor killed after storing its state, before publishing, leaves behind.
    step = apply_event(make_event("iteration", retries=4), {}, FileIndex(), RISK)
    store = StateStore(await ensure_bucket(nc.jetstream()))
    await store.save_task(step.states["t1"])
    async with Running(nc) as monitor:
        pass
    assert monitor.stats.signals == 1
    async with Running(nc) as monitor:
        pass
    assert monitor.stats.signals == 0
    assert [s.reason for s in await signals_on_stream(nc)] == ["retry_limit"]


async def test_a_signal_published_before_a_crash_is_not_published_again(nc: NATS) -> None:
    step = apply_event(make_event("iteration", retries=4), {}, FileIndex(), RISK)
    state = step.states["t1"]
    signal = UserSignal.from_json(step.emissions[0].signal.to_json())
    await nc.jetstream().publish(
        "user.signal.escalate", signal.to_json(), headers={"Nats-Msg-Id": signal.signal_id}
    )
    await StateStore(await ensure_bucket(nc.jetstream())).save_task(state)
    async with Running(nc) as monitor:
        pass
    assert (monitor.stats.signals, monitor.stats.signals_deduped) == (0, 1)
    assert len(await signals_on_stream(nc)) == 1


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"event_id": "x1", "kind": "teleport", "task_id": "t1"}', "unknown event kind"),
        (b'{"event_id": "x2", "kind": "iteration"}', "task_id"),
    ],
)
async def test_bad_events_go_to_dead_letters_and_the_next_good_one_is_processed(
    nc: NATS, payload: bytes, error: str
) -> None:
    js = nc.jetstream()
    async with Running(nc) as monitor:
        await js.publish(monitor_subject("iteration"), payload)
        await publish(nc, make_event("iteration", retries=4))
        await eventually(lambda: monitor.stats.events == 1, "good event processed")
    assert monitor.stats.dead_letters == 1
    dead = await js.get_msg(DEAD_LETTER_STREAM, subject=DEAD_LETTER_SUBJECT, seq=None)
    assert dead.data == payload
    assert dead.headers is not None
    assert dead.headers["Semspec-Original-Subject"] == "agent.monitor.iteration"
    assert error in dead.headers["Semspec-Error"]
    assert [s.reason for s in await signals_on_stream(nc)] == ["retry_limit"]
    info = await js.consumer_info(MONITOR_STREAM, "risk-monitor")
    assert info.num_ack_pending == 0 and info.num_pending == 0


async def test_an_event_whose_kind_differs_from_its_subject_is_dead_lettered(nc: NATS) -> None:
    ev = make_event("iteration", retries=9)
    async with Running(nc) as monitor:
        await nc.jetstream().publish(monitor_subject("gate"), ev.to_json())
        await eventually(lambda: monitor.stats.dead_letters == 1, "dead letter")
    assert monitor.stats.events == 0


async def test_conflicting_tasks_are_both_halted_and_finishing_clears_the_index(nc: NATS) -> None:
    async with Running(nc) as monitor:
        await publish(nc, make_event("files", task="a", files=["x.py"]))
        await publish(nc, make_event("files", task="b", files=["x.py"]))
        await publish(nc, make_event("finished", task="a", outcome="approved"))
        await eventually(lambda: monitor.stats.events == 3, "three events")
    halted = sorted((s.task_id, s.level) for s in await signals_on_stream(nc))
    assert halted == [("a", "halt"), ("b", "halt")]
    index = await StateStore(await ensure_bucket(nc.jetstream())).load_index()
    assert index.files == {"x.py": ["b"]}


async def test_a_signal_stream_made_by_someone_else_gets_the_longer_dedupe_window(
    nc: NATS,
) -> None:
    js = nc.jetstream()
    await js.delete_stream(SIGNAL_STREAM)
    await js.add_stream(name=SIGNAL_STREAM, subjects=["user.signal.>"], duplicate_window=120)
    await ensure_streams(js, RISK)
    info = await js.stream_info(SIGNAL_STREAM)
    assert info.config.duplicate_window == RISK.signal_dedupe_window_s
