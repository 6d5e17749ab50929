"""Kill the monitor process mid-stream and start another: nothing lost, nothing signalled twice."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS
from temporalio.client import Client

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.store import StateStore
from semspec.vocabulary.events import MonitorEvent, UserSignal
from semspec.vocabulary.streams import (
    CONSUMER,
    ensure_bucket,
)
from semspec.vocabulary.subjects import (
    MONITOR_STREAM,
    SIGNAL_STREAM,
    monitor_subject,
)
from tests.support.monitor_events import loop_event, one_monitor
from tests.support.running_monitor import monitor_process, wait_ready

TASKS = 40
EVENTS_PER_TASK = 60


def batch() -> list[MonitorEvent]:
    """Events whose signals do not depend on the order they are seen in (redelivery reorders)."""
    events = []
    for n in range(EVENTS_PER_TASK):
        for t in range(TASKS):
            task = f"task-{t}"
            choices: list[tuple[str, dict[str, Any]]] = [
                ("context", {"utilization": 0.9}),
                ("iteration", {"retries": 4 + n}),
                (
                    "files",
                    {"files": [f"{task}.py", f"{task}-{n}.py"], "task_files": [f"{task}.py"]},
                ),
            ]
            kind, data = choices[n % 3]
            events.append(loop_event(kind, task, event_id=f"{task}-e{n}", iteration=n, **data))
    return events


def start_monitor(repo: Path, nats_url: str, temporal_address: str) -> subprocess.Popen[bytes]:
    env = {"SEMSPEC_RISK__ACK_WAIT_S": "1", "SEMSPEC_RISK__BATCH_SIZE": "8"}
    return monitor_process(repo, nats_url, temporal_address, env)


async def test_a_killed_monitor_loses_no_event_and_repeats_no_signal(
    nc: NATS, nats_url: str, temporal_client: Client, tmp_path: Path
) -> None:
    address = temporal_client.service_client.config.target_host
    js = nc.jetstream()
    events = batch()
    for ev in events:
        await js.publish(
            monitor_subject(ev.kind), ev.to_json(), headers={"Nats-Msg-Id": ev.event_id}
        )

    first = start_monitor(tmp_path, nats_url, address)
    try:
        await wait_ready(tmp_path, first)
        for _ in range(2000):
            info = await js.consumer_info(MONITOR_STREAM, CONSUMER)
            if info.ack_floor is not None and (info.ack_floor.stream_seq or 0) >= len(events) // 3:
                break
            await asyncio.sleep(0.005)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    info = await js.consumer_info(MONITOR_STREAM, CONSUMER)
    assert (info.num_pending or 0) + (info.num_ack_pending or 0) > 0, "killed after the end"

    second = start_monitor(tmp_path, nats_url, address)
    try:
        await wait_ready(tmp_path, second)
        for _ in range(1200):
            info = await js.consumer_info(MONITOR_STREAM, CONSUMER)
            if info.num_pending == 0 and info.num_ack_pending == 0:
                break
            await asyncio.sleep(0.05)
        assert info.num_pending == 0 and info.num_ack_pending == 0
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=30) == 0, (tmp_path / "monitor.log").read_text()[-2000:]

    store = StateStore(await ensure_bucket(js))
    states = {s.task_id: s for s in await store.task_states()}
    assert len(states) == TASKS
    assert {s.events for s in states.values()} == {EVENTS_PER_TASK}, "an event was lost or doubled"
    assert all(s.outbox == [] for s in states.values())

    stream = await js.stream_info(SIGNAL_STREAM)
    published = []
    for seq in range(stream.state.first_seq, stream.state.last_seq + 1):
        msg = await js.get_msg(SIGNAL_STREAM, seq)
        published.append(UserSignal.from_json(msg.data or b"").signal_id)
    assert not [sid for sid, n in Counter(published).items() if n > 1], "a signal was repeated"
    assert set(published) == one_monitor(events, RiskConfig())[0]
