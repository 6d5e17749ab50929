"""The stack's JetStream on the configured NATS: ``semspec up`` brings semspec's streams, bucket
and consumer to ``services.nats.replicas``; ``semspec status`` reports their replicas and the
cluster's health (who leads each stream, which replicas are current, lagging or offline).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import ClusterInfo, PeerInfo, StreamInfo
from nats.js.errors import APIError

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.nats_connect import connect_nats, describe_error
from semspec.processors.risk_monitor.lease import active_holder
from semspec.services.connect import nats_options, nats_url_of
from semspec.vocabulary.streams import (
    CONSUMER,
    STATE_BUCKET,
    ensure_bucket,
    ensure_consumer,
    ensure_lease_bucket,
    ensure_streams,
)

HEALTH_CONNECT_S = 5.0
"""How long ``status`` waits for a NATS node before it reports JetStream as unknown."""

STREAM_INFO_S = 3.0
"""How long ``status`` waits for a stream's leader to answer before it reports none."""

OFFLINE_AFTER_S = 10.0
"""A replica its leader has not heard from for longer is shown offline. NATS flags a killed
node ``offline`` only minutes later, but a live follower answers the leader's heartbeat every
second, and NATS itself stops counting a replica current after 10 s of silence (its raft
lost-quorum interval): past that, the node is gone rather than slow."""


@dataclass(frozen=True)
class ReplicaHealth:
    """One follower of a stream: whether it has caught up with the leader."""

    node: str
    current: bool
    offline: bool
    """NATS says so, or the leader has not heard from it for ``OFFLINE_AFTER_S``."""
    lag: int
    """Operations it is behind the leader."""
    silent_s: float = 0.0
    """Seconds since the leader last heard from it."""


@dataclass(frozen=True)
class StreamHealth:
    """One stream (a KV bucket is the stream ``KV_<bucket>``) and its replicas."""

    name: str
    replicas: int | None
    """Replicas the stream is configured with (unknown while it has no leader)."""
    leader: str | None
    followers: list[ReplicaHealth]
    messages: int | None

    @property
    def healthy(self) -> bool:
        """A leader, and every follower current and online."""
        return self.leader is not None and all(r.current and not r.offline for r in self.followers)


@dataclass(frozen=True)
class JetStreamHealth:
    """What ``status`` shows of JetStream: the configured replicas, the nodes seen and each
    stream of the stack's account."""

    replicas: int
    """``services.nats.replicas``: what ``semspec up`` sets every stream to."""
    connected_url: str
    cluster: str | None
    nodes: list[str]
    """Names of the servers seen leading or following a stream, offline ones left out."""
    offline: list[str]
    """Names of the servers that follow a stream but are offline for every stream."""
    streams: list[StreamHealth] = field(default_factory=list)
    active_monitor: str | None = ""
    """Identity (``pid@host``) of the monitor holding the lease (ADR 0005); empty: none is;
    None: unknown, the lease bucket does not answer (no leader)."""
    server_version: str = ""
    """``nats-server: v<version>`` of the node ``status`` connected to; empty when unknown."""

    @property
    def healthy(self) -> bool:
        """Every stream has a leader and current, online followers."""
        return all(s.healthy for s in self.streams)

    def problems(self) -> list[str]:
        """One line per stream that is not healthy or not at the configured replicas."""
        found = []
        for s in self.streams:
            if s.leader is None:
                found.append(f"{s.name}: no leader (writes to it fail until one is elected)")
            behind = [
                f"{r.node} (offline)" if r.offline else r.node
                for r in s.followers
                if r.offline or not r.current
            ]
            if behind:
                found.append(f"{s.name}: replicas not current: {', '.join(behind)}")
            if s.replicas is not None and s.replicas != self.replicas:
                found.append(
                    f"{s.name}: {s.replicas} replica(s), configured {self.replicas};"
                    " `semspec up` sets it"
                )
        return found


async def prepare_jetstream(config: SemspecConfig, repo: Path) -> None:
    """Create semspec's streams, the monitor's buckets and consumer, or bring existing ones to
    the configured limits and ``services.nats.replicas``."""
    url = nats_url_of(config, repo)
    external = config.services.nats.url is not None
    nc = await connect_nats(url, nats_options(config, repo), "semspec-up", external=external)
    replicas = config.services.nats.replicas
    try:
        js = nc.jetstream(timeout=10)
        await ensure_streams(js, config.risk, replicas=replicas)
        await ensure_bucket(js, STATE_BUCKET, config.risk, replicas)
        await ensure_consumer(js, config.risk, CONSUMER)
        # A running monitor made it already; one that starts later would otherwise be the first
        # to bring it to a new count.
        await ensure_lease_bucket(js, config.risk.leader.lease_ttl_s, replicas)
    except (NatsError, TimeoutError) as exc:
        raise ServiceError(
            f"cannot set up semspec's streams with {replicas} replica(s): {describe_error(exc)}",
            service="nats",
            address=url,
            hint="services.nats.replicas may not exceed the cluster's JetStream nodes;"
            " see `semspec status` for the nodes seen",
        ) from None
    finally:
        await nc.close()


async def jetstream_health(config: SemspecConfig, repo: Path) -> JetStreamHealth:
    """The replicas and health of every stream in the stack's account (``NatsConnectError``
    when no NATS node accepts the connection within ``HEALTH_CONNECT_S``, ``ServiceError`` when
    JetStream does not answer)."""
    url = nats_url_of(config, repo)
    options = nats_options(config, repo)
    nc = await connect_nats(
        url,
        options,
        "semspec-status",
        first_connect_s=HEALTH_CONNECT_S,
        external=config.services.nats.url is not None,
    )
    try:
        version = _server_version(nc)
        names = await _stream_names(nc)
        js = nc.jetstream(timeout=STREAM_INFO_S)
        infos = await asyncio.gather(*(_stream_info(js, name) for name in names))
        holder = await _lease_holder(js)
        connected = nc.connected_url.geturl() if nc.connected_url else url
        now = datetime.now(UTC)
    finally:
        await nc.close()
    streams = [
        _stream_health(info, now) if info is not None else StreamHealth(name, None, None, [], None)
        for name, info in zip(names, infos, strict=True)
    ]
    found = [info for info in infos if info is not None]
    # A node is online when some stream hears from it: one just restarted may still be flagged
    # by a leader that has not yet noticed.
    online = {s.leader for s in streams if s.leader} | {
        r.node for s in streams for r in s.followers if not r.offline
    }
    offline = {r.node for s in streams for r in s.followers if r.offline} - online
    cluster = next((i.cluster.name for i in found if i.cluster and i.cluster.name), None)
    return JetStreamHealth(
        replicas=config.services.nats.replicas,
        connected_url=_without_credentials(connected),
        cluster=cluster,
        nodes=sorted(online),
        offline=sorted(offline),
        streams=streams,
        active_monitor=holder,
        server_version=version,
    )


def _server_version(nc: NATS) -> str:
    """``nats-server: v2.10.22`` for the server ``nc`` is connected to (as the binary's
    ``--version`` says it), or empty when it did not say."""
    announced = nc.connected_server_version
    try:
        number = f"{announced.major}.{announced.minor}.{announced.patch}"
    except ValueError:
        return ""
    return "" if number == "0.0.0" else f"nats-server: v{number}"


async def _lease_holder(js: JetStreamContext) -> str | None:
    """Identity of the monitor holding the lease, "" when none does, None when its bucket does
    not answer (while it elects a leader)."""
    try:
        holder = await active_holder(js)
    except NatsError:
        return None
    return holder.identity if holder is not None else ""


async def _stream_names(nc: NATS) -> list[str]:
    """Every stream of the account, from the cluster's meta layer: unlike the stream list, it
    also names streams that have no leader at the moment."""
    try:
        reply = await nc.request("$JS.API.STREAM.NAMES", b"{}", timeout=STREAM_INFO_S)
    except NatsError as exc:
        raise ServiceError(
            f"JetStream does not answer ({describe_error(exc)})",
            service="nats",
            hint="is JetStream enabled on the servers (`-js`) for this account?",
        ) from None
    body = json.loads(reply.data)
    if "error" in body:
        raise ServiceError(
            f"JetStream answered: {body['error'].get('description', body['error'])}",
            service="nats",
            hint="is JetStream enabled on the server (`-js`) for this account?",
        )
    return sorted(body.get("streams") or [])


async def _stream_info(js: JetStreamContext, name: str) -> StreamInfo | None:
    """The stream's info, or None when its leader does not answer (none elected)."""
    try:
        return await js.stream_info(name)
    except (NatsTimeoutError, APIError):
        return None


def _silent_s(peer: PeerInfo, cluster: ClusterInfo, now: datetime) -> float:
    """Seconds since the stream's leader last heard from ``peer``."""
    if peer.active or peer.current or cluster.leader_since is None:
        return (peer.active or 0) / 1e9  # NATS gives it in nanoseconds
    # A leader elected after the node died has never heard from it (NATS says 0): it has been
    # silent at least since that leader took over.
    return max(0.0, (now - cluster.leader_since).total_seconds())


def _stream_health(info: StreamInfo, now: datetime) -> StreamHealth:
    cluster = info.cluster or ClusterInfo()
    followers = []
    for peer in cluster.replicas or []:
        silent_s = _silent_s(peer, cluster, now)
        followers.append(
            ReplicaHealth(
                node=peer.name or "?",
                current=bool(peer.current),
                offline=bool(peer.offline) or silent_s > OFFLINE_AFTER_S,
                lag=peer.lag or 0,
                silent_s=round(silent_s, 1),
            )
        )
    return StreamHealth(
        name=info.config.name or "?",
        replicas=info.config.num_replicas or 1,
        leader=cluster.leader,
        followers=followers,
        messages=info.state.messages,
    )


def _without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part, for display."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else url
