"""Read back what the task loop published: every stored event of one task, in stream order."""

from __future__ import annotations

import nats

from semspec.vocabulary.events import MonitorEvent, event_from_json


async def task_events(url: str, task_id: str) -> list[MonitorEvent]:
    """Every event of ``task_id`` in the monitor stream (``agent.monitor.>``), oldest first."""
    nc = await nats.connect(url, connect_timeout=2)
    found: list[MonitorEvent] = []
    try:
        sub = await nc.jetstream().subscribe("agent.monitor.>", ordered_consumer=True)
        while True:
            try:
                msg = await sub.next_msg(timeout=1.0)
            except nats.errors.TimeoutError:
                break
            event = event_from_json(msg.data)
            if event.task_id == task_id:
                found.append(event)
    finally:
        await nc.close()
    return found
