"""A ``semspec monitor`` started while the cluster has no JetStream quorum waits for it.

Right after a node dies, a cluster elects new leaders; a monitor started meanwhile (by
`semspec up`, or by hand) used to exit with a traceback on its first JetStream request. Here two
of the three nodes are down, so JetStream cannot answer at all until they return.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest

from tests.support.nats_cluster import NatsCluster
from tests.support.running_monitor import monitor_process, wait_ready

NO_QUORUM_S = 8.0
"""Longer than one JetStream request's timeout, so the old monitor had failed by then."""


@pytest.mark.cluster
async def test_a_monitor_started_without_quorum_waits_and_then_serves(
    nats_cluster: NatsCluster, tmp_path: Path
) -> None:
    env = {
        "SEMSPEC_SERVICES__NATS__USER": nats_cluster.user,
        "SEMSPEC_SERVICES__NATS__PASSWORD": nats_cluster.password,
    }
    nats_cluster.kill(1)
    nats_cluster.kill(2)
    # Temporal is never asked: no event arrives (its client connects on first use).
    proc = monitor_process(tmp_path, ",".join(nats_cluster.urls), "127.0.0.1:1", env)
    try:
        waited_until = time.monotonic() + NO_QUORUM_S
        while time.monotonic() < waited_until:
            assert proc.poll() is None, (tmp_path / "monitor.log").read_text()
            await asyncio.sleep(0.2)
        assert "JetStream does not answer yet" in (tmp_path / "monitor.log").read_text()
        nats_cluster.restart(1, wait=False)
        nats_cluster.restart(2)
        await wait_ready(tmp_path, proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        for i in (1, 2):
            if not nats_cluster.nodes[i].running:
                nats_cluster.restart(i)
