"""The 3-node NATS cluster fixture: it forms, holds a stream with 3 replicas, stays writable with
one node killed, and takes the node back when it restarts. On it, ``services.nats.replicas``
reaches every stream, bucket and consumer semspec makes, and ``status`` shows their health."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from nats.errors import NoRespondersError, TimeoutError
from nats.js.api import StreamConfig
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, NoStreamResponseError, NotFoundError

from semspec.core.config import load_config
from semspec.core.config.models import RiskConfig, SemspecConfig
from semspec.core.errors import ServiceError
from semspec.services.jetstream import OFFLINE_AFTER_S, jetstream_health, prepare_jetstream
from semspec.services.specs import NatsSpec
from semspec.services.supervisor import Supervisor
from semspec.vocabulary.streams import (
    CONSUMER,
    LEASE_BUCKET,
    STATE_BUCKET,
    ensure_streams,
)
from semspec.vocabulary.subjects import (
    DEAD_LETTER_STREAM,
    MONITOR_STREAM,
    MONITOR_SUBJECTS,
    SIGNAL_STREAM,
)
from semspec.workflow.task.publisher import EventPublisher
from tests.support.nats_cluster import NatsCluster
from tests.support.repos import make_repo
from tests.support.servers import NatsServer

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


async def _consumer_followers(
    js: JetStreamContext, stream: str, consumer: str, bound_s: float
) -> int:
    """How many followers the consumer has once it has as many as its stream (bounded)."""
    want = (await js.stream_info(stream)).config.num_replicas or 1
    deadline = time.monotonic() + bound_s
    while True:
        info = await js.consumer_info(stream, consumer)
        found = len(info.cluster.replicas or []) if info.cluster else 0
        if found == want - 1 or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.2)


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


def _cluster_repo(
    path: Path, cluster: NatsCluster, replicas: int, temporal: dict[str, Any] | None = None
) -> Path:
    """A repository whose config points at the cluster with its credentials (and at no Temporal
    unless ``temporal`` says otherwise)."""
    make_repo(path, {"README.md": "# sample\n"})
    nats = {
        "url": cluster.urls,
        "user": cluster.user,
        "password": cluster.password,
        "replicas": replicas,
    }
    services = {"nats": nats, "temporal": temporal or {"address": "127.0.0.1:9"}}
    (path / ".semspec").mkdir()
    config = {"project": {"name": "sample"}, "services": services}
    (path / ".semspec" / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


SEMSPEC_STREAMS = (
    MONITOR_STREAM,
    SIGNAL_STREAM,
    DEAD_LETTER_STREAM,
    f"KV_{STATE_BUCKET}",
    f"KV_{LEASE_BUCKET}",
)


def _env() -> dict[str, str]:
    """What a CLI subprocess gets: a path, a home, JSON logs and a wide terminal."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/")}
    return env | {"SEMSPEC_LOG_FORMAT": "json", "COLUMNS": "200"}


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=180)


async def _clean(js: JetStreamContext) -> None:
    for stream in SEMSPEC_STREAMS:
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(stream)


async def test_up_brings_every_stream_bucket_and_consumer_to_the_configured_replicas(
    nats_cluster: NatsCluster, tmp_path: Path
) -> None:
    repo = _cluster_repo(tmp_path / "repo", nats_cluster, replicas=3)
    config = load_config(repo, environ={})
    nc = await nats.connect(**nats_cluster.options())
    try:
        js = nc.jetstream(timeout=10)
        await _clean(js)
        # Made earlier with one replica, as a worker's publisher or an older semspec would.
        await ensure_streams(js, RiskConfig(), replicas=1)
        assert (await js.stream_info(MONITOR_STREAM)).config.num_replicas == 1

        await asyncio.to_thread(Supervisor(config, repo, specs=[NatsSpec()]).up)

        for stream in SEMSPEC_STREAMS:
            assert (await js.stream_info(stream)).config.num_replicas == 3, stream
        assert await _replicas_current(js, MONITOR_STREAM, 15)
        assert await _consumer_followers(js, MONITOR_STREAM, CONSUMER, 15) == 2
    finally:
        await nc.close()


async def test_the_publisher_creates_missing_streams_with_the_replicas_on_a_comma_list(
    nats_cluster: NatsCluster,
) -> None:
    nc = await nats.connect(**nats_cluster.options())
    publisher = EventPublisher(
        ",".join(nats_cluster.urls),
        {"user": nats_cluster.user, "password": nats_cluster.password},
        replicas=3,
    )
    try:
        js = nc.jetstream(timeout=10)
        await _clean(js)
        await publisher.publish(f"{MONITOR_SUBJECTS[:-1]}files", b"{}", uuid.uuid4().hex)
        for stream in (MONITOR_STREAM, SIGNAL_STREAM, DEAD_LETTER_STREAM):
            assert (await js.stream_info(stream)).config.num_replicas == 3, stream
    finally:
        await publisher.close()
        await nc.close()


async def test_status_shows_each_streams_replicas_leader_and_the_nodes_seen(
    nats_cluster: NatsCluster, tmp_path: Path
) -> None:
    repo = _cluster_repo(tmp_path / "repo", nats_cluster, replicas=3)
    await prepare_jetstream(load_config(repo, environ={}), repo)
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), "status"]
    done = await asyncio.to_thread(
        subprocess.run, [*argv, "--json"], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert done.returncode == 1, done.stderr  # temporal is not there
    nats_row = json.loads(done.stdout)[0]
    assert (nats_row["state"], nats_row["version"]) == ("up", NatsSpec().version())
    health = nats_row["jetstream"]
    names = {node.name for node in nats_cluster.nodes}
    assert health["cluster"] == nats_cluster.name
    assert set(health["nodes"]) == names
    assert health["replicas"] == 3
    streams = {s["name"]: s for s in health["streams"]}
    for stream in SEMSPEC_STREAMS:
        assert streams[stream]["replicas"] == 3
        assert streams[stream]["leader"] in names
        followers = {f["node"] for f in streams[stream]["followers"]}
        assert followers == names - {streams[stream]["leader"]}

    text = await asyncio.to_thread(
        subprocess.run, argv, capture_output=True, text=True, env=_env(), timeout=60
    )
    assert f"JetStream on cluster {nats_cluster.name}" in text.stdout
    assert "nodes seen: n0, n1, n2; replicas configured: 3" in text.stdout
    row = next(line for line in text.stdout.splitlines() if MONITOR_STREAM in line)
    assert streams[MONITOR_STREAM]["leader"] in row and " 3 " in row


async def _until_offline(config: SemspecConfig, repo: Path, node: str, bound_s: float) -> bool:
    """Whether ``status``'s health shows ``node`` offline within ``bound_s``."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        if node in (await jetstream_health(config, repo)).offline:
            return True
        await asyncio.sleep(1)
    return False


async def test_status_shows_a_killed_node_offline_once_no_leader_hears_from_it(
    nats_cluster: NatsCluster, tmp_path: Path
) -> None:
    repo = _cluster_repo(tmp_path / "repo", nats_cluster, replicas=3)
    config = load_config(repo, environ={})
    await prepare_jetstream(config, repo)
    # Not the meta leader, so that streams keep being managed while it is gone.
    killed = next(i for i, n in enumerate(nats_cluster.nodes) if n.name != nats_cluster.leader())
    name = nats_cluster.nodes[killed].name
    nats_cluster.kill(killed)
    try:
        # NATS itself would flag it offline only after minutes.
        assert await _until_offline(config, repo, name, OFFLINE_AFTER_S + 30)
        done = await asyncio.to_thread(_cli, repo, "status", "--json")
        text = await asyncio.to_thread(_cli, repo, "status")
    finally:
        nats_cluster.restart(killed)
    health = json.loads(done.stdout)[0]["jetstream"]
    assert health["offline"] == [name]
    assert name not in health["nodes"]
    followers = [f for s in health["streams"] for f in s["followers"] if f["node"] == name]
    assert followers and all(f["offline"] and f["silent_s"] > OFFLINE_AFTER_S for f in followers)
    seen = next(line for line in text.stdout.splitlines() if "nodes seen:" in line)
    assert name not in seen.partition("nodes seen:")[2].partition(";")[0]
    row = next(line for line in text.stdout.splitlines() if MONITOR_STREAM in line)
    assert f"{name} (offline, last heard" in row


def test_status_with_a_wrong_password_says_nats_refused_and_why(
    nats_cluster: NatsCluster, tmp_path: Path
) -> None:
    repo = _cluster_repo(tmp_path / "repo", nats_cluster, replicas=3)
    config = yaml.safe_load((repo / ".semspec" / "config.yaml").read_text(encoding="utf-8"))
    config["services"]["nats"]["password"] = "not-the-password"
    (repo / ".semspec" / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = _cli(repo, "status")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    # Piped, the table is plain rows with columns apart by spaces (no box drawing).
    cells = [line.split() for line in lines]
    assert next(row[1] for row in cells if row[:1] == ["nats"]) == "refused", done.stdout
    why = [line for line in lines if line.startswith("nats refused: ")]
    assert len(why) == 1 and "Authorization Violation" in why[0], done.stdout
    assert not any(line.startswith("JetStream") for line in lines)
    failing = next(line for line in lines if line.startswith("not healthy: "))
    assert "nats refused" in failing


async def test_on_a_single_server_streams_have_one_replica_by_default(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    make_repo(tmp_path / "repo", {"README.md": "# sample\n"})
    config = SemspecConfig.model_validate({"services": {"nats": {"url": nats_server.url}}})
    await prepare_jetstream(config, tmp_path / "repo")
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        for stream in SEMSPEC_STREAMS:
            assert (await js.stream_info(stream)).config.num_replicas == 1, stream
    finally:
        await nc.close()


def test_up_with_more_replicas_than_nodes_fails_with_one_error_naming_the_count(
    nats_cluster: NatsCluster, tmp_path: Path
) -> None:
    repo = _cluster_repo(tmp_path / "repo", nats_cluster, replicas=5)
    supervisor = Supervisor(load_config(repo, environ={}), repo, specs=[NatsSpec()])
    with pytest.raises(ServiceError) as caught:
        supervisor.up()
    assert "with 5 replica(s)" in caught.value.message
    assert caught.value.hint is not None and "may not exceed" in caught.value.hint


def test_up_runs_the_worker_and_the_monitor_on_the_cluster_and_status_says_all_is_well(
    nats_cluster: NatsCluster, tmp_path: Path
) -> None:
    temporal = {"port": 0, "ui_port": 0}
    repo = _cluster_repo(tmp_path / "repo", nats_cluster, replicas=3, temporal=temporal)
    try:
        up = _cli(repo, "up", "--json")
        assert up.returncode == 0, up.stderr
        states = [(s["name"], s["state"]) for s in json.loads(up.stdout)]
        assert states == [
            ("nats", "external"),
            ("temporal", "started"),
            ("graph", "started"),
            ("worker", "started"),
            ("monitor", "started"),
            ("console", "started"),
        ]
        status = _cli(repo, "status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        nats_row = json.loads(status.stdout)[0]
        assert nats_row["address"] == ",".join(nats_cluster.urls)
        streams = {s["name"]: s for s in nats_row["jetstream"]["streams"]}
        assert set(streams) >= set(SEMSPEC_STREAMS)
        assert all(s["leader"] and s["replicas"] == 3 for s in streams.values()), streams
    finally:
        _cli(repo, "down")
