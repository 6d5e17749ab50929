"""The console's no-monitor banner read from a real NATS (issue 26): the lease bucket says who
is active, the monitor consumer's own figures say whether events are consumed. A monitor that
holds the lease while events wait unacknowledged past ``stall_s`` is named as stalled; no
holder at all is named as none; consumed events leave no banner."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS

from semspec.console.page_status import read_monitor
from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.lease import LEASE_KEY, LeaseHolder
from semspec.vocabulary.streams import CONSUMER, ensure_consumer, ensure_lease_bucket
from semspec.vocabulary.subjects import MONITOR_STREAM, monitor_subject
from tests.support.monitor_events import loop_event

STALL_S = 0.5


async def publish_events(nc: NATS, count: int) -> None:
    js = nc.jetstream()
    for n in range(count):
        event = loop_event("iteration", "banner-task", iteration=n + 1)
        await js.publish(monitor_subject(event.kind), event.to_json())


async def test_no_lease_holder_is_named_as_no_monitor(nc: NATS) -> None:
    js = nc.jetstream()
    await ensure_consumer(js, RiskConfig())
    assert "no risk monitor holds the lease" in await read_monitor(js, STALL_S)


async def test_a_holder_that_lets_events_wait_is_named_as_stalled(nc: NATS) -> None:
    js = nc.jetstream()
    await ensure_consumer(js, RiskConfig())
    lease = await ensure_lease_bucket(js, ttl_s=60)
    await lease.put(LEASE_KEY, LeaseHolder("monitor-7@host", "token").to_json())
    assert await read_monitor(js, STALL_S) == ""  # nothing waits yet
    await publish_events(nc, 3)
    await asyncio.sleep(STALL_S * 3)  # nobody consumes
    said = await read_monitor(js, STALL_S)
    assert said.startswith("the active monitor (monitor-7@host): 3 events waiting"), said
    assert "risk.leader.stall_s: 0.5" in said
    # Consumed: the banner goes.
    sub = await js.pull_subscribe_bind(CONSUMER, MONITOR_STREAM)
    for message in await sub.fetch(3, timeout=5):
        await message.ack_sync()
    assert await read_monitor(js, STALL_S) == ""
