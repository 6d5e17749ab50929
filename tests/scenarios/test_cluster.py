"""Scenarios on a 3-node NATS cluster (``services.nats.replicas: 3``) with a node killed and
restarted while work goes on.

- Tasks run through the CLI on a stack whose NATS is the cluster; the node leading the monitor
  stream dies mid-task and comes back. Every task is approved, none dropped an event, and every
  loop event of every task is in the stream once.
- 10,000 loop events flood the monitor stream while a node is killed and restarted, with one,
  two or three monitors running. Every event is processed and nothing dead-lettered; the
  signals are exactly those the rules give for the stored events (each once in the signal
  stream and once for a plain subscriber on ``user.signal.>``), and the task states are the
  ones a single monitor computes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext

from semspec.core.config.models import LeaderConfig, RiskConfig
from semspec.processors.risk_monitor.processor import RiskMonitor
from semspec.processors.risk_monitor.state import TaskState
from semspec.processors.risk_monitor.store import StateStore
from semspec.vocabulary.events import MonitorEvent, UserSignal, event_from_json
from semspec.vocabulary.streams import (
    CONSUMER,
    ensure_bucket,
)
from semspec.vocabulary.subjects import (
    DEAD_LETTER_STREAM,
    MONITOR_STREAM,
    SIGNAL_STREAM,
    SIGNAL_SUBJECTS,
    monitor_subject,
)
from tests.support.mdurl_project import (
    FORMAT_PY,
    TEST_SUITE,
    original,
    package_sources,
    pytest_gate,
    sleep_gate,
)
from tests.support.monitor_events import loop_event, one_monitor
from tests.support.monitor_probe import wait_until_monitor_idle
from tests.support.monitor_reset import fresh_monitor_streams
from tests.support.nats_cluster import NatsCluster
from tests.support.scenario_tasks import new_id, submit
from tests.support.stack import running_stack, sample_config
from tests.support.stream_reads import task_events

pytestmark = pytest.mark.cluster

REPLICAS = 3
GATE_S = 3.0
"""A gate that only waits, so the node dies while the tasks are in their gates."""
TASK_FILES = ("mdurl/_encode.py", "mdurl/_decode.py", "mdurl/_parse.py")
"""One file per task under the kill: no two tasks touch one file (that would halt both)."""


def node_url(cluster: NatsCluster, i: int) -> str:
    """Node ``i``'s URL with the cluster's credentials in it, for the URL-taking test helpers."""
    return cluster.urls[i].replace("://", f"://{cluster.user}:{cluster.password}@", 1)


def changed(path: str, revision: int) -> str:
    """``path`` of the project plus a function of its own: a change the test suite accepts."""
    return original(path) + f"\n\ndef revision_{revision}():\n    return {revision}\n"


def two_iterations(path: str) -> list[dict[str, Any]]:
    """The developer changes ``path``, the reviewer asks for more, the second change passes."""
    ask = {"verdict": "request_changes", "findings": [{"message": "add a second revision"}]}
    approve = {"verdict": "approve", "summary": "meets the criteria"}
    return [
        {"developer": {"write": {path: changed(path, 1)}}, "reviewer": ask},
        {"developer": {"write": {path: changed(path, 2)}}, "reviewer": approve},
    ]


def event_keys(events: list[MonitorEvent]) -> list[str]:
    """Each event's id without the task's workflow and run ids: iteration, kind and key.

    A step's key names its turn by the activity's id, which counts every activity the task ran
    (a publish retried while a node was down adds one): the key keeps role and step number.
    """
    keys = []
    for ev in events:
        key = ev.event_id.split("/", 2)[2]
        if ev.kind == "step":
            iteration, kind, role, _turn, number = key.split("/")
            key = "/".join((iteration, kind, role, number))
        keys.append(key)
    return keys


def outbox_drained(status: dict[str, Any]) -> bool:
    """Whether the task has an outcome and its outbox is empty (its workflow has returned)."""
    return bool(status["outcome"]) and status["events_pending"] == 0


async def stream_leader(cluster: NatsCluster, stream: str) -> int:
    """The index of the node that leads ``stream``."""
    nc = await nats.connect(**cluster.options())
    try:
        info = await nc.jetstream().stream_info(stream)
    finally:
        await nc.close()
    assert info.config.num_replicas == REPLICAS, "the stack did not apply services.nats.replicas"
    assert info.cluster is not None and info.cluster.leader is not None
    return next(i for i, n in enumerate(cluster.nodes) if n.name == info.cluster.leader)


def test_tasks_on_a_cluster_whose_stream_leader_dies_are_approved_with_every_event_once(
    nats_cluster: NatsCluster, tmp_path: Path
) -> None:
    nats_section = {
        "url": nats_cluster.urls,
        "user": nats_cluster.user,
        "password": nats_cluster.password,
        "replicas": REPLICAS,
    }
    config = sample_config(
        [sleep_gate(GATE_S), pytest_gate()],
        services={"nats": nats_section, "temporal": {"port": 0, "ui_port": 0}},
        loop={"max_retries": 2},
    )
    project = {**package_sources(), "tests/test_mdurl.py": TEST_SUITE}
    with running_stack(tmp_path, config, project) as stack:
        repo = stack.repo
        # A task on the healthy cluster: the events a task of this script sends.
        control = new_id("control")
        code, _ = submit(stack, repo, control, [FORMAT_PY], two_iterations(FORMAT_PY))
        assert code == 0
        wanted = event_keys(asyncio.run(task_events(node_url(nats_cluster, 0), control)))
        # An agent's steps, and a step's own events (files, gate, ...), come from its activity,
        # so they may precede the loop's iteration event (docs/operations.md); finished is last.
        loop_keys = [key for key in wanted if "/step/" not in key]
        assert loop_keys[0].endswith(("/iteration", "/files")), wanted
        assert wanted[-1].endswith("/finished"), wanted

        tasks = [new_id(f"cluster-{n}") for n in range(len(TASK_FILES))]
        for task_id, path in zip(tasks, TASK_FILES, strict=True):
            code, _ = submit(stack, repo, task_id, [path], two_iterations(path), wait=False)
            assert code == 0
        stack.wait_status(tasks[-1], lambda s: bool(s["log"]), timeout_s=60)
        killed = asyncio.run(stream_leader(nats_cluster, MONITOR_STREAM))
        nats_cluster.kill(killed)
        try:
            # The tasks go on without the node: at least one finishes its first review.
            stack.wait_status(tasks[0], lambda s: s["retries"] >= 1, timeout_s=60)
        finally:
            nats_cluster.restart(killed)
        alive = (killed + 1) % len(nats_cluster.nodes)
        for task_id in tasks:
            # The outcome shows at once; the outbox may still be waiting out its backoff.
            status = stack.wait_status(task_id, outbox_drained, timeout_s=120)
            assert status["outcome"] == "approved", status
            assert (status["events_dropped"], status["events_pending"]) == (0, 0)
            got = event_keys(asyncio.run(task_events(node_url(nats_cluster, alive), task_id)))
            assert Counter(got) == Counter(wanted), f"{task_id}: events lost or doubled"
            assert got[-1].endswith("/finished")
        wait_until_monitor_idle(node_url(nats_cluster, alive), timeout_s=60)


FLOOD = 10_000
FLOOD_TASKS = 200
"""Tasks of the flood, in pairs that touch one file: every task is escalated and halted once."""
RETRY_EVENTS = 5
KILL_AT, RESTART_AT = 3_000, 6_000
"""Events published before the node is killed, and before it is started again."""
MIN_DOWN_S = 3.0
WINDOW = 200
"""Events published at once: the flood's pace, with each event's ack awaited."""
PUBLISH_BOUND_S = 60.0
"""How long a publisher retries one event (through the node's death and the new election)."""
FLOOD_RISK = RiskConfig(ack_wait_s=3.0, leader=LeaderConfig(lease_ttl_s=3.0, poll_s=0.2))
"""Redeliveries and a lapsed lease come within seconds: the kill puts both to the test."""


def files_event(task: str, path: str) -> MonitorEvent:
    return loop_event(
        "files", task, event_id=f"{task}-files", files=[path], task_files=[path], repo="project"
    )


def flood_events() -> list[MonitorEvent]:
    """10,000 events: each task's retries climb past the threshold (one escalation each); the
    pairs' files events halt both tasks of each pair; gate results fill the rest. The lists are
    interleaved at random but each keeps its own order, so a task's retries still climb and
    every pair's second files event comes after its first."""
    tasks = [f"flood-{t}" for t in range(FLOOD_TASKS)]
    firsts = [files_event(tasks[t], f"{tasks[t]}.py") for t in range(0, FLOOD_TASKS, 2)]
    seconds = [files_event(tasks[t + 1], f"{tasks[t]}.py") for t in range(0, FLOOD_TASKS, 2)]
    retries = [
        loop_event("iteration", task, event_id=f"{task}-r{n}", retries=n)
        for n in range(1, RETRY_EVENTS + 1)
        for task in tasks
    ]
    quiet = FLOOD - len(firsts) - len(seconds) - len(retries)
    gates = [loop_event("gate", tasks[n % FLOOD_TASKS], event_id=f"gate-{n}") for n in range(quiet)]
    rng = random.Random(17)
    queues = [retries, seconds, gates]
    merged = list(firsts)
    while any(queues):
        queue = rng.choices(queues, weights=[len(q) for q in queues])[0]
        merged.append(queue.pop(0))
    return merged


def comparable(state: TaskState) -> dict[str, Any]:
    """A stored state without what differs between runs (when events were stored) and what
    only a monitor that crashed mid-batch holds (its outbox)."""
    found: dict[str, Any] = json.loads(replace(state, received_at=0.0, outbox=[]).to_json())
    return found


async def connect(cluster: NatsCluster, *servers: str) -> NATS:
    """A client of ``servers`` (every node by default) that reconnects at once and for ever."""
    options = {**cluster.options(), "servers": list(servers) or cluster.urls}
    return await nats.connect(**options, reconnect_time_wait=0.2, max_reconnect_attempts=-1)


async def publish_once(js: JetStreamContext, ev: MonitorEvent) -> None:
    """Publish ``ev`` until the stream acknowledges it; a retry after a lost ack is stored once
    (``Nats-Msg-Id``)."""
    deadline = time.monotonic() + PUBLISH_BOUND_S
    headers = {"Nats-Msg-Id": ev.event_id}
    while True:
        try:
            await js.publish(monitor_subject(ev.kind), ev.to_json(), timeout=2, headers=headers)
            return
        except NatsError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def flood_with_a_node_down(
    cluster: NatsCluster, js: JetStreamContext, events: list[MonitorEvent], node: int
) -> None:
    """Publish ``events``; kill ``node`` after ``KILL_AT`` and start it again after
    ``RESTART_AT`` (and ``MIN_DOWN_S``), while the publishing goes on."""
    killed_at = 0.0
    restarting: asyncio.Task[None] | None = None
    for start in range(0, len(events), WINDOW):
        await asyncio.gather(*(publish_once(js, ev) for ev in events[start : start + WINDOW]))
        published = start + WINDOW
        if published >= KILL_AT and not killed_at:
            await asyncio.to_thread(cluster.kill, node)
            killed_at = time.monotonic()
        down = time.monotonic() - killed_at
        if published >= RESTART_AT and restarting is None and down >= MIN_DOWN_S:
            restarting = asyncio.create_task(asyncio.to_thread(cluster.restart, node))
    if restarting is None:
        await asyncio.sleep(max(0.0, MIN_DOWN_S - (time.monotonic() - killed_at)))
        restarting = asyncio.create_task(asyncio.to_thread(cluster.restart, node))
    await restarting


@contextlib.asynccontextmanager
async def monitors(conns: list[NATS]) -> AsyncIterator[list[RiskMonitor]]:
    """One risk monitor per connection, running until the block ends."""
    started = [RiskMonitor(nc, FLOOD_RISK, replicas=REPLICAS) for nc in conns]
    for monitor in started:
        await monitor.start()
    stop = asyncio.Event()
    runs = [asyncio.create_task(m.run(stop, idle_wait=0.05)) for m in started]
    try:
        yield started
    finally:
        stop.set()
        await asyncio.gather(*runs)


async def processed(js: JetStreamContext, count: int, timeout_s: float = 120.0) -> None:
    """Wait until the monitors' consumer has acknowledged all ``count`` events."""
    deadline = time.monotonic() + timeout_s
    left: tuple[int, int, int] | None = None
    while left != (0, 0, count):
        assert time.monotonic() < deadline, f"(pending, unacknowledged, ack floor): {left}"
        await asyncio.sleep(0.1)
        with contextlib.suppress(NatsError):
            info = await js.consumer_info(MONITOR_STREAM, CONSUMER, timeout=2)
            floor = info.ack_floor.stream_seq if info.ack_floor else 0
            left = (info.num_pending or 0, info.num_ack_pending or 0, floor or 0)


SETTLE_S = 30.0
"""How long a read of a stream waits for the cluster to settle after the restart: the restarted
node catches up and a stream whose leader it was may still be electing, so one request of the
JetStream API can go unanswered for its whole timeout."""


async def message_count(js: JetStreamContext, stream: str) -> int:
    """How many messages ``stream`` holds, asked again until the cluster answers."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            return (await js.stream_info(stream)).state.messages
        except NatsError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def stored(js: JetStreamContext, stream: str, subject: str) -> list[bytes]:
    """Every message of ``stream`` (on ``subject``), in stream order."""
    total = await message_count(js, stream)
    sub = await js.subscribe(subject, stream=stream, ordered_consumer=True)
    try:
        return [(await sub.next_msg(timeout=5)).data for _ in range(total)]
    finally:
        await sub.unsubscribe()


async def stored_states(js: JetStreamContext) -> dict[str, dict[str, Any]]:
    """The task states in the monitors' bucket, comparable."""
    store = StateStore(await ensure_bucket(js, replicas=REPLICAS))
    return {s.task_id: comparable(s) for s in await store.task_states()}


@pytest.mark.parametrize("count", [1, 2, 3])
async def test_a_flood_through_a_node_kill_gives_the_signals_and_states_of_one_clean_run(
    nats_cluster: NatsCluster, count: int
) -> None:
    events = flood_events()
    nc = await connect(nats_cluster)
    conns: list[NATS] = []
    try:
        js = nc.jetstream()
        await fresh_monitor_streams(js, FLOOD_RISK, REPLICAS)
        killed = await stream_leader(nats_cluster, MONITOR_STREAM)
        # A plain subscriber on a node that stays up: core NATS keeps nothing for the
        # subscribers of a dead node, so one there would miss what a reconnect cannot bring back.
        heard: Counter[str] = Counter()

        async def hear(msg: Msg) -> None:
            heard[UserSignal.from_json(msg.data).signal_id] += 1

        listener = await connect(nats_cluster, nats_cluster.urls[(killed + 1) % 3])
        conns.append(listener)
        await listener.subscribe(SIGNAL_SUBJECTS, cb=hear)
        await listener.flush()
        conns += [await connect(nats_cluster) for _ in range(count)]
        async with monitors(conns[1:]) as running:
            await flood_with_a_node_down(nats_cluster, js, events, killed)
            await processed(js, FLOOD)
        assert sum(m.stats.dead_letters for m in running) == 0
        assert await message_count(js, DEAD_LETTER_STREAM) == 0

        in_stream = [event_from_json(data) for data in await stored(js, MONITOR_STREAM, ">")]
        assert sorted(ev.event_id for ev in in_stream) == sorted(ev.event_id for ev in events)
        expected_ids, expected_states = one_monitor(in_stream, FLOOD_RISK)
        assert len(expected_ids) == 2 * FLOOD_TASKS  # an escalation and a halt per task

        signals = await stored(js, SIGNAL_STREAM, "user.signal.>")
        found = Counter(UserSignal.from_json(data).signal_id for data in signals)
        assert found == Counter(expected_ids), "a signal was lost or stored twice"
        deadline = time.monotonic() + 10
        while heard != Counter(expected_ids) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert heard == Counter(expected_ids), "a plain subscriber missed or repeated a signal"
        assert await stored_states(js) == {t: comparable(s) for t, s in expected_states.items()}
    finally:
        for conn in [nc, *conns]:
            await conn.close()
