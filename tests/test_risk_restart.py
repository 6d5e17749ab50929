"""Kill the monitor process mid-stream and start another: nothing lost, nothing signalled twice."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS
from temporalio.client import Client

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.rules import apply_event, related_tasks
from semspec.processors.risk_monitor.state import FileIndex, TaskState
from semspec.processors.risk_monitor.store import StateStore
from semspec.processors.risk_monitor.streams import (
    CONSUMER,
    ensure_bucket,
)
from semspec.services.presence import ready_file
from semspec.vocabulary.events import MonitorEvent, UserSignal
from semspec.vocabulary.subjects import (
    MONITOR_STREAM,
    SIGNAL_STREAM,
    monitor_subject,
)
from tests.support.monitor_events import loop_event

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


def expected_signal_ids(events: list[MonitorEvent], risk: RiskConfig) -> set[str]:
    states: dict[str, TaskState] = {}
    index = FileIndex()
    ids: set[str] = set()
    for ev in events:
        related = related_tasks(ev, index)
        step = apply_event(ev, {t: states[t] for t in related if t in states}, index, risk)
        states.update(step.states)
        index = step.index
        ids.update(e.signal.signal_id for e in step.emissions if e.published)
    return ids


def start_monitor(repo: Path, nats_url: str, temporal_address: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SEMSPEC_SERVICES__NATS__URL": nats_url,
        "SEMSPEC_SERVICES__TEMPORAL__ADDRESS": temporal_address,
        "SEMSPEC_RISK__ACK_WAIT_S": "1",
        "SEMSPEC_RISK__BATCH_SIZE": "8",
        "SEMSPEC_LOG_FORMAT": "json",
    }
    log = (repo / "monitor.log").open("ab")
    try:
        argv = [sys.executable, "-m", "semspec", "monitor", "--repo", str(repo)]
        return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    finally:
        log.close()


async def wait_ready(repo: Path, proc: subprocess.Popen[bytes]) -> None:
    marker = ready_file(repo / ".semspec" / "run", "monitor", proc.pid)
    for _ in range(600):
        if marker.exists():
            return
        assert proc.poll() is None, (repo / "monitor.log").read_text()
        await asyncio.sleep(0.05)
    raise AssertionError("monitor never became ready")


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
    assert set(published) == expected_signal_ids(events, RiskConfig())
