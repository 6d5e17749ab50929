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
from collections import Counter
from pathlib import Path
from typing import Any

import nats
import pytest

from semspec.vocabulary.events import MonitorEvent
from semspec.vocabulary.subjects import MONITOR_STREAM
from tests.support.mdurl_project import (
    FORMAT_PY,
    TEST_SUITE,
    original,
    package_sources,
    pytest_gate,
    sleep_gate,
)
from tests.support.monitor_probe import wait_until_monitor_idle
from tests.support.nats_cluster import NatsCluster
from tests.support.scenario_tasks import finished, new_id, submit
from tests.support.stack import running_stack, sample_config
from tests.support.stream_reads import task_events

pytestmark = pytest.mark.cluster

REPLICAS = 3
GATE_S = 3.0
"""A gate that only waits, so the node dies while the tasks are in their gates."""
TASK_FILES = ("mdurl/_encode.py", "mdurl/_decode.py", "mdurl/_parse.py")
"""One file per task under the kill: no two tasks touch one file (that would halt both)."""
DOWN_S = 6.0
"""How long the killed node stays down while the tasks go on."""


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
    """Each event's id without the task's workflow and run ids: iteration, kind and key."""
    return [ev.event_id.split("/", 2)[2] for ev in events]


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
        assert wanted[0].endswith("/iteration") and wanted[-1].endswith("/finished"), wanted

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
            status = finished(stack, repo, task_id, timeout_s=120)
            assert status["outcome"] == "approved", status
            assert (status["events_dropped"], status["events_pending"]) == (0, 0)
            got = event_keys(asyncio.run(task_events(node_url(nats_cluster, alive), task_id)))
            assert Counter(got) == Counter(wanted), f"{task_id}: events lost or doubled"
            assert got[-1].endswith("/finished")
        wait_until_monitor_idle(node_url(nats_cluster, alive), timeout_s=60)
