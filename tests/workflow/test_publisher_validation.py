"""The task loop refuses to publish an event or signal that fails its model, and goes on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError

from semspec.vocabulary.events import UserSignal, event_from_json
from semspec.vocabulary.subjects import MONITOR_STREAM, SIGNAL_STREAM
from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.messages import EventContext, PublishBatch, PublishInput
from semspec.workflow.task.publisher import EventPublisher
from tests.support.monitor_events import RAISED

CTX = EventContext(task_id="t1", plan_id=None, workflow_id="task-t1", run_id="r1", iteration=3)


@pytest.fixture
async def publisher(nats_url: str) -> AsyncIterator[EventPublisher]:
    publisher = EventPublisher(nats_url)
    try:
        yield publisher
    finally:
        await publisher.close()


async def stored(nc: NATS, stream: str) -> list[bytes]:
    """Every message in ``stream`` (none when the stream was never made)."""
    js = nc.jetstream()
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        return []
    first, last = info.state.first_seq, info.state.last_seq
    if not info.state.messages:
        return []
    return [(await js.get_msg(stream, seq)).data or b"" for seq in range(first, last + 1)]


async def publish(
    publisher: EventPublisher, kind: str, data: dict[str, Any], level: str | None = None
) -> int:
    step = TaskActivities(publisher)
    event = PublishInput(CTX, kind, data, level, "budget_exhausted", "?")
    result = await step.publish_events(PublishBatch([event]))
    assert result.sent == 1  # refused or acknowledged, it leaves the outbox
    return result.refused


async def test_an_invalid_payload_is_refused_counted_and_the_next_event_goes_out(
    nc: NATS, publisher: EventPublisher
) -> None:
    assert await publish(publisher, "iteration", {"phase": "developer", "retries": "4"}) == 1
    assert publisher.refused == 1
    assert await stored(nc, MONITOR_STREAM) == []
    assert await publish(publisher, "iteration", {"phase": "developer", "retries": 4}) == 0
    [sent] = await stored(nc, MONITOR_STREAM)
    event = event_from_json(sent)
    assert event.kind == "iteration" and event.data.retries == 4


async def test_an_unknown_kind_is_refused(nc: NATS, publisher: EventPublisher) -> None:
    assert await publish(publisher, "teleport", {}) == 1
    assert publisher.refused == 1


async def test_an_escalation_goes_out_as_an_event_and_a_signal_without_its_event_key(
    nc: NATS, publisher: EventPublisher
) -> None:
    data = {**RAISED, "event_key": RAISED["escalation_id"]}
    assert await publish(publisher, "escalation", data, level="escalate") == 0
    [event] = [event_from_json(raw) for raw in await stored(nc, MONITOR_STREAM)]
    assert event.event_id == "task-t1/r1/3/escalation/t1-1"
    assert event.data.model_dump() == {
        **RAISED,
        "cost_usd": 0.0,
        "budget_usd": None,
        "max_retries": None,
        "unpriced_models": [],
    }
    [signal] = [UserSignal.from_json(raw) for raw in await stored(nc, SIGNAL_STREAM)]
    assert signal.evidence == event.data and signal.level == "escalate"
    assert any("resolve t1" in a.command for a in signal.suggested_actions)


async def test_a_bad_escalation_refuses_both_the_event_and_its_signal(
    nc: NATS, publisher: EventPublisher
) -> None:
    bad = {**RAISED, "source": "gremlins"}
    assert await publish(publisher, "escalation", bad, level="escalate") == 2
    assert publisher.refused == 2
    assert await stored(nc, SIGNAL_STREAM) == []
