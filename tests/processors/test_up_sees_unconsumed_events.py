"""``semspec up`` tells the truth ``status`` tells about the monitor (issue 26): a monitor process
that runs but does not consume is a red line and exit 1, not a healthy stack; a monitor that
``up`` has just started is given the handover bound to catch up first.

One stack whose ``risk.leader.stall_s`` is 2 s, so that events are "not being consumed" soon.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from collections.abc import Iterator

import nats
import pytest

from semspec.processors.risk_monitor.watchdog import consumer_progress
from semspec.vocabulary.subjects import monitor_subject
from tests.support.monitor_events import loop_event
from tests.support.monitor_probe import wait_until_monitor_idle
from tests.support.stack import Stack, running_stack, sample_config

STALL_S = 2.0
STALL_LINE = "monitor: events are not being consumed: "
NOT_HEALTHY = "not healthy: loop events are not being consumed"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    config = sample_config([], risk={"leader": {"stall_s": STALL_S}})
    with running_stack(tmp_path_factory.mktemp("up-stall"), config) as running:
        yield running


def publish_iterations(stack: Stack, count: int) -> None:
    """``count`` loop events of a task no workflow runs: the monitor only records them."""
    task = f"t-{uuid.uuid4().hex[:8]}"

    async def send() -> None:
        nc = await nats.connect(stack.nats_url(), connect_timeout=5)
        try:
            js = nc.jetstream()
            for i in range(count):
                ev = loop_event("iteration", task, event_id=f"{task}-{i}", iteration=i + 1)
                await js.publish(
                    monitor_subject(ev.kind), ev.to_json(), headers={"Nats-Msg-Id": ev.event_id}
                )
        finally:
            await nc.close()

    asyncio.run(send())


def wait_for_stall(stack: Stack) -> None:
    """Wait (bounded) until the consumer's figures say the events are not being consumed."""

    async def stalled() -> bool:
        nc = await nats.connect(stack.nats_url(), connect_timeout=5)
        try:
            return (await consumer_progress(nc.jetstream())).stalled(STALL_S)
        finally:
            await nc.close()

    deadline = time.monotonic() + 30 * STALL_S
    while not asyncio.run(stalled()):
        assert time.monotonic() < deadline, "the events never waited stall_s unconsumed"
        time.sleep(0.2)


def test_up_says_in_red_that_a_paused_monitor_does_not_consume_and_exits_1(stack: Stack) -> None:
    wait_until_monitor_idle(stack.nats_url())
    monitor = stack.records()["monitor"].pid
    os.kill(monitor, signal.SIGSTOP)
    try:
        publish_iterations(stack, 3)
        wait_for_stall(stack)
        shown = stack.cli("up")
        as_json = stack.cli("up", "--json")
    finally:
        os.kill(monitor, signal.SIGCONT)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    line = next(x for x in shown.stdout.splitlines() if x.startswith(STALL_LINE))
    assert "3 events waiting" in line and f"risk.leader.stall_s: {STALL_S:g}" in line, line
    assert NOT_HEALTHY in shown.stdout
    assert as_json.returncode == 1 and NOT_HEALTHY in as_json.stderr
    rows = {row["name"]: row for row in json.loads(as_json.stdout)}
    assert rows["monitor"]["state"] == "already running" and rows["monitor"]["pid"] == monitor
    # Running again, the monitor takes the lease back and consumes: `up` is content.
    wait_until_monitor_idle(stack.nats_url())
    healed = stack.cli("up")
    assert healed.returncode == 0, healed.stdout + healed.stderr
    assert STALL_LINE not in healed.stdout


def test_up_gives_a_monitor_it_started_the_time_to_catch_up(stack: Stack) -> None:
    """Events waited while no monitor ran: the one ``up`` starts takes the lease once the
    killed monitor's key has expired and works them off, within the handover bound, so ``up``
    does not call the stack unhealthy for them."""
    wait_until_monitor_idle(stack.nats_url())
    stack.kill("monitor")
    publish_iterations(stack, 3)
    wait_for_stall(stack)
    started = stack.cli("up", "--json")
    assert started.returncode == 0, started.stderr
    assert NOT_HEALTHY not in started.stderr
    rows = {row["name"]: row for row in json.loads(started.stdout)}
    assert rows["monitor"]["state"] == "started"
