"""The monitor over a real NATS server: KV state, dedupe, outbox recovery and dead letters."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from semspec.processors.risk_monitor.rules import apply_event
from semspec.processors.risk_monitor.state import FileIndex
from semspec.processors.risk_monitor.store import StateStore
from semspec.vocabulary.event_payloads import EscalationResolved
from semspec.vocabulary.events import MonitorEvent, UserSignal, event_from_json
from semspec.vocabulary.streams import ensure_bucket, ensure_streams
from semspec.vocabulary.subjects import (
    DEAD_LETTER_STREAM,
    DEAD_LETTER_SUBJECT,
    MONITOR_STREAM,
    SIGNAL_STREAM,
    monitor_subject,
    signal_intake_subject,
)
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.messages import EventContext, PublishBatch, PublishInput
from semspec.workflow.task.publisher import EventPublisher
from tests.support.monitor_events import loop_event
from tests.support.polling import until
from tests.support.running_monitor import TEST_RISK as RISK
from tests.support.running_monitor import Running


async def publish(nc: NATS, ev: MonitorEvent, msg_id: str | None = None) -> None:
    headers = {"Nats-Msg-Id": msg_id or ev.event_id}
    await nc.jetstream().publish(monitor_subject(ev.kind), ev.to_json(), headers=headers)


async def signals_on_stream(nc: NATS) -> list[UserSignal]:
    info = await nc.jetstream().stream_info(SIGNAL_STREAM)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        if info.state.messages == 0:
            break
        msg = await nc.jetstream().get_msg(SIGNAL_STREAM, seq)
        out.append(UserSignal.from_json(msg.data or b""))
    return out


async def test_a_signal_is_published_once_with_its_id_as_message_id(nc: NATS) -> None:
    async with Running(nc) as monitor:
        await publish(nc, loop_event("iteration", retries=4))
        await until(lambda: monitor.stats.events == 1, "event processed", 10.0)
    signals = await signals_on_stream(nc)
    assert [(s.task_id, s.level, s.reason) for s in signals] == [("t1", "escalate", "retry_limit")]
    commands = [a.command for a in signals[0].suggested_actions]
    assert "semspec task status t1" in commands
    assert any(c.startswith("semspec escalations resolve t1 --action retry") for c in commands)


async def test_a_duplicate_event_with_a_new_message_id_emits_nothing_new(nc: NATS) -> None:
    ev = loop_event("context", utilization=0.9)
    async with Running(nc) as monitor:
        await publish(nc, ev, msg_id="first")
        await publish(nc, ev, msg_id="second")  # past JetStream's dedupe: the monitor's job
        await until(lambda: monitor.stats.duplicates == 1, "duplicate seen", 10.0)
    assert [s.level for s in await signals_on_stream(nc)] == ["pause"]
    assert monitor.stats.events == 1


async def test_state_survives_a_restart_and_the_ladder_continues(nc: NATS) -> None:
    async with Running(nc) as monitor:
        await publish(nc, loop_event("context", utilization=0.9))
        await until(lambda: monitor.stats.events == 1, "first event", 10.0)
    async with Running(nc) as monitor:
        await publish(nc, loop_event("context", utilization=0.9))
        await until(lambda: monitor.stats.events == 1, "second event", 10.0)
    assert [s.level for s in await signals_on_stream(nc)] == ["pause", "halt"]
    stored = await StateStore(await ensure_bucket(nc.jetstream())).load_task("t1")
    assert stored is not None and stored.levels == {"context_pressure": "halt"}
    assert stored.outbox == []


async def test_an_outbox_left_by_a_crash_is_published_once_on_start(nc: NATS) -> None:
    # What a monitor killed after storing its state, before publishing, leaves behind.
    step = apply_event(loop_event("iteration", retries=4), {}, FileIndex(), RISK)
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
    step = apply_event(loop_event("iteration", retries=4), {}, FileIndex(), RISK)
    state = step.states["t1"]
    signal = UserSignal.from_json(step.emissions[0].signal.to_json())
    await nc.jetstream().publish(
        signal_intake_subject("escalate"),
        signal.to_json(),
        headers={"Nats-Msg-Id": signal.signal_id},
    )
    await StateStore(await ensure_bucket(nc.jetstream())).save_task(state)
    async with Running(nc) as monitor:
        pass
    assert (monitor.stats.signals, monitor.stats.signals_deduped) == (0, 1)
    assert len(await signals_on_stream(nc)) == 1


def _event_json(kind: str = "iteration", **changes: Any) -> bytes:
    """A valid event as JSON, with top-level fields (or ``data``) replaced by ``changes``."""
    body = json.loads(loop_event(kind).to_json())
    return json.dumps({**body, **changes}).encode()


def _with_data(kind: str, **changes: Any) -> bytes:
    body = json.loads(loop_event(kind).to_json())
    return json.dumps({**body, "data": {**body["data"], **changes}}).encode()


ITERATION = "agent.monitor.iteration"
HOSTILE: dict[str, tuple[str, bytes, str]] = {
    "not json": (ITERATION, b"{not json", "Invalid JSON"),
    "not utf-8": (ITERATION, b'{"event_id": "' + bytes([0xFF, 0xFE]) + b'"}', "Invalid JSON"),
    "a list": (ITERATION, b"[1, 2, 3]", "Input should be an object"),
    "nested too deep": (ITERATION, b"[" * 5_000, "recursion limit"),
    "unknown kind": (
        "agent.monitor.teleport",
        b'{"event_id": "x1", "kind": "teleport", "task_id": "t1"}',
        "does not match any of the expected tags",
    ),
    "no task": (ITERATION, b'{"event_id": "x2", "kind": "iteration"}', "task_id: Field required"),
    "retries as text": (ITERATION, _with_data("iteration", retries="4"), "data.retries: Input"),
    "negative retries": (ITERATION, _with_data("iteration", retries=-1), "data.retries: Input"),
    "an extra key": (
        ITERATION,
        _with_data("iteration", resolution="retry"),
        "data.resolution: Extra inputs are not permitted",
    ),
    "an extra envelope key": (ITERATION, _event_json(admin=True), "admin: Extra inputs"),
    "unknown verdict": (
        "agent.monitor.review",
        _with_data("review", verdict="lgtm"),
        "data.verdict: Input should be",
    ),
    "context window zero": (
        "agent.monitor.context",
        _with_data("context", window=0),
        "data.window: Input should be greater than 0",
    ),
    # What a worker before typed events published: dead letters naming the field that is off.
    "old escalation with event_key": (
        "agent.monitor.escalation",
        _with_data("escalation", event_key="t1-1"),
        "data.raised.event_key: Extra inputs",
    ),
    "old files without out_of_scope": (
        "agent.monitor.files",
        _event_json("files", data={"files": ["a.py"], "task_files": ["a.py"], "repo": ""}),
        "data.out_of_scope: Field required",
    ),
}


@pytest.mark.parametrize(("subject", "payload", "error"), HOSTILE.values(), ids=list(HOSTILE))
async def test_bad_events_go_to_dead_letters_and_the_next_good_one_is_processed(
    nc: NATS, subject: str, payload: bytes, error: str
) -> None:
    js = nc.jetstream()
    async with Running(nc) as monitor:
        await js.publish(subject, payload)
        await publish(nc, loop_event("iteration", retries=4))
        await until(lambda: monitor.stats.events == 1, "good event processed", 10.0)
    assert monitor.stats.dead_letters == 1 and monitor.stats.failed_batches == 0
    dead = await js.get_msg(DEAD_LETTER_STREAM, subject=DEAD_LETTER_SUBJECT, seq=None)
    assert dead.data == payload
    assert dead.headers is not None
    assert dead.headers["Semspec-Original-Subject"] == subject
    assert error in dead.headers["Semspec-Error"]
    assert [s.reason for s in await signals_on_stream(nc)] == ["retry_limit"]
    for _ in range(200):  # the server applies acks apart from the API that reports them
        info = await js.consumer_info(MONITOR_STREAM, "risk-monitor")
        if info.num_ack_pending == 0 and info.num_pending == 0:
            break
        await asyncio.sleep(0.025)
    assert info.num_ack_pending == 0 and info.num_pending == 0


async def test_an_event_whose_kind_differs_from_its_subject_is_dead_lettered(nc: NATS) -> None:
    ev = loop_event("iteration", retries=9)
    async with Running(nc) as monitor:
        await nc.jetstream().publish(monitor_subject("gate"), ev.to_json())
        await until(lambda: monitor.stats.dead_letters == 1, "dead letter", 10.0)
    assert monitor.stats.events == 0


async def test_conflicting_tasks_are_both_halted_and_finishing_clears_the_index(nc: NATS) -> None:
    async with Running(nc) as monitor:
        await publish(nc, loop_event("files", task="a", files=["x.py"]))
        await publish(nc, loop_event("files", task="b", files=["x.py"]))
        await publish(nc, loop_event("finished", task="a", outcome="approved"))
        await until(lambda: monitor.stats.events == 3, "three events", 10.0)
    halted = sorted((s.task_id, s.level) for s in await signals_on_stream(nc))
    assert halted == [("a", "halt"), ("b", "halt")]
    index = (await StateStore(await ensure_bucket(nc.jetstream())).scan()).index
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


async def test_a_humans_answer_sent_by_the_loop_starts_a_new_episode_in_the_monitor(
    nc: NATS, nats_url: str
) -> None:
    publisher = EventPublisher(nats_url)
    loop = TaskActivities(publisher)
    ctx = EventContext(
        task_id="t1", plan_id=None, workflow_id=task_workflow_id("t1"), run_id="r1", iteration=2
    )
    # Exactly what the workflow hands the publish activity once a human answered (workflows.py).
    answer = {
        "resolved": True,
        "action": "retry",
        "extra_retries": 0,
        "escalation_id": "t1-1",
        "event_key": "t1-1-resolved",
    }
    try:
        async with Running(nc) as monitor:
            await publish(nc, loop_event("iteration", retries=4))
            await until(lambda: monitor.stats.events == 1, "first retry limit", 10.0)
            batch = PublishBatch([PublishInput(ctx, "escalation", answer)])
            assert (await loop.publish_events(batch)).sent == 1
            await until(lambda: monitor.stats.events == 2, "the answer", 10.0)
            await publish(nc, loop_event("iteration", retries=4))
            await until(lambda: monitor.stats.events == 3, "the retry limit again", 10.0)
    finally:
        await publisher.close()
    sent = await nc.jetstream().get_msg(
        MONITOR_STREAM, subject="agent.monitor.escalation", seq=None
    )
    event = event_from_json(sent.data or b"")
    assert event.kind == "escalation" and isinstance(event.data, EscalationResolved)
    first, again = await signals_on_stream(nc)
    assert (first.reason, again.reason) == ("retry_limit", "retry_limit")
    assert first.signal_id != again.signal_id
    stored = await StateStore(await ensure_bucket(nc.jetstream())).load_task("t1")
    assert stored is not None and stored.episode == 1
