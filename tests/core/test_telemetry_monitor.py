"""The risk monitor's metrics after real events on a real NATS server: events by kind (each once,
however often delivered), signals by level, dollars by model, tasks by state and the consumer's
lag, read with the OpenTelemetry SDK's in-memory metric reader."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from nats.aio.client import Client as NATS
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from semspec.core.telemetry.otel import OtelTelemetry
from semspec.processors.risk_monitor.metrics import MonitorMeter
from semspec.processors.risk_monitor.processor import RiskMonitor
from semspec.vocabulary.events import MonitorEvent, monitor_event
from semspec.vocabulary.streams import ensure_consumer
from semspec.vocabulary.subjects import monitor_subject
from tests.support.monitor_events import loop_event, payload
from tests.support.running_monitor import TEST_RISK

AT = "2026-01-01T00:00:00Z"


@dataclass
class Metered:
    """A monitor whose meter records into ``reader``."""

    monitor: RiskMonitor
    meter: MonitorMeter
    reader: InMemoryMetricReader

    def points(self, name: str) -> dict[tuple[tuple[str, object], ...], float]:
        """The data points of metric ``name`` by their sorted attributes."""
        data = self.reader.get_metrics_data()
        assert data is not None
        found: dict[tuple[tuple[str, object], ...], float] = {}
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        assert isinstance(point, NumberDataPoint)
                        found[tuple(sorted((point.attributes or {}).items()))] = point.value
        return found


@pytest.fixture
async def metered(nc: NATS) -> AsyncIterator[Metered]:
    reader = InMemoryMetricReader()
    telemetry = OtelTelemetry.in_memory(InMemorySpanExporter(), reader)
    meter = MonitorMeter(telemetry.monitor_metrics())
    yield Metered(RiskMonitor(nc, TEST_RISK, meter=meter), meter, reader)
    telemetry.shutdown()


async def publish(nc: NATS, ev: MonitorEvent, msg_id: str | None = None) -> None:
    headers = {"Nats-Msg-Id": msg_id or ev.event_id}
    await nc.jetstream().publish(monitor_subject(ev.kind), ev.to_json(), headers=headers)


def model_step(event_id: str, cost_usd: float) -> MonitorEvent:
    """A model call of task t1's developer on model m1 that cost ``cost_usd``."""
    data = {**payload("step"), "kind": "model", "tool": None, "model": "m1", "cost_usd": cost_usd}
    return monitor_event(
        "step", data, event_id=event_id, task_id="t1", run_id="run", iteration=1, at=AT
    )


async def consume(monitor: RiskMonitor, events: int) -> None:
    """Run ``monitor`` until it has evaluated ``events`` new events (bounded), then stop it."""
    stop = asyncio.Event()
    await monitor.start()
    running = asyncio.create_task(monitor.run(stop, idle_wait=0.05))
    try:
        for _ in range(400):
            if monitor.stats.events + monitor.stats.duplicates >= events:
                return
            await asyncio.sleep(0.025)
        raise AssertionError(f"the monitor evaluated {monitor.stats.events} of {events} events")
    finally:
        stop.set()
        await running


async def test_the_monitor_counts_events_signals_dollars_and_tasks_by_state(
    nc: NATS, metered: Metered
) -> None:
    step = model_step("s1", 0.25)
    events = [
        loop_event("iteration", "t1", retries=4),  # past the retry limit: escalate
        step,
        model_step("s2", 0.5),
        loop_event("context", "t1", utilization=0.9),  # over the pressure threshold: pause
        loop_event("iteration", "t2"),
        loop_event("finished", "t2", outcome="approved"),
    ]
    await ensure_consumer(nc.jetstream(), TEST_RISK)  # made by the monitor's start, usually
    for ev in events:
        await publish(nc, ev)
    await publish(nc, step, msg_id="again")  # past JetStream's dedupe: the monitor drops it
    lag_before = await metered.meter.measure_lag(nc.jetstream())

    await consume(metered.monitor, len(events) + 1)

    assert lag_before == len(events) + 1
    assert await metered.meter.measure_lag(nc.jetstream()) == 0
    assert metered.points("semspec.monitor.consumer.lag") == {(): 0}
    assert metered.points("semspec.monitor.events") == {
        (("kind", "iteration"),): 2,
        (("kind", "step"),): 2,
        (("kind", "context"),): 1,
        (("kind", "finished"),): 1,
    }
    assert metered.points("semspec.monitor.signals") == {
        (("level", "escalate"), ("reason", "retry_limit")): 1,
        (("level", "pause"), ("reason", "context_pressure")): 1,
    }
    assert metered.points("semspec.monitor.cost") == {(("gen_ai.request.model", "m1"),): 0.75}
    tasks = {key[0][1]: value for key, value in metered.points("semspec.monitor.tasks").items()}
    assert tasks == {"running": 0, "paused": 1, "approved": 1}
