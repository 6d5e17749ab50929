"""Look at what the risk monitor of a running stack did: is it idle, which signals went out.

A scenario that asserts the monitor said nothing must first know that the monitor has read
every event; ``wait_until_monitor_idle`` waits until its durable consumer has nothing pending
and nothing unacknowledged.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import nats
from nats.js import JetStreamContext

from semspec.vocabulary.streams import CONSUMER
from semspec.vocabulary.subjects import MONITOR_STREAM, SIGNAL_STREAM, SIGNAL_SUBJECTS


def wait_until_monitor_idle(nats_url: str, timeout_s: float = 30.0) -> None:
    """Wait (bounded) until the monitor has read and acknowledged every published event."""

    async def backlog() -> int:
        nc = await nats.connect(nats_url, connect_timeout=2)
        try:
            info = await nc.jetstream().consumer_info(MONITOR_STREAM, CONSUMER)
            return int(info.num_pending or 0) + int(info.num_ack_pending or 0)
        finally:
            await nc.close()

    deadline = time.monotonic() + timeout_s
    while (left := asyncio.run(backlog())) > 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"the risk monitor still has {left} events to read")
        time.sleep(0.2)


def signals_for(nats_url: str, task_id: str) -> list[dict[str, Any]]:
    """Every user signal (any level) published for ``task_id``, oldest first."""
    return messages_for(nats_url, SIGNAL_SUBJECTS, task_id)


def stream_of(subject: str) -> str:
    """The stream storing ``subject``: JetStream finds a stream by the subjects it takes, and the
    signal stream takes ``semspec.signal.>`` but stores (and republishes) ``user.signal.>``."""
    return SIGNAL_STREAM if subject.startswith("user.signal.") else MONITOR_STREAM


async def stream_messages(js: JetStreamContext, subject: str, task_id: str) -> list[dict[str, Any]]:
    """Every message on the stream ``subject`` (e.g. ``agent.monitor.review``) for ``task_id``,
    oldest first: read until the stream has been quiet for half a second."""
    sub = await js.subscribe(subject, stream=stream_of(subject), ordered_consumer=True)
    found: list[dict[str, Any]] = []
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=0.5)
            except Exception:
                break
            body = json.loads(msg.data)
            if body.get("task_id") == task_id:
                found.append(body)
    finally:
        await sub.unsubscribe()
    return found


def messages_for(nats_url: str, subject: str, task_id: str) -> list[dict[str, Any]]:
    """``stream_messages`` from a connection of its own, for tests outside an event loop."""

    async def collect() -> list[dict[str, Any]]:
        nc = await nats.connect(nats_url, connect_timeout=2)
        try:
            return await stream_messages(nc.jetstream(), subject, task_id)
        finally:
            await nc.close()

    return asyncio.run(collect())
