"""The 3-node NATS cluster fixture: it forms, holds a stream with 3 replicas, stays writable with
one node killed, and takes the node back when it restarts."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid

import nats
import pytest
from nats.errors import NoRespondersError, TimeoutError
from nats.js.api import StreamConfig
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, NoStreamResponseError

from tests.support.nats_cluster import NatsCluster

pytestmark = pytest.mark.cluster


async def _publish_within(js: JetStreamContext, subject: str, data: bytes, bound_s: float) -> int:
    """Publish, retrying (bounded) while the stream elects a new leader; the sequence stored."""
    deadline = time.monotonic() + bound_s
    while True:
        try:
            return (await js.publish(subject, data, timeout=1)).seq
        except (TimeoutError, NoRespondersError, NoStreamResponseError, APIError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def _replicas_current(js: JetStreamContext, stream: str, bound_s: float) -> bool:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        info = await js.stream_info(stream)
        peers = info.cluster.replicas if info.cluster else None
        leader = info.cluster.leader if info.cluster else None
        if leader and peers and len(peers) == 2 and all(p.current and not p.offline for p in peers):
            return True
        await asyncio.sleep(0.2)
    return False


def test_the_cluster_forms_with_one_jetstream_meta_leader(nats_cluster: NatsCluster) -> None:
    assert len(nats_cluster.urls) == 3
    assert nats_cluster.formed()
    assert nats_cluster.leader() in {node.name for node in nats_cluster.nodes}


def test_every_node_asks_clients_for_credentials(nats_cluster: NatsCluster) -> None:
    for node in nats_cluster.nodes:
        with socket.create_connection(("127.0.0.1", node.client_port), timeout=5) as sock:
            info = sock.makefile("rb").readline()
        assert info.startswith(b"INFO ")
        assert json.loads(info[5:])["auth_required"] is True


async def test_a_replicated_stream_stays_writable_with_its_leader_killed_and_takes_it_back(
    nats_cluster: NatsCluster,
) -> None:
    name = f"SMOKE_{uuid.uuid4().hex[:8]}"
    nc = await nats.connect(**nats_cluster.options(), reconnect_time_wait=0.2)
    try:
        js = nc.jetstream()
        info = await js.add_stream(StreamConfig(name=name, subjects=[f"{name}.>"], num_replicas=3))
        assert info.config.num_replicas == 3
        assert await _replicas_current(js, name, 15)
        assert await _publish_within(js, f"{name}.a", b"1", 5) == 1

        leader = (await js.stream_info(name)).cluster
        assert leader is not None and leader.leader is not None
        killed = next(i for i, n in enumerate(nats_cluster.nodes) if n.name == leader.leader)
        nats_cluster.kill(killed)
        try:
            assert await _publish_within(js, f"{name}.b", b"2", 15) == 2
            after = await js.stream_info(name)
            assert after.state.messages == 2
            assert after.cluster is not None and after.cluster.leader != leader.leader
        finally:
            nats_cluster.restart(killed)
        assert await _replicas_current(js, name, 20)
        assert await _publish_within(js, f"{name}.c", b"3", 5) == 3
        await js.delete_stream(name)
    finally:
        await nc.close()
