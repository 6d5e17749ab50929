"""Network delay between the active monitor and NATS (issue 26's fault list, ADR 0005).

Each monitor reaches NATS through a proxy of its own (``tests/support/delay_proxy.py``). A
trial slows the active monitor's link, both ways, for ``HOLD_S`` by a delay below the lease's
validity, between validity and TTL, or above the TTL: its renewals reach the server late or
after the key is gone, and their answers come back late. Then the delay ends and two tasks'
``files`` events on one file are published; as in ``test_monitor_lease_faults.py``, exactly
one monitor must consume within the ADR's bound, each halt reaching a plain subscriber once.
Timings are the fault tests' (TTL 2 s).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import nats
import pytest
from temporalio.client import Client

from semspec.vocabulary.subjects import SIGNAL_SUBJECTS
from tests.processors.test_monitor_leader import reset
from tests.processors.test_monitor_lease_faults import (
    PAUSES,
    Heard,
    Monitors,
    active_process,
    settled,
    trial,
)
from tests.support.delay_proxy import DelayProxy
from tests.support.servers import NatsServer

HOLD_S = 3.0
"""How long the link stays slow: longer than the TTL, so every delay outlasts a renewal."""


CASES = [
    ("below-validity", 2),
    ("between-validity-and-ttl", 1),
    ("between-validity-and-ttl", 2),
    ("above-ttl", 2),
]
"""The delay (``PAUSES``' lengths) and how many monitors run: a lone monitor must take its
lease back by itself; with two, the standby takes it."""


@pytest.mark.parametrize(("delay", "count"), CASES)
async def test_after_a_slow_link_exactly_one_monitor_consumes_within_the_bound(
    nats_server: NatsServer, temporal_client: Client, tmp_path: Path, delay: str, count: int
) -> None:
    target = urlsplit(nats_server.url)
    assert target.hostname is not None and target.port is not None
    nc = await nats.connect(nats_server.url)
    address = temporal_client.service_client.config.target_host
    monitors = Monitors(nats_server.url, address, tmp_path)
    proxies: dict[int, DelayProxy] = {}
    heard = Heard()
    try:
        await reset(nc, 1)
        await nc.subscribe(SIGNAL_SUBJECTS, cb=heard.on_msg)
        for _ in range(count):
            proxy = DelayProxy(target.hostname, target.port)
            monitors.nats_url = await proxy.start()
            await monitors.add()
            proxies[monitors.procs[-1].pid] = proxy
        await settled(nc, monitors)
        victim = await active_process(nc, monitors)
        proxies[victim.pid].delay_s = PAUSES[delay]
        await asyncio.sleep(HOLD_S)
        proxies[victim.pid].delay_s = 0.0
        failure = await trial(nc, monitors, heard, "none", f"delay-{delay}-{count}")
    finally:
        monitors.stop()
        for proxy in proxies.values():
            await proxy.close()
        await nc.close()
    assert failure is None, failure
