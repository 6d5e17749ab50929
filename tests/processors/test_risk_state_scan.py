"""The monitor's full state read (``StateStore.scan``) returns every stored key, every time.

A monitor reads the whole bucket when it starts and when it takes over from another (ADR 0005).
On a 3-replica bucket, nats-py's "end of stored keys" marker sometimes came before the first
key; the scan then waited for a second marker that never came and failed after 10 s, so a
takeover on a cluster stalled. Repeated scans of a 300-key bucket show it.
"""

from __future__ import annotations

import nats
import pytest

from semspec.processors.risk_monitor.state import TaskState
from semspec.processors.risk_monitor.store import StateStore, task_key
from semspec.vocabulary.streams import ensure_bucket
from tests.support.nats_cluster import NatsCluster

KEYS = 300
SCANS = 25


@pytest.mark.cluster
async def test_every_scan_of_a_replicated_bucket_reads_every_state(
    nats_cluster: NatsCluster,
) -> None:
    nc = await nats.connect(**nats_cluster.options())
    try:
        js = nc.jetstream()
        kv = await ensure_bucket(js, "SCAN_TEST", replicas=3)
        writer = StateStore(kv)
        for n in range(KEYS):
            await writer.save_task(TaskState(f"t{n:03d}", active=n % 2 == 0))
        await writer.save_task(TaskState("t000", active=False))  # a key written twice
        await kv.delete(task_key("t001"))  # a delete marker is a message too, and no state
        for _ in range(SCANS):
            snapshot = await StateStore(kv).scan()
            found = sorted(s.task_id for s in snapshot.states)
            assert found == [f"t{n:03d}" for n in range(KEYS) if n != 1]
            assert not next(s for s in snapshot.states if s.task_id == "t000").active
        await js.delete_key_value("SCAN_TEST")
    finally:
        await nc.close()
